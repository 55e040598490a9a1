import type pg from 'pg';
import { COLUMNS, filterSql, type EventFilter, type StoredEvent } from './historyStore.js';

/** The fleet list's position: newest first by (occurred_ms, id). */
export interface FleetPosition {
  ms: number;
  id: string;
}

export const formatPosition = (p: FleetPosition) => `${p.ms}:${p.id}`;
export function parsePosition(s: string): FleetPosition | null {
  const m = /^(\d{1,16}):([0-9a-f-]{36})$/.exec(s);
  return m ? { ms: Number(m[1]), id: m[2]! } : null;
}

type PgEventRow = Omit<StoredEvent, 'seq'> & { box_seq: number };
/** The API's row shape (seq is the recording box's own sequence number). */
const toStored = (r: PgEventRow): StoredEvent => ({ ...r, seq: r.box_seq });

const PG_COLUMNS = [...COLUMNS, 'box_seq'] as const;

/**
 * The fleet's event history in PostgreSQL (SQL only, no rules): rows copied from every box's local
 * history by its forwarder, idempotently by event id; read by every box's history API.
 */
export class PgHistory {
  constructor(private readonly pool: pg.Pool) {}

  /** Copies rows (a box's local rows, oldest first); rows already there are left alone. Returns the rows inserted. */
  async insert(rows: StoredEvent[]): Promise<number> {
    if (!rows.length) return 0;
    const values: unknown[] = [];
    const tuples = rows.map((r) => {
      const base = values.length;
      for (const c of PG_COLUMNS) values.push(c === 'box_seq' ? r.seq : r[c]);
      return `(${PG_COLUMNS.map((_, i) => `$${base + i + 1}`).join(', ')})`;
    });
    const r = await this.pool.query(
      `INSERT INTO events (${PG_COLUMNS.join(', ')}) VALUES ${tuples.join(', ')} ON CONFLICT (id) DO NOTHING`,
      values,
    );
    return r.rowCount ?? 0;
  }

  /** A later picture state of a forwarded row (attached late, failed, expired by the box's byte retention). */
  async setSnapshot(
    r: Pick<
      StoredEvent,
      | 'id'
      | 'snapshot'
      | 'snapshot_path'
      | 'snapshot_bytes'
      | 'snapshot_width'
      | 'snapshot_height'
      | 'crop_width'
      | 'crop_height'
    >,
  ): Promise<void> {
    await this.pool.query(
      `UPDATE events SET snapshot = $2, snapshot_path = $3, snapshot_bytes = $4, snapshot_width = $5, snapshot_height = $6, crop_width = $7, crop_height = $8
      WHERE id = $1`,
      [
        r.id,
        r.snapshot,
        r.snapshot_path,
        r.snapshot_bytes,
        r.snapshot_width,
        r.snapshot_height,
        r.crop_width,
        r.crop_height,
      ],
    );
  }

  /** Ids of a box's rows whose picture was still pending when they were copied (at most `limit`). */
  async pendingIds(boxId: string, limit = 10_000): Promise<string[]> {
    const r = await this.pool.query<{ id: string }>(
      "SELECT id FROM events WHERE box_id = $1 AND snapshot = 'pending' LIMIT $2",
      [boxId, limit],
    );
    return r.rows.map((x) => x.id);
  }

  async get(id: string): Promise<StoredEvent | null> {
    const r = await this.pool.query<PgEventRow>('SELECT * FROM events WHERE id = $1', [id]);
    return r.rows[0] ? toStored(r.rows[0]) : null;
  }

