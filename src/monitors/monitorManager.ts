import type { Logger } from 'pino';
import type { CollectionService } from '../collections/collectionService.js';
import { Errors } from '../contract/errors.js';
import type { CursorCodec, Page } from '../store/cursors.js';
import { toPage } from '../store/cursors.js';
import { formatEventPosition, parseEventPosition, type EventPosition } from './eventRing.js';
import { directoryEntry, type FleetMonitorDirectory } from './fleetDirectory.js';
import { isConnectionError } from '../store/postgres.js';
import type {
  FleetMonitorT,
  MonitorCreateT,
  MonitorEventT,
  MonitorPatchT,
  MonitorRuntimeT,
  MonitorStateT,
  MonitorT,
  SessionEndReason,
} from '../contract/monitors.js';
import { MotionConfigSchema } from '../config/schema.js';
import type { MonitorRecord } from './model.js';
import { gateSettings, MotionGate } from './motionGate.js';
import { motionState, MonitorSession, type SessionDeps } from './monitorSession.js';
import type { MonitorStore } from './monitorStore.js';
import { redactRtspUrl } from './rtspUrl.js';

export interface MonitorEventPage {
  monitor_id: string;
  stream_epoch: string | null;
  events: MonitorEventT[];
  oldest_sequence: number | null;
  latest_sequence: number;
  has_more: boolean;
  truncated: boolean;
  stream_reset: boolean;
  next_cursor: string;
}

/** Told of monitor changes (the MQTT publisher keeps Home Assistant's entities in step). */
export interface MonitorObserver {
  /** `previous`: the monitor before a patch (null: created). */
  changed(monitor: MonitorT, previous: MonitorT | null): void;
  /** `previous`: the monitor as it was. */
  deleted(id: string, previous: MonitorT): void;
  /** A running monitor's motion started or stopped (after its off delay; off when its session ends). */
  motion?(id: string, active: boolean): void;
}

const RESTART_FIELDS = ['url', 'collection_id', 'inference_fps', 'match_threshold'] as const;
/** [monitors.motion] defaults, for the state of a monitor that is not running before the models load. */
const MOTION_DEFAULTS = MotionConfigSchema.parse({});

/**
 * Monitor lifecycle: persistence, one session per enabled monitor, and the stream capacity. Every
 * lifecycle change (create, patch, delete, restore) runs its capacity check, its write and the session
 * start with no `await` in between, so on Node's single thread two requests cannot both take the last
 * slot: they are serialised by construction.
 */
export class MonitorManager {
  private readonly sessions = new Map<string, MonitorSession>();
  /** Enabled monitors that could not be restored at startup (status "error"). */
  private readonly restoreErrors = new Map<string, { code: string; message: string; occurred_at: string }>();
  private readonly observers: MonitorObserver[] = [];

  constructor(
    private readonly store: MonitorStore,
    private readonly collections: CollectionService,
    private readonly cursors: CursorCodec,
    private maxStreams: number,
    /** Null until the models are loaded: sessions need the engine. */
    private readonly sessionDeps: () => SessionDeps | null,
    private readonly log: Logger,
    /** This box ([server] box_id): it runs only monitors whose box_id is its own. */
    readonly boxId: string,
  ) {
    const claimed = store.claimUnowned(boxId);
    if (claimed)
      log.info({ monitors: claimed, box_id: boxId }, 'monitors from before box identity now belong to this box');
  }

  observe(o: MonitorObserver): void {
    this.observers.push(o);
  }

  /** Fleet mode: the directory this box publishes its monitors to (set at startup). */
  private directory: FleetMonitorDirectory | null = null;
  setDirectory(d: FleetMonitorDirectory): void {
    this.directory = d;
    this.observe({ changed: () => d.changed(), deleted: () => d.changed() });
  }

