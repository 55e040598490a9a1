import type { Db } from '../store/database.js';

/** One history row. */
export interface StoredEvent {
  seq: number;
  id: string;
  box_id: string;
  type: string;
  monitor_id: string;
  collection_id: string | null;
  person_id: string | null;
  person_name: string | null;
  person_external_id: string | null;
  similarity: number | null;
  threshold: number | null;
  matched_face_id: string | null;
  track_id: string | null;
  stream_epoch: string;
  sequence: number;
  occurred_at: string;
  occurred_ms: number;
  face_json: string | null;
  error_json: string | null;
  /** Exits: why the track ended (ExitReason); null otherwise. */
  reason: string | null;
  /** Identity and zone events: JSON array of the zones the track's face had been in. */
  zones_json: string | null;
  /** Zone events: the zone. */
  zone: string | null;
  /** Events of an unknown track: the unknown visitor it was grouped into (issue 42). */
  unknown_id: string | null;
  /** Identity and zone events: why the face had its identity (IdentityBasis as JSON). */
  identity_json: string | null;
  snapshot: 'none' | 'pending' | 'ready' | 'failed' | 'expired';
  snapshot_path: string | null;
  snapshot_bytes: number;
  snapshot_width: number | null;
  snapshot_height: number | null;
  crop_width: number | null;
  crop_height: number | null;
  /** The event clip it belongs to (event_clips; local history only, the fleet history has none). */
  clip_id?: string | null;
  /** The clip's row, when the reader joined it (clipsOf); not a column. */
  clip?: ClipRow | null;
}
export type NewEvent = Omit<StoredEvent, 'seq'>;

/** One event clip (a file shared by the events recorded while it ran). */
export interface ClipRow {
  id: string;
  monitor_id: string;
  /** Base name under the event pictures' folder (`<day>/<clip id>`), as snapshot_path. */
  path: string;
  started_ms: number;
  status: 'recording' | 'ready' | 'failed' | 'expired';
  bytes: number;
  duration_ms: number;
  end_reason: string | null;
}

/** What a list, a range delete and the cursor scope filter on. */
export interface EventFilter {
  box_id?: string | undefined;
  monitor_id?: string | undefined;
  collection_id?: string | undefined;
  person_id?: string | undefined;
  unknown_id?: string | undefined;
  types?: string[] | undefined;
  unknown_only?: boolean | undefined;
  since_ms?: number | undefined;
  until_ms?: number | undefined;
}

/**
 * The WHERE clause of a filter, for either engine: SQLite (`?` placeholders) or PostgreSQL (`$n` from
 * `start`, the types as one array parameter). One set of rules for the local and the fleet history.
 * Pure, so it is unit-tested.
 */
export function filterSql(
  f: EventFilter,
  engine: 'sqlite' | 'postgres' = 'sqlite',
  start = 1,
): { where: string; params: (string | number | string[])[] } {
  const pg = engine === 'postgres';
  const parts: string[] = [],
    params: (string | number | string[])[] = [];
  const p = (v: string | number | string[]) => {
    params.push(v);
    return pg ? `$${start + params.length - 1}` : '?';
  };
  if (f.box_id !== undefined) parts.push(`box_id = ${p(f.box_id)}`);
  if (f.monitor_id !== undefined) parts.push(`monitor_id = ${p(f.monitor_id)}`);
  if (f.collection_id !== undefined) parts.push(`collection_id = ${p(f.collection_id)}`);
  if (f.person_id !== undefined) parts.push(`person_id = ${p(f.person_id)}`);
  if (f.unknown_id !== undefined) parts.push(`unknown_id = ${p(f.unknown_id)}`);
  const types = f.unknown_only
    ? f.types?.length
      ? f.types.filter((t) => t.startsWith('unknown_'))
      : ['unknown_enter', 'unknown_exit']
    : f.types;
  if (types !== undefined && (types.length > 0 || f.unknown_only)) {
    if (!types.length) parts.push(pg ? 'false' : '0');
    else parts.push(pg ? `type = ANY(${p(types)})` : `type IN (${types.map((t) => p(t)).join(', ')})`);
  }
  if (f.since_ms !== undefined) parts.push(`occurred_ms >= ${p(f.since_ms)}`);
  if (f.until_ms !== undefined) parts.push(`occurred_ms < ${p(f.until_ms)}`);
  return { where: parts.length ? parts.join(' AND ') : pg ? 'true' : '1', params };
}

