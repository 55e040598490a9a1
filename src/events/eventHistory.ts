import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { IDENTITY_EVENT_TYPES } from '../contract/events.js';
import { SYNTHETIC_EXIT_REASON, type MonitorEventT } from '../contract/monitors.js';
import { pictureBox, type EventContext, type MonitorEventSink } from '../monitors/eventSink.js';
import type { HistoryStore, NewEvent, StoredEvent } from './historyStore.js';
import { isStorageFull, type StorageGuard } from '../store/storageGuard.js';
import type { SnapshotFiles, SnapshotStore } from './snapshotStore.js';

/**
 * What happens with recorded events besides the history (MQTT, webhooks). Called synchronously inside
 * the transaction that writes the rows, in history order, so an output's own durable queue commits
 * together with the history: what the history has, the outputs will deliver.
 */
export interface HistoryOutput {
  recorded(event: StoredEvent): void;
  /** A snapshot became ready (possibly in a later batch than its event). */
  snapshotReady?(event: StoredEvent, frameJpeg: Buffer): void;
  /** A monitor's session ended: its open tracks are gone (presence resets). In order with the events. */
  sessionEnded?(monitorId: string, epoch: string): void;
}

export interface HistoryOptions {
  flushIntervalMs: number;
  /** Whether identity events get pictures. */
  snapshots: boolean;
  retention: { maxAgeDays: number; maxEvents: number; maxSnapshotBytes: number; intervalMs: number };
  /** The box that records ([server] box_id): stamped on every event. */
  boxId: string;
  /** The data dir's full-disk guard: a batch that fails for lack of space marks it full (its reserve goes to deletes). */
  storage?: StorageGuard;
}

type Pending =
  | { kind: 'event'; row: NewEvent; queuedAt: number; snapshot: SnapshotFiles | null | 'waiting' | 'failed' }
  | { kind: 'ended'; monitorId: string; epoch: string; queuedAt: number };

/** An event waits for its snapshot at most this long before its row is written without it (it is attached later). */
const MAX_SNAPSHOT_WAIT_MS = 600;

/** A history row from a ring event. */
export function toRow(e: MonitorEventT, collectionId: string, snapshot: NewEvent['snapshot'], boxId: string): NewEvent {
  const ms = Date.parse(e.occurred_at);
  return {
    id: e.id,
    box_id: boxId,
    type: e.type,
    monitor_id: e.monitor_id,
    collection_id: collectionId,
    person_id: e.person?.id ?? null,
    person_name: e.person?.name ?? null,
    person_external_id: e.person?.external_id ?? null,
    similarity: e.similarity ?? null,
    threshold: e.threshold ?? null,
    matched_face_id: e.matched_face_id ?? null,
    track_id: e.track_id ?? null,
    stream_epoch: e.stream_epoch,
    sequence: e.sequence,
    occurred_at: e.occurred_at,
    occurred_ms: Number.isFinite(ms) ? ms : Date.now(),
    face_json: e.face ? JSON.stringify(e.face) : null,
    error_json: e.error ? JSON.stringify(e.error) : null,
    reason: e.reason ?? null,
    zones_json: e.zones ? JSON.stringify(e.zones) : null,
    zone: e.zone ?? null,
    unknown_id: e.unknown_id ?? null,
    identity_json: e.identity ? JSON.stringify(e.identity) : null,
    snapshot,
    snapshot_path: null,
    snapshot_bytes: 0,
    snapshot_width: null,
    snapshot_height: null,
    crop_width: null,
    crop_height: null,
  };
}

/**
 * The durable event history. `event()` (the monitors' sink) only queues: snapshots are encoded in
 * sharp's pool and rows are written in batches every `flush_interval_ms`, in one transaction together
 * with the outputs' queues, in the order the monitors pushed the events. A batch waits for a snapshot
 * at most 600 ms (then the row is written with snapshot "pending" and the picture attached when it is
 * done), so a crash loses at most the events of the last flush interval plus that wait (under a second
 * at the default 200 ms), and never leaves a half-written history (SQLite transactions; picture files
 * are written under a temporary name and renamed, and files without a row are removed at startup).
 */