  /**
   * Every box's monitors (fleet mode, from the directory), or this box's own file (sqlite mode, or the
   * database unreachable: degraded), optionally one box's.
   */
  async fleetList(boxId?: string): Promise<{
    monitors: FleetMonitorT[];
    fleet: { source: 'database' | 'local'; degraded: boolean; reason: string | null };
  }> {
    const local = (degraded: boolean, reason: string | null) => {
      const at = new Date().toISOString();
      return {
        monitors: this.all()
          .filter((m) => !boxId || m.box_id === boxId)
          .map((m) => directoryEntry(m, at))
          .sort((a, b) => (a.box_id + '\0' + a.id < b.box_id + '\0' + b.id ? -1 : 1)),
        fleet: { source: 'local' as const, degraded, reason },
      };
    };
    if (!this.directory) return local(false, null);
    try {
      return {
        monitors: await this.directory.list(boxId),
        fleet: { source: 'database', degraded: false, reason: null },
      };
    } catch (e) {
      if (!isConnectionError(e)) throw e;
      return local(true, e instanceof Error ? e.message : String(e));
    }
  }

  /** Every monitor as the API shows it (for the outputs that mirror them). */
  all(): MonitorT[] {
    const out: MonitorT[] = [];
    let after: string | null = null;
    for (;;) {
      const rows = this.store.list(after, 500);
      out.push(...rows.map((r) => this.toMonitor(r)));
      if (rows.length < 500) return out;
      after = rows[rows.length - 1]!.id;
    }
  }

  private record(id: string): MonitorRecord {
    const r = this.store.get(id);
    if (!r) throw Errors.monitorNotFound(id);
    return r;
  }

  /** Whether this box runs the monitor (its box_id is this box's). */
  private own(r: MonitorRecord): boolean {
    return r.box_id === this.boxId;
  }

  private deps(): SessionDeps {
    const d = this.sessionDeps();
    if (!d) throw Errors.serviceNotReady();
    return d;
  }

  private claimSlot(): void {
    if (this.sessions.size >= this.maxStreams) {
      throw Errors.monitorLimitExceeded(this.maxStreams);
    }
  }

  /** Builds and starts a session; a pipeline that cannot even be built is a configuration error. */
  private startSession(record: MonitorRecord): MonitorSession {
    const session = new MonitorSession(record, this.deps(), {
      motion: (active) => {
        for (const o of this.observers) o.motion?.(record.id, active);
      },
    });
    try {
      session.start();
    } catch (e) {
      session.stop('monitor_disabled'); // never ran: nothing to close
      this.log.error({ monitor_id: record.id, err: (e as Error).message }, 'monitor pipeline could not be built');
      throw Errors.monitorStartFailed(record.id, (e as Error).message);
    }
    return session;
  }

  runtime(record: MonitorRecord): MonitorRuntimeT {
    const s = this.sessions.get(record.id);
    if (s) return s.runtime();
    if (!this.own(record)) {
      const e = Errors.monitorOtherBox(record.id, record.box_id, this.boxId);
      return {
        status: 'other_box',
        connected: false,
        stream_epoch: null,
        last_frame_at: null,
        last_error: { code: e.code, message: e.message, box_id: record.box_id },
        preview_active: false,
        preview_viewers: 0,
      };
    }
    const err = this.restoreErrors.get(record.id) ?? null;
    return {
      status: err ? 'error' : 'stopped',
      connected: false,
      stream_epoch: null,
      last_frame_at: null,
      last_error: err,
      preview_active: false,
      preview_viewers: 0,
    };
  }

  toMonitor(r: MonitorRecord): MonitorT {
    return {
      id: r.id,
      name: r.name,
      description: r.description,
      enabled: r.enabled,
      source: { type: 'rtsp', url: redactRtspUrl(r.url) },
      detect_url: r.detect_url ? redactRtspUrl(r.detect_url) : null,
      collection_id: r.collection_id,
      inference_fps: r.inference_fps,
      match_threshold: r.match_threshold,
      event_buffer_size: r.event_buffer_size,
      event_policy: { ...r.event_policy },
      preview_enabled: r.preview_enabled,
      zones: r.zones,
      motion_mask: r.motion_mask,
      face_mask: r.face_mask,
      min_face_size: r.min_face_size,
      motion: { ...r.motion },
      faces: { track_identity: null, group_unknowns: null, ...r.faces },
      clips: { enabled: null, pre_seconds: null, post_seconds: null, ...r.clips },
      runtime: this.runtime(r),
      created_at: r.created_at,
      updated_at: r.updated_at,
      box_id: r.box_id,
    };
  }

