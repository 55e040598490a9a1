import { randomUUID } from 'node:crypto';
import { Errors } from '../contract/errors.js';
import { EventRing, type EventPage, type EventPosition } from './eventRing.js';
import type { EventFrame, MonitorEventSink } from './eventSink.js';
import type { FacePayload, KnownTrack, ProcessedFrame } from './frameProcessor.js';
import type {
  MonitorEventT,
  MonitorFaceT,
  MonitorStateT,
  RtspCause,
  SessionEndReason,
} from '../contract/monitors.js';
import type { MonitorRecord } from './model.js';
import { Tracker, type TrackEvent } from './tracker.js';

export type ErrorSource = 'source' | 'inference';
/** `cause` names why an RTSP source is unavailable (connection_refused, host_not_found, ...). */
export type ErrorInfo = { code: string; message: string; occurred_at: string; cause?: RtspCause };
/** What the stream reader knows, for the state. */
export interface ReaderView {
  connected: boolean;
  sourceInfo: MonitorStateT['source'];
  counters: { frameSequence: number; decoded: number; reconnects: number; lastFrameAt: number | null };
}

/** actual_fps is measured over this many inference starts. */
const FPS_WINDOW = 120;
export const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const round3 = (v: number) => Math.round(v * 1000) / 1000;

/**
 * The bookkeeping of one session: the tracker, the event ring of this stream epoch, the faces seen in
 * the last processed frame, the inference counters, and the error sources behind `monitor_error` /
 * `monitor_recovered`.
 */
export class MonitorActivity {
  private readonly ring: EventRing<MonitorEventT>;
  private readonly tracker: Tracker<FacePayload>;
  private readonly errorSources = new Set<ErrorSource>();
  private readonly inferenceStarts: number[] = [];
  private faces: MonitorFaceT[] = [];
  private processed = 0;
  private dropped = 0;
  private lastProcessed = 0;
  private inferenceErrors = 0;
  private embeddedFaces = 0;
  private reusedIdentities = 0;
  private lastInferenceAt: number | null = null;
  private processingMs: number | null = null;
  private lateFrames = 0;
  lastError: ErrorInfo | null = null;
  /** The frame each live track was last seen in, for the snapshot of its exit (the sink's frame). */
  private readonly trackFrames = new Map<string, { frame: EventFrame; at: number }>();

  constructor(
    private record: MonitorRecord,
    readonly epoch: string,
    private readonly sink: MonitorEventSink | null = null,
  ) {
    this.ring = new EventRing(epoch, record.event_buffer_size);
    this.tracker = new Tracker<FacePayload>(record.event_policy, () => randomUUID());
  }

  /** name, description, preview_enabled and event_buffer_size apply without a restart. */
  applyLive(record: MonitorRecord): void {
    this.record = record;
    this.ring.resize(record.event_buffer_size);
  }

  hasError(source: ErrorSource): boolean {
    return this.errorSources.has(source);
  }
  /** The newest frame sequence that inference has taken. */
  get lastProcessedSequence(): number {
    return this.lastProcessed;
  }

  /** The faces of the last processed frame, as tracking decided them (the state's `faces`). */
  get currentFaces(): readonly MonitorFaceT[] {
    return this.faces;
  }

  inferenceStarted(at: number): void {
    this.inferenceStarts.push(at);
    if (this.inferenceStarts.length > FPS_WINDOW) this.inferenceStarts.shift();
  }

  /** Tracks the frame's faces, emits their enter/exit events and counts the frame. */
  frameProcessed(
    sequence: number,
    result: ProcessedFrame,
    now: number,
    processingMs: number,
    frame: EventFrame | null = null,
  ): void {
    const { detections } = result;
    const { events, trackIds } = this.tracker.update(detections, now);
    this.faces = detections.map((d, i) => ({
      status: d.kind,
      face: d.payload.face,
      person: d.payload.person,
      similarity: d.payload.similarity,
      matched_face_id: d.payload.matched_face_id,
      track_id: trackIds[i]!,
    }));
    this.emitTrackEvents(events, frame);
    if (this.sink && frame) for (const id of trackIds) this.trackFrames.set(id, { frame, at: now });
    this.processed++;
    this.embeddedFaces += result.embedded ?? 0;
    this.reusedIdentities += result.reused ?? 0;
    this.dropped += sequence - this.lastProcessed - 1;
    this.lastProcessed = sequence;
    this.lastInferenceAt = now;
    this.processingMs = round3(processingMs);
    if (this.overInterval(processingMs)) this.lateFrames++;
  }

  /** Longer than the inference interval: a late frame, and capacity_limited when it is the last one. */
  private overInterval(ms: number): boolean {
    return ms > 1000 / this.record.inference_fps;
  }

  /**
   * The settled identities the next frame may reuse instead of embedding its faces again: confirmed
   * matched tracks seen in the last processed frame whose identity was searched from an embedding less
   * than `reidentifyMs` before `now`. So a new face, an unknown face and a face that is not yet confirmed
   * are embedded every frame, and a settled one at least every `reidentifyMs` (0: never reused).
   */
  knownTracks(now: number, reidentifyMs: number): KnownTrack[] {
    if (!(reidentifyMs > 0) || this.lastInferenceAt === null) return [];
    return this.tracker
      .confirmed()
      .filter(
        (t) =>
          t.kind === 'matched' &&
          t.personId !== null &&
          t.lastSeen === this.lastInferenceAt &&
          t.payload.identifiedAt !== undefined &&
          now - t.payload.identifiedAt < reidentifyMs,
      )
      .map((t) => ({ box: t.box, personId: t.personId!, payload: t.payload }));
  }

