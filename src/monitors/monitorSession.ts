import { livenessBlock, type LivenessPolicy } from '../inference/faceService.js';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { detectionProfileOf } from '../collections/collectionService.js';
import type { CollectionT } from '../collections/model.js';
import type { SearchMatch } from '../collections/searchService.js';
import { isApiError } from '../errors.js';
import { faceObservation } from '../inference/observation.js';
import type { AnalyzedFace, AnalyzeRequest, AnalyzeResult } from '../inference/pipeline.js';
import type { FaceObservationT } from '../http/schemas.js';
import { EventRing, type EventPage, type EventPosition } from './eventRing.js';
import { GstFrameSource, type Frame, type FrameSourceOptions } from './frameSource.js';
import type { MonitorEventT, MonitorFaceT, MonitorPersonT, MonitorRecord, MonitorRuntimeT, MonitorStateT } from './model.js';
import { PreviewHub } from './previewHub.js';
import { Tracker, type Detection, type FaceKind, type TrackEvent } from './tracker.js';

/** What a session needs from the rest of the daemon (the shared engine, collections and search). */
export interface SessionDeps {
  analyze(request: AnalyzeRequest, signal: AbortSignal): Promise<AnalyzeResult>;
  /** The collection, throwing 404 / 409 collection_model_mismatch like every model-bound use. */
  collection(id: string): CollectionT;
  identify(collection: CollectionT, embeddings: Float32Array[], threshold: number): (SearchMatch | null)[];
  maxDetectedFaces: number;
  /** The server's liveness policy when the addon is enabled: normal mode blocks failing faces. */
  liveness: LivenessPolicy | null;
  source: FrameSourceOptions & { reconnectDelayMs: number };
  preview: { fps: number; quality: number };
  log: Logger;
}

export type MonitorStatus = 'starting' | 'running' | 'reconnecting' | 'degraded' | 'stopped' | 'error';
type ErrorInfo = { code: string; message: string; occurred_at: string };
interface FacePayload { face: FaceObservationT; person: MonitorPersonT | null; similarity: number | null; matched_face_id: string | null; threshold: number }

const MAX_BACKOFF_MS = 30_000;
/** actual_fps is measured over this many inference starts. */
const FPS_WINDOW = 120;
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const round3 = (v: number) => Math.round(v * 1000) / 1000;

/**
 * What a face is for tracking and the state: liveness-blocked in normal mode (never searched: the
 * pipeline gave it no embedding), else matched or unknown. Observe mode only reports liveness.
 */
export function classifyFace(face: AnalyzedFace, match: SearchMatch | null, liveness: LivenessPolicy | null): FaceKind {
  if (livenessBlock(liveness, face)) return 'liveness_blocked';
  return match ? 'matched' : 'unknown';
}

/**
 * One running monitor: a reader (GStreamer, keeping only the newest frame, reconnecting with exponential
 * backoff) and an inference loop that takes the newest unprocessed frame at most `inference_fps` times a
 * second and never catches up on missed ones. Events go to an in-memory ring for this stream epoch.
 */
export class MonitorSession {
  readonly epoch = randomUUID();
  readonly startedAt = Date.now();
  readonly preview: PreviewHub;
  private record: MonitorRecord;
  private readonly ring: EventRing<MonitorEventT>;
  private readonly tracker: Tracker<FacePayload>;
  private readonly abort = new AbortController();
  private source: GstFrameSource | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private backoffMs: number;
  private stopped = false;
  private connected = false;
  private everFailed = false;
  private readonly errorSources = new Set<'source' | 'inference'>();
  private lastError: ErrorInfo | null = null;
  private latest: Frame | null = null;
  private wake: (() => void) | null = null;
  private sourceInfo: { width: number | null; height: number | null; source_fps: number | null } = { width: null, height: null, source_fps: null };
  private faces: MonitorFaceT[] = [];
  private readonly counters = { frameSequence: 0, decoded: 0, processed: 0, dropped: 0, reconnects: 0, inferenceErrors: 0, lastProcessed: 0 };
  private lastFrameAt: number | null = null;
  private lastInferenceAt: number | null = null;
  private processingMs: number | null = null;
  private readonly inferenceStarts: number[] = [];
  private loop: Promise<void> = Promise.resolve();

  constructor(record: MonitorRecord, private readonly deps: SessionDeps) {
    this.record = record;
    this.ring = new EventRing(this.epoch, record.event_buffer_size);
    this.tracker = new Tracker<FacePayload>(record.event_policy, () => randomUUID());
    this.preview = new PreviewHub(deps.preview.fps, deps.preview.quality);
    this.backoffMs = deps.source.reconnectDelayMs;
  }

  get id(): string {
    return this.record.id;
  }

  /** Starts reading and inferring. Throws only when the pipeline cannot be built at all (configuration). */
  start(): void {
    this.connect(true);
    this.loop = this.inferenceLoop();
  }