export const COLUMNS = [
  'id',
  'box_id',
  'type',
  'monitor_id',
  'collection_id',
  'person_id',
  'person_name',
  'person_external_id',
  'similarity',
  'threshold',
  'matched_face_id',
  'track_id',
  'stream_epoch',
  'sequence',
  'occurred_at',
  'occurred_ms',
  'face_json',
  'error_json',
  'reason',
  'zones_json',
  'zone',
  'unknown_id',
  'identity_json',
  'snapshot',
  'snapshot_path',
  'snapshot_bytes',
  'snapshot_width',
  'snapshot_height',
  'crop_width',
  'crop_height',
] as const;

/** An event whose picture or clip the bytes retention may expire. */
interface ExpiryRow {
  seq: number;
  snapshot: string;
  snapshot_path: string | null;
  snapshot_bytes: number;
  clip_id: string | null;
  clip_path: string | null;
  clip_bytes: number | null;
}

/** SQL of the event history (no rules here). */
export class HistoryStore {
  private readonly insertStmt;
  constructor(readonly db: Db) {
    // The local history also links clips (the fleet's PostgreSQL rows, written from COLUMNS, do not).
    const local = [...COLUMNS, 'clip_id'];
    this.insertStmt = db.prepare(
      `INSERT INTO events (${local.join(', ')}) VALUES (${local.map((c) => `@${c}`).join(', ')})`,
    );
  }

  /** Rows from before box identity ('' box) were recorded by this box. */
  claimUnowned(boxId: string): number {
    return this.db.prepare("UPDATE events SET box_id = ? WHERE box_id = ''").run(boxId).changes;
  }

  // ---- fleet forwarding (the local history is the durable queue of the PostgreSQL history) ----

  forwardedSeq(): number {
    return (
      (
        this.db.prepare('SELECT forwarded_seq FROM event_forward WHERE id = 1').get() as
          { forwarded_seq: number } | undefined
      )?.forwarded_seq ?? 0
    );
  }

  setForwardedSeq(seq: number): void {
    this.db
      .prepare(
        'INSERT INTO event_forward (id, forwarded_seq) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET forwarded_seq = excluded.forwarded_seq',
      )
      .run(seq);
  }

  /** Rows after `seq`, oldest first. */
  after(seq: number, limit: number): StoredEvent[] {
    return this.db.prepare('SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?').all(seq, limit) as StoredEvent[];
  }

  countFilteredAfter(f: EventFilter, seq: number): number {
    const { where, params } = filterSql(f);
    return (
      this.db.prepare(`SELECT count(*) AS n FROM events WHERE (${where}) AND seq > ?`).get(...params, seq) as {
        n: number;
      }
    ).n;
  }