  /** Whether expire() has anything to do: open tracks (their absence timeouts) or frames kept for them. */
  get expiring(): boolean {
    return this.tracker.size > 0 || this.trackFrames.size > 0;
  }

  /** Exits of tracks unseen for the absence timeout. */
  expire(now: number): void {
    this.emitTrackEvents(this.tracker.expire(now), null);
    // Tracks that ended without an exit (never confirmed) leave their frame here: drop what is stale.
    const stale = now - this.record.event_policy.absence_timeout_seconds * 1000 - 1000;
    for (const [id, f] of this.trackFrames) if (f.at < stale) this.trackFrames.delete(id);
  }

  /** The session ends: every announced track exits now, with `reason` (an enter never stays without its exit). */
  end(reason: SessionEndReason): void {
    this.emitTrackEvents(this.tracker.end(reason), null);
    this.trackFrames.clear();
    this.faces = [];
  }

  inferenceFailed(message: string): void {
    this.inferenceErrors++;
    this.faces = [];
    this.raise('inference', Errors.monitorInferenceFailed(message), !this.errorSources.has('inference'));
  }

  /** One `monitor_error` per outage: retries update the state's last_error (and its cause) only. */
  sourceFailed(cause: RtspCause, reason: string, retryMs: number): void {
    this.faces = [];
    this.raise('source', { ...Errors.rtspSourceUnavailable(reason, retryMs), cause }, !this.errorSources.has('source'));
  }

  /** `monitor_recovered` once every error source has cleared. */
  clearError(source: ErrorSource): void {
    if (!this.errorSources.delete(source)) return;
    if (this.errorSources.size === 0) this.push('monitor_recovered', {});
  }

  events(after: EventPosition | null, limit: number): EventPage<MonitorEventT> {
    return this.ring.page(after, limit);
  }

  state(
    base: { status: string; startedAt: number; threshold: number | null; preview: MonitorStateT['preview'] },
    reader: ReaderView,
  ): MonitorStateT {
    const n = this.inferenceStarts.length;
    const span = n >= 2 ? this.inferenceStarts[n - 1]! - this.inferenceStarts[0]! : 0;
    const fps = this.record.inference_fps;
    const rc = reader.counters;
    return {
      monitor_id: this.record.id,
      stream_epoch: this.epoch,
      status: base.status,
      connected: reader.connected,
      source: { ...reader.sourceInfo },
      inference: {
        configured_fps: fps,
        actual_fps: span > 0 ? round3(((n - 1) * 1000) / span) : 0,
        processing_ms: this.processingMs,
        last_frame_at: isoOrNull(rc.lastFrameAt),
        last_inference_at: isoOrNull(this.lastInferenceAt),
        frame_sequence: rc.frameSequence,
        decoded_frames: rc.decoded,
        processed_frames: this.processed,
        // Frames the pipeline dropped before conversion (past the monitor's rate) plus those the loop skipped.
        dropped_frames: this.dropped + Math.max(0, rc.decoded - rc.frameSequence),
        capacity_limited: this.processingMs !== null && this.overInterval(this.processingMs),
        embedded_faces: this.embeddedFaces,
        reused_identities: this.reusedIdentities,
        late_frames: this.lateFrames,
      },
      threshold: base.threshold,
      faces: this.faces,
      matched_faces: this.faces.filter((f) => f.status === 'matched').length,
      unknown_faces: this.faces.filter((f) => f.status === 'unknown').length,
      liveness_blocked_faces: this.faces.filter((f) => f.status === 'liveness_blocked').length,
      preview: base.preview,
      reconnects: rc.reconnects,
      inference_errors: this.inferenceErrors,
      last_error: this.lastError,
      started_at: isoOrNull(base.startedAt),
    };
  }

  private push(type: string, extra: Partial<MonitorEventT>, frame: EventFrame | null = null): void {
    const event = this.ring.push((sequence) => ({
      id: randomUUID(),
      sequence,
      type,
      monitor_id: this.record.id,
      stream_epoch: this.epoch,
      occurred_at: new Date().toISOString(),
      ...extra,
    }));
    this.sink?.event(event, { collectionId: this.record.collection_id, frame });
  }

  /** Enters carry the current frame; exits the frame their track was last seen in. */
  private emitTrackEvents(events: TrackEvent<FacePayload>[], current: EventFrame | null): void {
    for (const e of events) {
      const p = e.payload;
      const exit = e.type.endsWith('_exit');
      const frame = exit ? (this.trackFrames.get(e.trackId)?.frame ?? null) : current;
      if (exit) this.trackFrames.delete(e.trackId);
      this.push(
        e.type,
        {
          track_id: e.trackId,
          person: p.person,
          similarity: p.similarity,
          threshold: p.threshold,
          matched_face_id: p.matched_face_id,
          face: p.face,
          ...(exit ? { reason: e.reason ?? null } : {}),
        },
        frame,
      );
    }
  }

  private raise(
    source: ErrorSource,
    { code, message, cause }: { code: string; message: string; cause?: RtspCause },
    emit: boolean,
  ): void {
    this.errorSources.add(source);
    this.lastError = { code, message, occurred_at: new Date().toISOString(), ...(cause ? { cause } : {}) };
    if (emit) this.push('monitor_error', { error: { code, message, ...(cause ? { cause } : {}) } });
  }
}