export class EventHistory implements MonitorEventSink {
  private pending: Pending[] = [];
  private readonly attachments: { id: string; files: SnapshotFiles | null }[] = [];
  private timer: NodeJS.Timeout | null = null;
  private retentionTimer: NodeJS.Timeout | null = null;
  private trashTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private outputs: HistoryOutput[] = [];
  /** Stream epochs of this process's sessions (their open tracks are not a previous process's). */
  private readonly epochsSeen = new Set<string>();
  /** Events written by this process, and the time from `event()` to the commit (ms) of the last ones. */
  readonly counters = { written: 0, snapshotsFailed: 0, flushes: 0 };
  /** Called after each committed batch (the bench measures with it). */
  onFlush: ((rows: StoredEvent[]) => void) | null = null;

  constructor(
    private readonly store: HistoryStore,
    private readonly snapshots: SnapshotStore,
    private readonly o: HistoryOptions,
    private readonly log: Logger,
  ) {}

  addOutput(o: HistoryOutput): void {
    this.outputs.push(o);
  }

  /** Startup: attaches or fails snapshots left pending by a crash, and removes picture files without a row. */
  recover(): void {
    const claimed = this.store.claimUnowned(this.o.boxId);
    if (claimed)
      this.log.info({ events: claimed, box_id: this.o.boxId }, 'events from before box identity stamped with this box');
    const onDisk = this.snapshots.onDisk();
    for (const row of this.store.pendingSnapshots()) {
      // A pending row never got its path recorded; the files, if whole, are under the event's day.
      const path = `${row.occurred_at.slice(0, 10)}/${row.id}`;
      this.store.setSnapshot(row.id, { ...snapshotColumns(null), snapshot: 'failed' });
      onDisk.delete(path); // removed below as an orphan
      this.snapshots.remove(path);
    }
    const live = this.store.liveSnapshotPaths();
    let orphans = 0;
    for (const path of onDisk) {
      if (live.has(path)) continue;
      this.snapshots.remove(path);
      orphans++;
    }
    if (orphans)
      this.log.info({ files: orphans }, 'removed snapshot files that had no event (written just before a crash)');
    this.sweepTrash();
  }

  /**
   * Exits for the tracks a previous process left open (it died before their exit was written: SIGKILL, a
   * crash, power loss), queued before any event of this process: synthetic (reason daemon_restarted, no
   * picture), at the time of this start, in the enter's stream epoch after its last sequence. Runs once the
   * outputs are attached, so webhooks and MQTT get them too. Returns how many.
   */
  closeOpenTracks(): number {
    const enters = this.store.openEnters().filter((e) => !this.epochsSeen.has(e.stream_epoch));
    if (!enters.length) return 0;
    const now = new Date();
    const next = new Map<string, number>();
    for (const enter of enters) {
      const key = `${enter.monitor_id}\0${enter.stream_epoch}`;
      const sequence = (next.get(key) ?? this.store.lastSequence(enter.monitor_id, enter.stream_epoch)) + 1;
      next.set(key, sequence);
      const { seq: _seq, ...rest } = enter;
      const row: NewEvent = {
        ...rest,
        ...snapshotColumns(null),
        id: randomUUID(),
        type: enter.type === 'person_enter' ? 'person_exit' : 'unknown_exit',
        sequence,
        occurred_at: now.toISOString(),
        occurred_ms: now.getTime(),
        error_json: null,
        reason: SYNTHETIC_EXIT_REASON,
        box_id: this.o.boxId,
      };
      this.pending.push({ kind: 'event', row, queuedAt: performance.now(), snapshot: null });
    }
    this.log.warn(
      { tracks: enters.length, monitors: [...new Set(enters.map((e) => e.monitor_id))] },
      'closed the tracks the previous process left open (it did not stop cleanly) with synthetic exits',
    );
    this.schedule();
    return enters.length;
  }

  start(): void {
    this.closeOpenTracks();
    this.scheduleRetention(this.o.retention.intervalMs);
    // Files of rows deleted elsewhere (a person delete's trigger) go within seconds.
    this.trashTimer = setInterval(() => {
      try {
        this.sweepTrash();
      } catch (e) {
        this.log.error({ err: e }, 'removing deleted event pictures failed');
      }
    }, 2000);
    this.trashTimer.unref();
  }

  // ---- the monitors' sink ----