  get(id: string): MonitorT {
    return this.toMonitor(this.record(id));
  }

  list(cursor: string | null | undefined, limit: number): Page<MonitorT> {
    const after = cursor ? this.cursors.decode(cursor, 'monitors') : null;
    const page = toPage(this.store.list(after, limit + 1), limit, (m) => m.id, this.cursors, 'monitors');
    return { items: page.items.map((m) => this.toMonitor(m)), next_cursor: page.next_cursor };
  }

  create(body: MonitorCreateT): MonitorT {
    this.deps(); // 503 while the models load: a session could not start
    this.collections.getBound(body.collection_id);
    if (body.enabled) this.claimSlot();
    const at = new Date().toISOString();
    const record: MonitorRecord = {
      id: body.id,
      name: body.name,
      description: body.description,
      enabled: body.enabled,
      url: body.source.url,
      collection_id: body.collection_id,
      inference_fps: body.inference_fps,
      match_threshold: body.match_threshold,
      event_buffer_size: body.event_buffer_size,
      event_policy: { ...body.event_policy },
      preview_enabled: body.preview_enabled,
      zones: body.zones,
      motion_mask: body.motion_mask,
      face_mask: body.face_mask,
      min_face_size: body.min_face_size,
      motion: { ...body.motion },
      faces: { ...body.faces },
      detect_url: body.detect_url,
      clips: { ...body.clips },
      created_at: at,
      updated_at: at,
      box_id: this.boxId,
    };
    if (!this.store.insert(record)) throw Errors.monitorExists(body.id);
    if (record.enabled) {
      let session: MonitorSession;
      try {
        session = this.startSession(record);
      } catch (e) {
        // A monitor whose session cannot start is not kept.
        this.store.delete(record.id);
        throw e;
      }
      this.sessions.set(record.id, session);
    }
    this.log.info(
      { monitor_id: record.id, enabled: record.enabled, source: redactRtspUrl(record.url) },
      'monitor created',
    );
    const created = this.toMonitor(record);
    for (const o of this.observers) o.changed(created, null);
    return created;
  }

  patch(id: string, body: MonitorPatchT): MonitorT {
    const current = this.record(id);
    // Only the owning box changes (and runs) a monitor; another box may only delete it.
    if (!this.own(current)) throw Errors.monitorOtherBox(id, current.box_id, this.boxId);
    const next: MonitorRecord = {
      ...current,
      ...(body.name !== undefined && { name: body.name }),
      ...(body.description !== undefined && { description: body.description }),
      ...(body.enabled !== undefined && { enabled: body.enabled }),
      ...(body.source !== undefined && { url: body.source.url }),
      ...(body.detect_url !== undefined && { detect_url: body.detect_url }),
      ...(body.collection_id !== undefined && { collection_id: body.collection_id }),
      ...(body.inference_fps !== undefined && { inference_fps: body.inference_fps }),
      ...(body.match_threshold !== undefined && { match_threshold: body.match_threshold }),
      ...(body.event_buffer_size !== undefined && { event_buffer_size: body.event_buffer_size }),
      ...(body.preview_enabled !== undefined && { preview_enabled: body.preview_enabled }),
      ...(body.zones !== undefined && { zones: body.zones }),
      ...(body.motion_mask !== undefined && { motion_mask: body.motion_mask }),
      ...(body.face_mask !== undefined && { face_mask: body.face_mask }),
      ...(body.min_face_size !== undefined && { min_face_size: body.min_face_size }),
      motion: {
        ...current.motion,
        ...Object.fromEntries(Object.entries(body.motion ?? {}).filter(([, v]) => v !== undefined)),
      },
      event_policy: {
        ...current.event_policy,
        ...Object.fromEntries(Object.entries(body.event_policy ?? {}).filter(([, v]) => v !== undefined)),
      },
      faces: {
        track_identity: null,
        group_unknowns: null,
        ...current.faces,
        ...Object.fromEntries(Object.entries(body.faces ?? {}).filter(([, v]) => v !== undefined)),
      },
      clips: {
        enabled: null,
        pre_seconds: null,
        post_seconds: null,
        ...current.clips,
        ...Object.fromEntries(Object.entries(body.clips ?? {}).filter(([, v]) => v !== undefined)),
      },
      updated_at: new Date().toISOString(),
    };
    if (next.collection_id !== current.collection_id) this.collections.getBound(next.collection_id);
    const restart =
      RESTART_FIELDS.some((f) => next[f] !== current[f]) ||
      (next.detect_url ?? null) !== (current.detect_url ?? null) ||
      JSON.stringify(next.event_policy) !== JSON.stringify(current.event_policy) ||
      // Zones restart the session: faces in a changed zone exit it (monitor_restarted) rather than linger.
      JSON.stringify(next.zones) !== JSON.stringify(current.zones) ||
      // So do the faces overrides: a session's tracks are identified and grouped one way from start to end.
      JSON.stringify(next.faces) !== JSON.stringify(current.faces) ||
      // And clips: the recording branch is part of the pipeline.
      JSON.stringify(next.clips ?? {}) !== JSON.stringify(current.clips ?? {});
    const running = this.sessions.get(id);
    if (next.enabled && !running) this.claimSlot();
    let started: MonitorSession | null = null;
    if (next.enabled && (!running || restart)) started = this.startSession(next); // throws before anything is written
    this.store.update(next);
    if (started) {
      this.retire(running, 'monitor_restarted');
      this.sessions.set(id, started);
    } else if (!next.enabled && running) {
      this.retire(running, 'monitor_disabled');
      this.sessions.delete(id);
    } else running?.applyLive(next);
    if (started || !next.enabled) this.restoreErrors.delete(id);
    const patched = this.toMonitor(next);
    const before = this.toMonitor(current);
    for (const o of this.observers) o.changed(patched, before);
    return patched;
  }

