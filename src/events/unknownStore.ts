import type { Db } from '../store/database.js';

/** One unknowns row. */
export interface UnknownRow {
  id: string;
  model: string;
  centroid: Buffer;
  weight: number;
  ord: number;
  status: 'active' | 'dismissed' | 'enrolled';
  enrolled_collection_id: string | null;
  enrolled_person_id: string | null;
  first_seen_ms: number;
  last_seen_ms: number;
  created_at: string;
  updated_at: string;
}

export interface UnknownCropRow {
  id: string;
  unknown_id: string;
  path: string;
  quality: number;
  width: number;
  height: number;
  bytes: number;
  monitor_id: string;
  seen_ms: number;
}

/** What the history says about an unknown: its visits (unknown_enter events), cameras and first/last event. */
export interface UnknownActivity {
  visits: number;
  cameras: string[];
  first_ms: number | null;
  last_ms: number | null;
}

export const toBlob = (v: Float32Array) => Buffer.from(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
export const fromBlob = (b: Buffer) =>
  new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer);

/** SQL of the unknown visitors (no rules here): rows, crops, aliases, and their events in the local history. */
export class UnknownStore {
  constructor(readonly db: Db) {}

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  insert(r: UnknownRow): void {
    this.db
      .prepare(
        `INSERT INTO unknowns (id, model, centroid, weight, ord, status, enrolled_collection_id, enrolled_person_id,
        first_seen_ms, last_seen_ms, created_at, updated_at) VALUES (@id, @model, @centroid, @weight, @ord, @status,
        @enrolled_collection_id, @enrolled_person_id, @first_seen_ms, @last_seen_ms, @created_at, @updated_at)`,
      )
      .run(r);
  }

  get(id: string): UnknownRow | null {
    return (this.db.prepare('SELECT * FROM unknowns WHERE id = ?').get(id) as UnknownRow | undefined) ?? null;
  }

  /** The unknown an id names now: itself, or the one it was merged into. */
  resolve(id: string): string | null {
    if (this.get(id)) return id;
    const a = this.db.prepare('SELECT unknown_id FROM unknown_aliases WHERE id = ?').get(id) as
      { unknown_id: string } | undefined;
    return a?.unknown_id ?? null;
  }

  ofModel(model: string): UnknownRow[] {
    return this.db.prepare('SELECT * FROM unknowns WHERE model = ?').all(model) as UnknownRow[];
  }

  maxOrd(): number {
    return (this.db.prepare('SELECT coalesce(max(ord), -1) AS n FROM unknowns').get() as { n: number }).n;
  }

  setCentroid(id: string, centroid: Float32Array, weight: number, at: string): void {
    this.db
      .prepare('UPDATE unknowns SET centroid = ?, weight = ?, updated_at = ? WHERE id = ?')
      .run(toBlob(centroid), weight, at, id);
  }

  seen(id: string, ms: number, at: string): void {
    this.db
      .prepare(
        'UPDATE unknowns SET last_seen_ms = max(last_seen_ms, ?), first_seen_ms = min(first_seen_ms, ?), updated_at = ? WHERE id = ?',
      )
      .run(ms, ms, at, id);
  }

  setStatus(
    id: string,
    status: UnknownRow['status'],
    at: string,
    enrolled: { collection_id: string; person_id: string } | null = null,
  ): void {
    this.db
      .prepare(
        `UPDATE unknowns SET status = ?, enrolled_collection_id = coalesce(?, enrolled_collection_id),
        enrolled_person_id = coalesce(?, enrolled_person_id), updated_at = ? WHERE id = ?`,
      )
      .run(status, enrolled?.collection_id ?? null, enrolled?.person_id ?? null, at, id);
  }

  /** Newest seen first, after the (last_seen_ms, id) position `after`. */
  list(
    statuses: UnknownRow['status'][],
    after: { ms: number; id: string } | null,
    limit: number,
    monitorId: string | null,
  ): UnknownRow[] {
    const params: unknown[] = [...statuses];
    let where = `status IN (${statuses.map(() => '?').join(', ')})`;
    if (after) {
      where += ' AND (last_seen_ms < ? OR (last_seen_ms = ? AND id > ?))';
      params.push(after.ms, after.ms, after.id);
    }
    if (monitorId !== null) {
      where += ' AND EXISTS (SELECT 1 FROM events e WHERE e.unknown_id = unknowns.id AND e.monitor_id = ?)';
      params.push(monitorId);
    }
    return this.db
      .prepare(`SELECT * FROM unknowns WHERE ${where} ORDER BY last_seen_ms DESC, id LIMIT ?`)
      .all(...params, limit) as UnknownRow[];
  }