  event(e: MonitorEventT, ctx: EventContext): void {
    if (this.closed) return;
    this.epochsSeen.add(e.stream_epoch);
    const identity = IDENTITY_EVENT_TYPES.includes(e.type);
    const box = e.face ? pictureBox(e.face.bbox, ctx.frame) : undefined;
    const wantPicture = this.o.snapshots && identity && ctx.frame !== null && box !== undefined;
    const item: Pending & { kind: 'event' } = {
      kind: 'event',
      row: {
        ...toRow(e, ctx.collectionId, wantPicture ? 'pending' : 'none', this.o.boxId),
        clip_id: ctx.clipId ?? null,
      },
      queuedAt: performance.now(),
      snapshot: wantPicture ? 'waiting' : null,
    };
    if (wantPicture) {
      const job = this.snapshots.make(e.id, e.occurred_at, ctx.frame!, box!);
      if (!job) {
        item.snapshot = 'failed';
        item.row.snapshot = 'failed';
        this.counters.snapshotsFailed++;
      } else {
        job.then(
          (files) => this.settled(item, files),
          (err: unknown) => {
            this.log.warn({ event_id: e.id, err: (err as Error).message }, 'event snapshot failed');
            this.counters.snapshotsFailed++;
            this.settled(item, null);
          },
        );
      }
    }
    this.pending.push(item);
    this.schedule();
  }

  sessionEnded(monitorId: string, epoch: string): void {
    if (this.closed) return;
    this.pending.push({ kind: 'ended', monitorId, epoch, queuedAt: performance.now() });
    this.schedule();
  }