  /**
   * Resolves when the inference loop has exited, i.e. no inference of this session is still running in a
   * worker (the engine must not be closed under one: terminating a worker mid-run aborts the process).
   */
  get finished(): Promise<void> {
    return this.loop;
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.abort.abort(new Error('monitor stopped'));
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.source?.stop();
    this.source = null;
    this.latest = null;
    this.preview.close();
    this.wake?.();
  }

  /** name, description, preview_enabled and event_buffer_size apply without a restart. */
  applyLive(record: MonitorRecord): void {
    this.record = record;
    this.ring.resize(record.event_buffer_size);
    if (!record.preview_enabled) this.preview.close();
  }

  get status(): MonitorStatus {
    if (this.stopped) return 'stopped';
    if (this.errorSources.has('source')) return 'reconnecting';
    if (!this.connected) return this.everFailed ? 'reconnecting' : 'starting';
    return this.errorSources.has('inference') ? 'degraded' : 'running';
  }

  /** A frame to preview exists: the stream is connected and has delivered at least one frame. */
  get streaming(): boolean {
    return this.connected && this.latest !== null;
  }

  runtime(): MonitorRuntimeT {
    return {
      status: this.status, connected: this.connected, stream_epoch: this.epoch, last_frame_at: iso(this.lastFrameAt),
      last_error: this.lastError, preview_active: this.preview.active, preview_viewers: this.preview.viewerCount,
    };
  }

  state(threshold: number | null): MonitorStateT {
    const c = this.counters;
    const n = this.inferenceStarts.length;
    const span = n >= 2 ? this.inferenceStarts[n - 1]! - this.inferenceStarts[0]! : 0;
    const fps = this.record.inference_fps;
    return {
      monitor_id: this.record.id, stream_epoch: this.epoch, status: this.status, connected: this.connected, source: { ...this.sourceInfo },
      inference: {
        configured_fps: fps, actual_fps: span > 0 ? round3(((n - 1) * 1000) / span) : 0, processing_ms: this.processingMs,
        last_frame_at: iso(this.lastFrameAt), last_inference_at: iso(this.lastInferenceAt), frame_sequence: c.frameSequence,
        decoded_frames: c.decoded, processed_frames: c.processed, dropped_frames: c.dropped,
        capacity_limited: this.processingMs !== null && this.processingMs > 1000 / fps,
      },
      threshold, faces: this.faces,
      matched_faces: this.faces.filter((f) => f.status === 'matched').length,
      unknown_faces: this.faces.filter((f) => f.status === 'unknown').length,
      liveness_blocked_faces: this.faces.filter((f) => f.status === 'liveness_blocked').length,
      preview: { enabled: this.record.preview_enabled, active: this.preview.active, viewers: this.preview.viewerCount, frames: this.preview.frames },
      reconnects: c.reconnects, inference_errors: c.inferenceErrors, last_error: this.lastError, started_at: iso(this.startedAt),
    };
  }

  events(after: EventPosition | null, limit: number): EventPage<MonitorEventT> {
    return this.ring.page(after, limit);
  }

  // ---- reader ----

  private connect(initial: boolean): void {
    this.reconnectTimer = null;
    if (this.stopped) return;
    const source = new GstFrameSource(this.record.url, this.deps.source, {
      caps: (info) => {
        this.sourceInfo = { width: info.width, height: info.height, source_fps: info.fps };
      },
      frame: (data, width, height) => this.onFrame(data, width, height),
      failed: (reason) => this.onSourceFailed(reason),
    });
    try {
      source.start();
    } catch (e) {
      if (initial) throw e;
      this.onSourceFailed(`the pipeline could not start: ${(e as Error).message}`);
      return;
    }
    this.source = source;
  }

  private onFrame(data: Uint8Array, width: number, height: number): void {
    if (this.stopped) return;
    const now = Date.now();
    const c = this.counters;
    c.frameSequence++;
    c.decoded++;
    this.latest = { data, width, height, sequence: c.frameSequence, at: now };
    this.lastFrameAt = now;
    if (!this.connected) {
      this.connected = true;
      this.backoffMs = this.deps.source.reconnectDelayMs;
      this.clearError('source');
    }
    if (this.record.preview_enabled) this.preview.offer(data, width, height);
    this.wake?.();
  }

  private onSourceFailed(reason: string): void {
    if (this.stopped) return;
    this.source = null;
    this.connected = false;
    this.everFailed = true;
    this.latest = null;
    this.faces = [];
    this.counters.reconnects++;
    this.raise('source', 'rtsp_source_unavailable', `The RTSP source is unavailable: ${reason}. Reconnecting in ${this.backoffMs / 1000} s.`, true);
    this.deps.log.warn({ monitor_id: this.record.id, reason, retry_ms: this.backoffMs }, 'monitor source unavailable');
    this.reconnectTimer = setTimeout(() => this.connect(false), this.backoffMs);
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
  }

  // ---- inference ----