  delete(id: string): void {
    const previous = this.toMonitor(this.record(id));
    this.retire(this.sessions.get(id), 'monitor_deleted');
    this.sessions.delete(id);
    this.restoreErrors.delete(id);
    this.store.delete(id);
    for (const o of this.observers) o.deleted(id, previous);
  }

  private threshold(r: MonitorRecord): number | null {
    return r.match_threshold ?? this.collections.find(r.collection_id)?.default_threshold ?? null;
  }

  state(id: string): MonitorStateT {
    const r = this.record(id);
    const s = this.sessions.get(id);
    if (s) return s.state(this.threshold(r));
    const rt = this.runtime(r);
    const gate = gateSettings(r, this.sessionDeps()?.motion ?? MOTION_DEFAULTS);
    return {
      monitor_id: id,
      stream_epoch: null,
      status: rt.status,
      connected: false,
      source: { width: null, height: null, source_fps: null },
      inference: {
        configured_fps: r.inference_fps,
        actual_fps: 0,
        processing_ms: null,
        last_frame_at: null,
        last_inference_at: null,
        frame_sequence: 0,
        decoded_frames: 0,
        processed_frames: 0,
        dropped_frames: 0,
        capacity_limited: false,
        embedded_faces: 0,
        reused_identities: 0,
        late_frames: 0,
        ignored_faces: 0,
      },
      threshold: this.threshold(r),
      faces: [],
      matched_faces: 0,
      unknown_faces: 0,
      liveness_blocked_faces: 0,
      preview: { enabled: r.preview_enabled, active: false, viewers: 0, frames: 0 },
      motion: motionState(new MotionGate(gate).stats(), gate),
      reconnects: 0,
      inference_errors: 0,
      last_error: rt.last_error,
      started_at: null,
    };
  }

  /** Events after a signed `{epoch}:{sequence}` cursor; `next_cursor` is always a string. */
  events(id: string, cursor: string | null | undefined, limit: number): MonitorEventPage {
    this.record(id);
    const scope = `monitor-events:${id}`;
    let after: EventPosition | null = null;
    if (cursor) {
      after = parseEventPosition(this.cursors.decode(cursor, scope));
      if (!after) throw Errors.invalidCursor('malformed');
    }
    const s = this.sessions.get(id);
    if (!s) {
      return {
        monitor_id: id,
        stream_epoch: null,
        events: [],
        oldest_sequence: null,
        latest_sequence: 0,
        has_more: false,
        truncated: false,
        stream_reset: after !== null && after.epoch !== 'stopped',
        next_cursor: this.cursors.encode(
          scope,
          formatEventPosition({ epoch: 'stopped', sequence: after?.epoch === 'stopped' ? after.sequence : 0 }),
        ),
      };
    }
    const p = s.events(after, limit);
    return {
      monitor_id: id,
      stream_epoch: s.epoch,
      events: p.events,
      oldest_sequence: p.oldest_sequence,
      latest_sequence: p.latest_sequence,
      has_more: p.has_more,
      truncated: p.truncated,
      stream_reset: p.stream_reset,
      next_cursor: this.cursors.encode(scope, formatEventPosition(p.next)),
    };
  }