  /** Newest first (occurred_ms, id), strictly before `before`. */
  async list(f: EventFilter, before: FleetPosition | null, limit: number): Promise<StoredEvent[]> {
    const { where, params } = filterSql(f, 'postgres');
    let cond = where;
    if (before) {
      params.push(before.ms, before.id);
      cond += ` AND (occurred_ms, id) < ($${params.length - 1}, $${params.length})`;
    }
    params.push(limit);
    const r = await this.pool.query<PgEventRow>(
      `SELECT * FROM events WHERE ${cond} ORDER BY occurred_ms DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    return r.rows.map(toStored);
  }

  async deleteOne(id: string): Promise<boolean> {
    return ((await this.pool.query('DELETE FROM events WHERE id = $1', [id])).rowCount ?? 0) > 0;
  }

  async deleteFiltered(f: EventFilter): Promise<number> {
    const { where, params } = filterSql(f, 'postgres');
    return (await this.pool.query(`DELETE FROM events WHERE ${where}`, params)).rowCount ?? 0;
  }

  async stats(): Promise<{
    events: number;
    oldest_at: string | null;
    newest_at: string | null;
    boxes: { box_id: string; events: number; newest_at: string | null }[];
  }> {
    const r = await this.pool.query<{ box_id: string; n: number; lo: number; hi: number }>(
      'SELECT box_id, count(*)::int AS n, min(occurred_ms) AS lo, max(occurred_ms) AS hi FROM events GROUP BY box_id ORDER BY box_id',
    );
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    const lo = r.rows.length ? Math.min(...r.rows.map((x) => x.lo)) : null,
      hi = r.rows.length ? Math.max(...r.rows.map((x) => x.hi)) : null;
    return {
      events: r.rows.reduce((a, x) => a + x.n, 0),
      oldest_at: iso(lo),
      newest_at: iso(hi),
      boxes: r.rows.map((x) => ({ box_id: x.box_id, events: x.n, newest_at: iso(x.hi) })),
    };
  }

  /**
   * The fleet's retention (age, then count), run by one box per interval: the box that takes the
   * advisory lock and finds the last run at least `intervalMs` old. Null when another box ran it.
   */
  async retention(
    boxId: string,
    o: { maxAgeDays: number; maxEvents: number; intervalMs: number },
    nowMs = Date.now(),
  ): Promise<{ byAge: number; byCount: number } | null> {
    const client = await this.pool.connect();
    const onError = () => undefined;
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const locked = (await client.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock(7166016) AS ok')).rows[0]!
        .ok;
      const last = locked
        ? (await client.query<{ ran_at_ms: number }>('SELECT ran_at_ms FROM event_retention WHERE id = 1')).rows[0]
            ?.ran_at_ms
        : undefined;
      if (!locked || (last !== undefined && nowMs - last < o.intervalMs * 0.9)) {
        await client.query('ROLLBACK');
        return null;
      }
      const byAge =
        o.maxAgeDays > 0
          ? ((await client.query('DELETE FROM events WHERE occurred_ms < $1', [nowMs - o.maxAgeDays * 86_400_000]))
              .rowCount ?? 0)
          : 0;
      let byCount = 0;
      if (o.maxEvents > 0) {
        const edge = (
          await client.query<{ occurred_ms: number; id: string }>(
            'SELECT occurred_ms, id FROM events ORDER BY occurred_ms DESC, id DESC OFFSET $1 LIMIT 1',
            [o.maxEvents],
          )
        ).rows[0];
        if (edge)
          byCount =
            (await client.query('DELETE FROM events WHERE (occurred_ms, id) <= ($1, $2)', [edge.occurred_ms, edge.id]))
              .rowCount ?? 0;
      }
      await client.query(
        `INSERT INTO event_retention (id, ran_at_ms, box_id, deleted) VALUES (1, $1, $2, $3)
        ON CONFLICT (id) DO UPDATE SET ran_at_ms = excluded.ran_at_ms, box_id = excluded.box_id, deleted = event_retention.deleted + excluded.deleted`,
        [nowMs, boxId, byAge + byCount],
      );
      await client.query('COMMIT');
      return { byAge, byCount };
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.removeListener('error', onError);
      client.release();
    }
  }
}