  countAfter(seq: number): number {
    return (this.db.prepare('SELECT count(*) AS n FROM events WHERE seq > ?').get(seq) as { n: number }).n;
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  insert(e: NewEvent): number {
    const { clip: _clip, ...row } = e;
    return Number(this.insertStmt.run({ ...row, clip_id: row.clip_id ?? null }).lastInsertRowid);
  }

  /** True when the row still exists. */
  setSnapshot(
    id: string,
    s: Pick<
      StoredEvent,
      | 'snapshot'
      | 'snapshot_path'
      | 'snapshot_bytes'
      | 'snapshot_width'
      | 'snapshot_height'
      | 'crop_width'
      | 'crop_height'
    >,
  ): boolean {
    return (
      this.db
        .prepare(
          `UPDATE events SET snapshot = @snapshot, snapshot_path = @snapshot_path, snapshot_bytes = @snapshot_bytes, snapshot_width = @snapshot_width,
      snapshot_height = @snapshot_height, crop_width = @crop_width, crop_height = @crop_height WHERE id = @id`,
        )
        .run({ ...s, id }).changes > 0
    );
  }

  get(id: string): StoredEvent | null {
    return (this.db.prepare('SELECT * FROM events WHERE id = ?').get(id) as StoredEvent | undefined) ?? null;
  }

  /** Newest first, before `beforeSeq`. */
  list(f: EventFilter, beforeSeq: number | null, limit: number): StoredEvent[] {
    const { where, params } = filterSql(f);
    return this.db
      .prepare(`SELECT * FROM events WHERE ${where} AND seq < ? ORDER BY seq DESC LIMIT ?`)
      .all(...params, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit) as StoredEvent[];
  }

  /** Deletes matching rows; their snapshot files go to the trash in the same transaction. */
  deleteWhere(where: string, params: readonly unknown[]): number {
    return this.transaction(() => {
      this.db
        .prepare(
          `INSERT OR IGNORE INTO event_file_trash (path) SELECT snapshot_path FROM events WHERE (${where}) AND snapshot_path IS NOT NULL`,
        )
        .run(...params);
      return this.db.prepare(`DELETE FROM events WHERE ${where}`).run(...params).changes;
    });
  }

  deleteFiltered(f: EventFilter): number {
    const { where, params } = filterSql(f);
    return this.deleteWhere(where, params);
  }

  /** Retention by age and count: the oldest rows go. */
  deleteOlderThan(ms: number): number {
    return this.deleteWhere('occurred_ms < ?', [ms]);
  }

  deleteBeyondCount(max: number): number {
    const row = this.db.prepare('SELECT seq FROM events ORDER BY seq DESC LIMIT 1 OFFSET ?').get(max) as
      { seq: number } | undefined;
    return row ? this.deleteWhere('seq <= ?', [row.seq]) : 0;
  }

  /**
   * Retention by bytes, pictures and clips together: the oldest events lose their pictures and their clips
   * (the rows stay: snapshot = expired, the clip's status = expired) until the total fits.
   */
  expireSnapshotsBeyond(maxBytes: number): number {
    return this.transaction(() => {
      let total = this.snapshotBytes() + this.clipBytes();
      if (total <= maxBytes) return 0;
      let n = 0;
      const rows = this.db
        .prepare(
          `SELECT e.seq, e.snapshot, e.snapshot_path, e.snapshot_bytes, c.id AS clip_id, c.path AS clip_path, c.bytes AS clip_bytes
           FROM events e LEFT JOIN event_clips c ON c.id = e.clip_id AND c.status = 'ready'
           WHERE e.snapshot = 'ready' OR c.id IS NOT NULL ORDER BY e.seq`,
        )
        .iterate() as IterableIterator<ExpiryRow>;
      const victims: ExpiryRow[] = [];
      const clipsGone = new Set<string>();
      for (const r of rows) {
        if (total <= maxBytes) break;
        victims.push(r);
        if (r.snapshot === 'ready') total -= r.snapshot_bytes;
        if (r.clip_id && !clipsGone.has(r.clip_id)) {
          clipsGone.add(r.clip_id);
          total -= r.clip_bytes ?? 0;
        }
      }
      const expire = this.db.prepare(
        "UPDATE events SET snapshot = 'expired', snapshot_path = NULL, snapshot_bytes = 0 WHERE seq = ?",
      );
      const expireClip = this.db.prepare("UPDATE event_clips SET status = 'expired', bytes = 0 WHERE id = ?");
      const trash = this.db.prepare('INSERT OR IGNORE INTO event_file_trash (path) VALUES (?)');
      const trashed = new Set<string>();
      for (const v of victims) {
        if (v.snapshot === 'ready' && v.snapshot_path) {
          trash.run(v.snapshot_path);
          expire.run(v.seq);
          n++;
        }
        if (v.clip_id && v.clip_path && !trashed.has(v.clip_id)) {
          trashed.add(v.clip_id);
          trash.run(v.clip_path);
          expireClip.run(v.clip_id);
          n++;
        }
      }
      return n;
    });
  }

  snapshotBytes(): number {
    return (
      this.db.prepare("SELECT coalesce(sum(snapshot_bytes), 0) AS b FROM events WHERE snapshot = 'ready'").get() as {
        b: number;
      }
    ).b;
  }

  // ---- event clips ----

  clipBytes(): number {
    return (
      this.db.prepare("SELECT coalesce(sum(bytes), 0) AS b FROM event_clips WHERE status = 'ready'").get() as {
        b: number;
      }
    ).b;
  }

  insertClip(c: ClipRow): void {
    this.db
      .prepare(
        `INSERT INTO event_clips (id, monitor_id, path, started_ms, status, bytes, duration_ms, end_reason)
         VALUES (@id, @monitor_id, @path, @started_ms, @status, @bytes, @duration_ms, @end_reason)`,
      )
      .run(c);
  }

  /**
   * A clip ended (or was recovered). A clip that no event names by then (its events were deleted while it
   * recorded, or it was begun for an enter that was never written) goes to the trash at once.
   */
  updateClip(c: Pick<ClipRow, 'id' | 'status' | 'bytes' | 'duration_ms' | 'end_reason'>): void {
    this.transaction(() => {
      this.db
        .prepare(
          'UPDATE event_clips SET status = @status, bytes = @bytes, duration_ms = @duration_ms, end_reason = @end_reason WHERE id = @id',
        )
        .run(c);
      const used = this.db.prepare('SELECT 1 FROM events WHERE clip_id = ? LIMIT 1').get(c.id);
      if (!used) {
        this.db
          .prepare('INSERT OR IGNORE INTO event_file_trash (path) SELECT path FROM event_clips WHERE id = ?')
          .run(c.id);
        this.db.prepare('DELETE FROM event_clips WHERE id = ?').run(c.id);
      }
    });
  }

  clipRow(id: string): ClipRow | null {
    return (this.db.prepare('SELECT * FROM event_clips WHERE id = ?').get(id) as ClipRow | undefined) ?? null;
  }

  /** The rows with their clip joined (clip: null when they have none). */
  withClips<T extends StoredEvent>(rows: T[]): T[] {
    const ids = [...new Set(rows.map((r) => r.clip_id).filter((c): c is string => !!c))];
    const byId = new Map<string, ClipRow>();
    const get = this.db.prepare('SELECT * FROM event_clips WHERE id = ?');
    for (const id of ids) {
      const c = get.get(id) as ClipRow | undefined;
      if (c) byId.set(id, c);
    }
    return rows.map((r) => ({ ...r, clip: r.clip_id ? (byId.get(r.clip_id) ?? null) : null }));
  }

  /** Clips a crash left recording (their files end with the last whole fragment written). */
  recordingClips(): ClipRow[] {
    return this.db.prepare("SELECT * FROM event_clips WHERE status = 'recording'").all() as ClipRow[];
  }

  stats(): { events: number; snapshot_bytes: number; oldest_at: string | null; newest_at: string | null } {
    const r = this.db.prepare('SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi FROM events').get() as {
      n: number;
      lo: number | null;
      hi: number | null;
    };
    const at = (seq: number | null) =>
      seq === null
        ? null
        : (this.db.prepare('SELECT occurred_at FROM events WHERE seq = ?').get(seq) as { occurred_at: string })
            .occurred_at;
    return { events: r.n, snapshot_bytes: this.snapshotBytes(), oldest_at: at(r.lo), newest_at: at(r.hi) };
  }

  // ---- snapshot files ----

  trash(limit: number): string[] {
    return (this.db.prepare('SELECT path FROM event_file_trash LIMIT ?').all(limit) as { path: string }[]).map(
      (r) => r.path,
    );
  }

  untrash(paths: string[]): void {
    const del = this.db.prepare('DELETE FROM event_file_trash WHERE path = ?');
    this.transaction(() => {
      for (const p of paths) del.run(p);
    });
  }

  /** Paths the rows point at (pictures ready or pending, clips not expired), to tell orphan files from live ones. */
  liveSnapshotPaths(): Set<string> {
    return new Set(
      (
        this.db
          .prepare(
            "SELECT snapshot_path AS p FROM events WHERE snapshot_path IS NOT NULL UNION SELECT path FROM event_clips WHERE status != 'expired'",
          )
          .all() as { p: string }[]
      ).map((r) => r.p),
    );
  }

  pendingSnapshots(): StoredEvent[] {
    return this.db.prepare("SELECT * FROM events WHERE snapshot = 'pending'").all() as StoredEvent[];
  }

  // ---- counters ----

  counter(name: string): number {
    return (
      (this.db.prepare('SELECT value FROM event_counters WHERE name = ?').get(name) as { value: number } | undefined)
        ?.value ?? 0
    );
  }

  addCounter(name: string, by: number): void {
    this.db
      .prepare(
        'INSERT INTO event_counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value',
      )
      .run(name, by);
  }

  // ---- open tracks (an enter written, its exit not yet) ----

  /** Inside the flush transaction: an enter opens its track, an exit closes it. */
  trackOpened(e: Pick<StoredEvent, 'id' | 'stream_epoch' | 'track_id'>): void {
    this.db
      .prepare('INSERT OR REPLACE INTO event_open_tracks (stream_epoch, track_id, enter_id) VALUES (?, ?, ?)')
      .run(e.stream_epoch, e.track_id, e.id);
  }

  trackClosed(e: Pick<StoredEvent, 'stream_epoch' | 'track_id'>): void {
    this.db
      .prepare('DELETE FROM event_open_tracks WHERE stream_epoch = ? AND track_id = ?')
      .run(e.stream_epoch, e.track_id);
  }

  /** The enters of every open track, oldest first. */
  openEnters(): StoredEvent[] {
    return this.db
      .prepare('SELECT e.* FROM event_open_tracks o JOIN events e ON e.id = o.enter_id ORDER BY e.seq')
      .all() as StoredEvent[];
  }

  /** The highest ring sequence a monitor's stream epoch reached. */
  lastSequence(monitorId: string, epoch: string): number {
    return (
      this.db
        .prepare('SELECT coalesce(max(sequence), 0) AS n FROM events WHERE monitor_id = ? AND stream_epoch = ?')
        .get(monitorId, epoch) as { n: number }
    ).n;
  }

  /** The person of the monitor's newest person_enter (its "last person"), or null. */
  lastPerson(monitorId: string): { id: string; name: string | null; at: string } | null {
    const r = this.db
      .prepare(
        "SELECT person_id, person_name, occurred_at FROM events WHERE monitor_id = ? AND type = 'person_enter' AND person_id IS NOT NULL ORDER BY seq DESC LIMIT 1",
      )
      .get(monitorId) as { person_id: string; person_name: string | null; occurred_at: string } | undefined;
    return r ? { id: r.person_id, name: r.person_name, at: r.occurred_at } : null;
  }

  /** Every person a monitor's events name (their MQTT presence topics exist). */
  personsSeen(monitorId: string): string[] {
    return (
      this.db
        .prepare(
          "SELECT DISTINCT person_id FROM events WHERE monitor_id = ? AND person_id IS NOT NULL AND type IN ('person_enter', 'person_exit')",
        )
        .all(monitorId) as { person_id: string }[]
    ).map((r) => r.person_id);
  }

  /** Persons whose last event on a monitor is an enter (present when the previous process stopped). */
  lastPresent(): { monitor_id: string; person_id: string }[] {
    return this.db
      .prepare(
        `SELECT e.monitor_id, e.person_id FROM events e JOIN (SELECT monitor_id, person_id, max(seq) AS seq FROM events
      WHERE person_id IS NOT NULL AND type IN ('person_enter', 'person_exit') GROUP BY monitor_id, person_id) last ON last.seq = e.seq WHERE e.type = 'person_enter'`,
      )
      .all() as { monitor_id: string; person_id: string }[];
  }
}