  /** The session whose MJPEG preview may be watched: 409 preview_disabled, 503 stream_unavailable. */
  previewSession(id: string): MonitorSession {
    const r = this.record(id);
    if (!r.preview_enabled) throw Errors.previewDisabled(id);
    const s = this.sessions.get(id);
    if (!s || !s.streaming) throw Errors.streamUnavailable(id, this.runtime(r).status);
    return s;
  }

  /** Whether a collection is referenced by a monitor (its delete answers 409 collection_in_use). */
  inUse(collectionId: string): boolean {
    return this.store.referencesCollection(collectionId);
  }

  /** Starts every enabled monitor (in id order, up to the capacity); failures show as status "error". */
  restore(): void {
    const foreign: string[] = [];
    for (const id of this.store.enabledIds()) {
      try {
        const r = this.record(id);
        if (!this.own(r)) {
          foreign.push(id);
          continue;
        }
        this.collections.getBound(r.collection_id);
        this.claimSlot();
        this.sessions.set(id, this.startSession(r));
      } catch (e) {
        this.restoreErrors.set(id, { ...Errors.monitorRestoreFailed(), occurred_at: new Date().toISOString() });
        this.log.error({ monitor_id: id, err: (e as Error).message }, 'monitor could not be restored at startup');
      }
    }
    if (this.sessions.size) this.log.info({ monitors: [...this.sessions.keys()] }, 'monitors restored');
    if (foreign.length)
      this.log.warn(
        { monitors: foreign, box_id: this.boxId },
        "enabled monitors of another box are not started here (their box_id is not this box's)",
      );
  }

  /** A monitor's camera URL with its credentials, for a connection test of the saved camera (never shown). */
  sourceUrl(id: string): string {
    return this.record(id).url;
  }

  /** [monitors] max_streams changed while the daemon runs: later starts count against it; running monitors keep running. */
  setMaxStreams(n: number): void {
    this.maxStreams = n;
  }

  /**
   * [monitors] decoding or preview settings changed while the daemon runs (the session deps hold the new
   * ones): each running session is replaced by a new one (new stream epoch; faces in view exit with
   * monitor_restarted). A monitor whose new session cannot start keeps its old one; the first such error is
   * thrown after the others were restarted. Returns the restarted monitors' ids.
   */
  restartSessions(): string[] {
    const restarted: string[] = [];
    let failure: unknown = null;
    for (const [id, running] of [...this.sessions]) {
      let started: MonitorSession;
      try {
        started = this.startSession(this.record(id));
      } catch (e) {
        failure ??= e;
        continue;
      }
      this.retire(running, 'monitor_restarted');
      this.sessions.set(id, started);
      restarted.push(id);
    }
    if (restarted.length) this.log.info({ monitors: restarted }, 'monitors restarted with new [monitors] settings');
    if (failure) throw failure;
    return restarted;
  }

  /** Stops every session (their faces in view exit: daemon_stopped) and waits until none has an inference in flight. */
  async close(): Promise<void> {
    const all = [...this.sessions.values(), ...this.stopping];
    for (const s of all) s.stop('daemon_stopped');
    this.sessions.clear();
    await Promise.all(all.map((s) => s.finished));
  }

  /** Sessions stopped by patch/delete whose last inference may still be running. */
  private readonly stopping = new Set<MonitorSession>();
  private retire(s: MonitorSession | undefined, reason: SessionEndReason): void {
    if (!s) return;
    s.stop(reason);
    this.stopping.add(s);
    void s.finished.then(() => this.stopping.delete(s));
  }
}