  private settled(item: Pending & { kind: 'event' }, files: SnapshotFiles | null): void {
    if (item.snapshot === 'waiting' && this.pending.includes(item)) {
      item.snapshot = files ?? 'failed';
      return;
    }
    // The row was written already (waited too long): attach in the next batch.
    this.attachments.push({ id: item.row.id, files });
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, this.o.flushIntervalMs);
  }

  /** Writes every event whose snapshot is done (or waited long enough), in order, with the outputs. */
  flush(force = false): void {
    const now = performance.now();
    let n = 0;
    while (n < this.pending.length) {
      const p = this.pending[n]!;
      if (!force && p.kind === 'event' && p.snapshot === 'waiting' && now - p.queuedAt < MAX_SNAPSHOT_WAIT_MS) break;
      n++;
    }
    const batch = this.pending.slice(0, n);
    const attach = this.attachments.splice(0);
    if (batch.length || attach.length) {
      const written: StoredEvent[] = [];
      try {
        this.store.transaction(() => {
          for (const p of batch) {
            if (p.kind === 'ended') {
              for (const o of this.outputs) o.sessionEnded?.(p.monitorId, p.epoch);
              continue;
            }
            const files = p.snapshot !== null && typeof p.snapshot === 'object' ? p.snapshot : null;
            const row: NewEvent = files
              ? { ...p.row, ...snapshotColumns(files) }
              : { ...p.row, snapshot: p.snapshot === 'failed' ? 'failed' : p.row.snapshot };
            const stored: StoredEvent = { ...row, seq: this.store.insert(row) };
            if (stored.clip_id) stored.clip = this.store.clipRow(stored.clip_id);
            // Identity events only: a track's zone_enter / zone_exit neither opens nor closes it.
            if (stored.track_id !== null && IDENTITY_EVENT_TYPES.includes(stored.type)) {
              if (stored.type.endsWith('_enter')) this.store.trackOpened(stored);
              else if (stored.type.endsWith('_exit')) this.store.trackClosed(stored);
            }
            written.push(stored);
            for (const o of this.outputs) o.recorded(stored);
            if (files) for (const o of this.outputs) o.snapshotReady?.(stored, files.frameJpeg);
          }
          for (const a of attach) this.attach(a.id, a.files);
        });
      } catch (e) {
        // The batch stays queued and is retried at the next flush (e.g. SQLITE_BUSY, a full disk).
        this.attachments.unshift(...attach);
        if (isStorageFull(e))
          this.o.storage?.markFull(`the event history could not be written: ${(e as { code: string }).code}`);
        this.log.error({ err: e, events: batch.length }, 'event history write failed; retrying');
        this.schedule();
        return;
      }
      this.pending.splice(0, n);
      this.counters.written += written.length;
      this.counters.flushes++;
      if (written.length) this.onFlush?.(written);
    }
    if (this.pending.length || this.attachments.length) this.schedule();
  }

  /** Inside a flush transaction: a late snapshot joins its row, or its files go when the row is gone. */
  private attach(id: string, files: SnapshotFiles | null): void {
    if (!files) {
      this.store.setSnapshot(id, { ...snapshotColumns(null), snapshot: 'failed' });
      return;
    }
    if (!this.store.setSnapshot(id, snapshotColumns(files))) {
      this.snapshots.remove(files.path);
      return;
    }
    const row = this.store.get(id)!;
    for (const o of this.outputs) o.snapshotReady?.(row, files.frameJpeg);
  }

  /** Events queued and not yet written. */
  get pendingWrites(): number {
    return this.pending.length;
  }

  // ---- retention ----

  private scheduleRetention(delayMs: number): void {
    if (this.retentionTimer) clearTimeout(this.retentionTimer);
    this.retentionTimer = setTimeout(() => {
      try {
        this.enforceRetention();
      } catch (e) {
        this.log.error({ err: e }, 'event retention failed');
      }
      if (!this.closed) this.scheduleRetention(this.o.retention.intervalMs);
    }, delayMs);
    this.retentionTimer.unref();
  }

  /**
   * [events] retention or snapshots changed while the daemon runs (PATCH /v1/settings, SIGHUP): the next
   * events follow `snapshots`, and retention runs at once with the new limits, then at the new interval.
   */
  configure(o: Pick<HistoryOptions, 'snapshots' | 'retention'>): void {
    this.o.snapshots = o.snapshots;
    this.o.retention = { ...o.retention };
    if (this.retentionTimer && !this.closed) this.scheduleRetention(0);
  }

  /** Age, then count, then snapshot bytes; then the files of deleted rows are removed. */
  enforceRetention(nowMs = Date.now()): { byAge: number; byCount: number; picturesExpired: number } {
    const r = this.o.retention;
    const byAge = r.maxAgeDays > 0 ? this.store.deleteOlderThan(nowMs - r.maxAgeDays * 86_400_000) : 0;
    const byCount = r.maxEvents > 0 ? this.store.deleteBeyondCount(r.maxEvents) : 0;
    const picturesExpired = r.maxSnapshotBytes > 0 ? this.store.expireSnapshotsBeyond(r.maxSnapshotBytes) : 0;
    if (byAge + byCount) this.store.addCounter('retention_deleted', byAge + byCount);
    if (byAge + byCount + picturesExpired)
      this.log.info({ by_age: byAge, by_count: byCount, pictures_expired: picturesExpired }, 'event retention applied');
    this.sweepTrash();
    return { byAge, byCount, picturesExpired };
  }

  /** Unlinks the files of deleted events (recorded in the trash table by the same transaction as the delete). */
  sweepTrash(): number {
    let n = 0;
    for (;;) {
      const paths = this.store.trash(500);
      if (!paths.length) return n;
      for (const p of paths) this.snapshots.remove(p);
      this.store.untrash(paths);
      n += paths.length;
    }
  }

  /** Writes everything queued (waiting up to 2 s for snapshots being encoded), then stops. */
  async close(): Promise<void> {
    if (this.closed) return;
    const until = performance.now() + 2000;
    while (this.pending.some((p) => p.kind === 'event' && p.snapshot === 'waiting') && performance.now() < until)
      await new Promise((r) => setTimeout(r, 20));
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.retentionTimer) clearTimeout(this.retentionTimer);
    if (this.trashTimer) clearInterval(this.trashTimer);
    this.timer = null;
    this.flush(true);
  }
}

/** The picture columns of a row: its files, or none. */
function snapshotColumns(f: SnapshotFiles | null) {
  return {
    snapshot: f ? ('ready' as const) : ('none' as const),
    snapshot_path: f?.path ?? null,
    snapshot_bytes: f?.bytes ?? 0,
    snapshot_width: f?.width ?? null,
    snapshot_height: f?.height ?? null,
    crop_width: f?.cropWidth ?? null,
    crop_height: f?.cropHeight ?? null,
  };
}