  private async inferenceLoop(): Promise<void> {
    let nextAllowed = 0;
    while (!this.stopped) {
      this.emitTrackEvents(this.tracker.expire(Date.now()));
      const frame = this.latest;
      const now = performance.now();
      if (!frame || frame.sequence <= this.counters.lastProcessed) {
        await this.idle(250);
        continue;
      }
      if (now < nextAllowed) {
        await this.idle(Math.min(nextAllowed - now, 250), false);
        continue;
      }
      const started = performance.now();
      this.inferenceStarts.push(started);
      if (this.inferenceStarts.length > FPS_WINDOW) this.inferenceStarts.shift();
      try {
        await this.process(frame);
        if (this.stopped) break;
        this.clearError('inference');
      } catch (e) {
        if (this.stopped) break;
        this.counters.inferenceErrors++;
        this.faces = [];
        const message = isApiError(e) ? `${e.code}: ${e.message}` : (e as Error).message;
        this.raise('inference', 'monitor_inference_failed', `Inference failed: ${message}`, !this.errorSources.has('inference'));
        this.deps.log.warn({ monitor_id: this.record.id, err: message }, 'monitor inference failed');
      }
      // Never catch up: the next run waits for the interval or for this run to finish, whichever is later.
      nextAllowed = Math.max(started + 1000 / this.record.inference_fps, performance.now());
    }
  }

  /** Waits for `ms`, or (when `onFrame`) until a new frame arrives, whichever is first. */
  private idle(ms: number, onFrame = true): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = onFrame ? done : null;
      if (this.stopped) done();
    }).then(() => {
      this.wake = null;
    });
  }

  private async process(frame: Frame): Promise<void> {
    const collection = this.deps.collection(this.record.collection_id);
    const threshold = this.record.match_threshold ?? collection.default_threshold;
    const t0 = performance.now();
    const r = await this.deps.analyze({
      image: { raw: frame.data, width: frame.width, height: frame.height }, limits: { maxBytes: Number.MAX_SAFE_INTEGER, maxPixels: Number.MAX_SAFE_INTEGER },
      profile: detectionProfileOf(collection), maxFaces: this.deps.maxDetectedFaces, embed: 'all',
      ...(this.deps.liveness ? { liveness: { faces: 'all' as const, mode: this.deps.liveness.mode, threshold: this.deps.liveness.threshold } } : {}),
    }, this.abort.signal);
    if (this.stopped) return;
    // Faces without an embedding (blocked by normal-mode liveness) are never searched.
    const searchable = r.faces.filter((f) => f.embedding);
    const found = this.deps.identify(collection, searchable.map((f) => f.embedding!), threshold);
    const matchOf = new Map(searchable.map((f, i) => [f, found[i] ?? null]));
    const detections: Detection<FacePayload>[] = r.faces.map((face) => {
      const match = matchOf.get(face) ?? null;
      const kind = classifyFace(face, match, this.deps.liveness);
      const obs = faceObservation(face, r.width, r.height);
      const m = kind === 'matched' ? match : null;
      return {
        box: [obs.bbox.normalized.left, obs.bbox.normalized.top, obs.bbox.normalized.width, obs.bbox.normalized.height], kind, personId: m?.person.id ?? null,
        payload: {
          face: obs, threshold, similarity: m ? m.similarity : null, matched_face_id: m?.matched_face_id ?? null,
          person: m ? { id: m.person.id, name: m.person.name, external_id: m.person.external_id } : null,
        },
      };
    });
    const now = Date.now();
    const { events, trackIds } = this.tracker.update(detections, now);
    this.faces = detections.map((d, i) => ({
      status: d.kind, face: d.payload.face, person: d.payload.person, similarity: d.payload.similarity, matched_face_id: d.payload.matched_face_id, track_id: trackIds[i]!,
    }));
    this.emitTrackEvents(events);
    const c = this.counters;
    c.processed++;
    c.dropped += frame.sequence - c.lastProcessed - 1;
    c.lastProcessed = frame.sequence;
    this.lastInferenceAt = now;
    this.processingMs = round3(performance.now() - t0);
  }

  // ---- events ----

  private push(type: string, extra: Partial<MonitorEventT>): void {
    this.ring.push((sequence) => ({
      id: randomUUID(), sequence, type, monitor_id: this.record.id, stream_epoch: this.epoch, occurred_at: new Date().toISOString(), ...extra,
    }));
  }

  private emitTrackEvents(events: TrackEvent<FacePayload>[]): void {
    for (const e of events) {
      const p = e.payload;
      this.push(e.type, { track_id: e.trackId, person: p.person, similarity: p.similarity, threshold: p.threshold, matched_face_id: p.matched_face_id, face: p.face });
    }
  }

  private raise(source: 'source' | 'inference', code: string, message: string, emit: boolean): void {
    this.errorSources.add(source);
    this.lastError = { code, message, occurred_at: new Date().toISOString() };
    if (emit) this.push('monitor_error', { error: { code, message } });
  }

  /** `monitor_recovered` once every error source has cleared. */
  private clearError(source: 'source' | 'inference'): void {
    if (!this.errorSources.delete(source)) return;
    if (this.errorSources.size === 0) this.push('monitor_recovered', {});
  }
}