  /** Visits, cameras and first/last seen of each id, from the local event history. */
  activity(ids: string[]): Map<string, UnknownActivity> {
    const out = new Map<string, UnknownActivity>();
    if (!ids.length) return out;
    const rows = this.db
      .prepare(
        `SELECT unknown_id, sum(type = 'unknown_enter') AS visits, group_concat(DISTINCT monitor_id) AS cameras,
        min(occurred_ms) AS first_ms, max(occurred_ms) AS last_ms FROM events
        WHERE unknown_id IN (${ids.map(() => '?').join(', ')}) GROUP BY unknown_id`,
      )
      .all(...ids) as {
      unknown_id: string;
      visits: number;
      cameras: string | null;
      first_ms: number | null;
      last_ms: number | null;
    }[];
    for (const r of rows)
      out.set(r.unknown_id, {
        visits: r.visits,
        cameras: r.cameras ? r.cameras.split(',').sort() : [],
        first_ms: r.first_ms,
        last_ms: r.last_ms,
      });
    return out;
  }

  /** The collection of its newest event (what its monitor identified against). */
  lastCollection(id: string): string | null {
    return (
      (
        this.db
          .prepare(
            'SELECT collection_id FROM events WHERE unknown_id = ? AND collection_id IS NOT NULL ORDER BY seq DESC LIMIT 1',
          )
          .get(id) as { collection_id: string } | undefined
      )?.collection_id ?? null
    );
  }

  aliasesOf(id: string): string[] {
    return (
      this.db.prepare('SELECT id FROM unknown_aliases WHERE unknown_id = ? ORDER BY id').all(id) as { id: string }[]
    ).map((r) => r.id);
  }

  // ---- crops ----

  crops(unknownId: string): UnknownCropRow[] {
    return this.db
      .prepare('SELECT * FROM unknown_crops WHERE unknown_id = ? ORDER BY quality DESC, seen_ms DESC')
      .all(unknownId) as UnknownCropRow[];
  }

  crop(unknownId: string, cropId: string): UnknownCropRow | null {
    return (
      (this.db.prepare('SELECT * FROM unknown_crops WHERE unknown_id = ? AND id = ?').get(unknownId, cropId) as
        UnknownCropRow | undefined) ?? null
    );
  }

  addCrop(c: UnknownCropRow): void {
    this.db
      .prepare(
        `INSERT INTO unknown_crops (id, unknown_id, path, quality, width, height, bytes, monitor_id, seen_ms)
        VALUES (@id, @unknown_id, @path, @quality, @width, @height, @bytes, @monitor_id, @seen_ms)`,
      )
      .run(c);
  }

  /** Removes the crops of `unknownId` past its best `keep`; returns their file paths. */
  trimCrops(unknownId: string, keep: number): string[] {
    const extra = this.crops(unknownId).slice(keep);
    const del = this.db.prepare('DELETE FROM unknown_crops WHERE id = ?');
    for (const c of extra) del.run(c.id);
    return extra.map((c) => c.path);
  }

  allCropPaths(): Set<string> {
    return new Set((this.db.prepare('SELECT path FROM unknown_crops').all() as { path: string }[]).map((r) => r.path));
  }

  // ---- merges and deletes ----

  /**
   * `from` joins `into`: its events, crops and aliases move, it becomes an alias of `into`, and its row goes.
   * Returns the number of local events relabelled.
   */
  merge(into: string, from: string, at: string): number {
    const moved = this.db.prepare('UPDATE events SET unknown_id = ? WHERE unknown_id = ?').run(into, from).changes;
    this.db.prepare('UPDATE unknown_crops SET unknown_id = ? WHERE unknown_id = ?').run(into, from);
    this.db.prepare('UPDATE unknown_aliases SET unknown_id = ? WHERE unknown_id = ?').run(into, from);
    this.db.prepare('INSERT OR REPLACE INTO unknown_aliases (id, unknown_id) VALUES (?, ?)').run(from, into);
    const f = this.get(from);
    if (f) {
      this.seen(into, f.first_seen_ms, at);
      this.seen(into, f.last_seen_ms, at);
    }
    this.db.prepare('DELETE FROM unknowns WHERE id = ?').run(from);
    return moved;
  }

  /** Deletes the row (its crops and aliases cascade); returns the crop file paths. */
  delete(id: string): string[] {
    const paths = this.crops(id).map((c) => c.path);
    this.db.prepare('DELETE FROM unknowns WHERE id = ?').run(id);
    return paths;
  }

  /** Unknowns last seen before `beforeMs` that have no event left in the history (retention, deletes). */
  withoutEvents(beforeMs: number): string[] {
    return (
      this.db
        .prepare(
          'SELECT id FROM unknowns u WHERE last_seen_ms < ? AND NOT EXISTS (SELECT 1 FROM events e WHERE e.unknown_id = u.id)',
        )
        .all(beforeMs) as { id: string }[]
    ).map((r) => r.id);
  }
}
