import type pg from 'pg';
import type { Logger } from 'pino';
import type { FleetMonitorT, MonitorT } from '../contract/monitors.js';
import { isConnectionError, withTransaction } from '../store/postgres.js';

/** A monitor as the fleet directory shows it (no source URL). */
export function directoryEntry(m: MonitorT, reportedAt: string): FleetMonitorT {
  return {
    box_id: m.box_id,
    id: m.id,
    name: m.name,
    enabled: m.enabled,
    collection_id: m.collection_id,
    inference_fps: m.inference_fps,
    preview_enabled: m.preview_enabled,
    runtime: { status: m.runtime.status, connected: m.runtime.connected, last_frame_at: m.runtime.last_frame_at },
    created_at: m.created_at,
    updated_at: m.updated_at,
    reported_at: reportedAt,
  };
}

interface Row {
  box_id: string;
  id: string;
  name: string;
  enabled: boolean;
  collection_id: string;
  inference_fps: number;
  preview_enabled: boolean;
  status: string;
  connected: boolean;
  last_frame_at: string | null;
  created_at: string;
  updated_at: string;
  reported_at: string;
}

/**
 * Fleet mode: this box publishes its own monitors (and their runtime status) into PostgreSQL's
 * fleet_monitors, on every change and every interval, replacing its previous rows in one transaction;
 * any box lists the whole fleet's. Monitors themselves stay in each box's SQLite file. While the
 * database is unreachable publishing is retried at the next interval.
 */
export class FleetMonitorDirectory {
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private queued = false;
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    readonly boxId: string,
    private readonly source: () => MonitorT[],
    private readonly o: { intervalMs: number },
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.changed(), this.o.intervalMs);
    this.timer.unref();
    this.changed();
  }

  /** Queues one publish (coalesced with one already queued). */
  changed(): void {
    if (this.closed || this.queued) return;
    this.queued = true;
    this.chain = this.chain.then(async () => {
      this.queued = false;
      try {
        await this.publish();
      } catch (e) {
        if (!isConnectionError(e) && (e as { code?: string }).code !== 'store_unavailable')
          this.log.warn({ err: e }, 'fleet: publishing the monitor directory failed; retried');
      }
    });
  }

  /** Replaces this box's rows with its monitors as they are now. */
  async publish(): Promise<void> {
    const at = new Date().toISOString();
    // Only this box's own monitors (a cloned data dir's other_box rows are not this box's to publish).
    const entries = this.source()
      .filter((m) => m.box_id === this.boxId)
      .map((m) => directoryEntry(m, at));
    await withTransaction(this.pool, async (c) => {
      await c.query('DELETE FROM fleet_monitors WHERE box_id = $1 AND NOT (id = ANY($2))', [
        this.boxId,
        entries.map((e) => e.id),
      ]);
      for (const e of entries) {
        await c.query(
          `INSERT INTO fleet_monitors (box_id, id, name, enabled, collection_id, inference_fps, preview_enabled, status, connected, last_frame_at, created_at, updated_at, reported_at)
          VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
          ON CONFLICT (box_id, id) DO UPDATE SET name = excluded.name, enabled = excluded.enabled, collection_id = excluded.collection_id, inference_fps = excluded.inference_fps,
            preview_enabled = excluded.preview_enabled, status = excluded.status, connected = excluded.connected, last_frame_at = excluded.last_frame_at,
            created_at = excluded.created_at, updated_at = excluded.updated_at, reported_at = excluded.reported_at`,
          [
            e.box_id,
            e.id,
            e.name,
            e.enabled,
            e.collection_id,
            e.inference_fps,
            e.preview_enabled,
            e.runtime.status,
            e.runtime.connected,
            e.runtime.last_frame_at,
            e.created_at,
            e.updated_at,
            e.reported_at,
          ],
        );
      }
    });
  }

  /** Every box's monitors (or one box's), by box then id. Throws on an unreachable database (the caller falls back). */
  async list(boxId?: string): Promise<FleetMonitorT[]> {
    const r = await this.pool.query<Row>(
      `SELECT * FROM fleet_monitors ${boxId ? 'WHERE box_id = $1' : ''} ORDER BY box_id, id`,
      boxId ? [boxId] : [],
    );
    return r.rows.map((x) => ({
      box_id: x.box_id,
      id: x.id,
      name: x.name,
      enabled: x.enabled,
      collection_id: x.collection_id,
      inference_fps: x.inference_fps,
      preview_enabled: x.preview_enabled,
      runtime: { status: x.status, connected: x.connected, last_frame_at: x.last_frame_at },
      created_at: x.created_at,
      updated_at: x.updated_at,
      reported_at: x.reported_at,
    }));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.chain;
  }
}
