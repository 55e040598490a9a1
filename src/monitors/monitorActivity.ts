import { randomUUID } from 'node:crypto';
import { Errors } from '../contract/errors.js';
import { EventRing, type EventPage, type EventPosition } from './eventRing.js';
import type { EventFrame, MonitorEventSink } from './eventSink.js';
import type { FacePayload, KnownTrack, ProcessedFrame } from './frameProcessor.js';
import type {
  ExitReason,
  MonitorEventT,
  MonitorFaceT,
  MonitorStateT,
  RtspCause,
  SessionEndReason,
} from '../contract/monitors.js';
import type { MonitorRecord } from './model.js';
import type { GateTrack } from './motionGate.js';
import { Tracker, type TrackEvent } from './tracker.js';
import { boxCentre, ZoneTracker } from './zones.js';
import type { TrackFaces } from './trackFaces.js';

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
  private processingMs: number | null = null;
  private lateFrames = 0;
  private ignoredFaces = 0;
  /** Frames the motion gate let pass without inference since the last processed one (not "dropped"). */
  private gatedSinceProcessed = 0;
  private lastGated = 0;
  /** Wall clock (ms) of the last processed frame. */
  lastInferenceAt: number | null = null;
  private readonly zones: ZoneTracker;
  /** Tracks whose enter was emitted (and whose exit will be): only they raise zone events. */
  private readonly announced = new Set<string>();
  lastError: ErrorInfo | null = null;
  /** The frame each live track was last seen in, for the snapshot of its exit (the sink's frame). */
  private readonly trackFrames = new Map<string, { frame: EventFrame; at: number }>();

  constructor(
    private record: MonitorRecord,
    readonly epoch: string,
    private readonly sink: MonitorEventSink | null = null,
    /** Frame banks, track-level identity and unknown visitors (issue 42); null: every frame on its own. */
    private readonly trackFaces: TrackFaces | null = null,
  ) {
    this.ring = new EventRing(epoch, record.event_buffer_size);
    this.tracker = new Tracker<FacePayload>(record.event_policy, () => randomUUID(), trackFaces?.decide ?? null);
    this.zones = new ZoneTracker(record.zones);
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

  /** The motion gate passed over this frame (counted once; not a dropped frame). */
  frameGated(sequence: number): void {
    if (sequence <= this.lastGated || sequence <= this.lastProcessed) return;
    this.lastGated = sequence;
    this.gatedSinceProcessed++;
  }

  /** The open tracks as the motion gate needs them. */
  gateTracks(): GateTrack[] {
    return this.tracker
      .open()
      .map((t) => ({ box: t.box, confirmed: t.confirmed, blocked: t.kind === 'liveness_blocked' }));
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
    this.trackFaces?.frame(result.threshold, result.rank ?? null, frame);
    // The faces as their tracks identify them (the frame's own identity without track-level identity).
    const { events, trackIds, decided: detections } = this.tracker.update(result.detections, now);
    // Where each face is now; the changes of tracks announced before this frame are zone events below.
    const changes = trackIds.map((id, i) => this.zones.observe(id, boxCentre(detections[i]!.box)));
    this.faces = detections.map((d, i) => ({
      status: d.kind,
      face: d.payload.face,
      person: d.payload.person,
      similarity: d.payload.similarity,
      matched_face_id: d.payload.matched_face_id,
      track_id: trackIds[i]!,
      zones: this.zones.inside(trackIds[i]!),
    }));
    const wasAnnounced = new Set(trackIds.filter((id) => this.announced.has(id)));
    const enteredNow = new Set(events.filter((e) => e.type.endsWith('_enter')).map((e) => e.trackId));
    // Exits (absent, identity_changed) leave the zones a face was in (also those it left in this frame).
    this.emitTrackEvents(events, frame, (id) => [
      ...this.zones.inside(id),
      ...(changes[trackIds.indexOf(id)]?.left ?? []),
    ]);
    trackIds.forEach((id, i) => {
      if (!wasAnnounced.has(id) || !this.announced.has(id) || enteredNow.has(id)) return;
      const c = changes[i]!;
      for (const zone of c.left) this.pushZone('zone_exit', id, detections[i]!.payload, zone, 'left_zone');
      for (const zone of c.entered) this.pushZone('zone_enter', id, detections[i]!.payload, zone);
    });
    if (this.record.zones.length) this.zones.retain(new Set(this.tracker.open().map((t) => t.id)));
    this.trackFaces?.retain(new Set(this.tracker.open().map((t) => t.id)));
    if (this.sink && frame) for (const id of trackIds) this.trackFrames.set(id, { frame, at: now });
    this.processed++;
    this.embeddedFaces += result.embedded ?? 0;
    this.reusedIdentities += result.reused ?? 0;
    this.ignoredFaces += result.ignored ?? 0;
    if (this.lastGated === sequence) this.gatedSinceProcessed--; // gated first, inferred at its keep-alive
    this.dropped += Math.max(0, sequence - this.lastProcessed - 1 - this.gatedSinceProcessed);
    this.gatedSinceProcessed = 0;
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
    // Tracks that expired before they were confirmed leave no exit; their zone state goes with them.
    if (this.record.zones.length) this.zones.retain(new Set(this.tracker.open().map((t) => t.id)));
    this.trackFaces?.retain(new Set(this.tracker.open().map((t) => t.id)));
    // Tracks that ended without an exit (never confirmed) leave their frame here: drop what is stale.
    const stale = now - this.record.event_policy.absence_timeout_seconds * 1000 - 1000;
    for (const [id, f] of this.trackFrames) if (f.at < stale) this.trackFrames.delete(id);
  }

  /** The session ends: every announced track exits now, with `reason` (an enter never stays without its exit). */
  end(reason: SessionEndReason): void {
    this.emitTrackEvents(this.tracker.end(reason), null);
    this.zones.retain(new Set());
    this.trackFaces?.retain(new Set());
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
    base: {
      status: string;
      startedAt: number;
      threshold: number | null;
      preview: MonitorStateT['preview'];
      motion: MonitorStateT['motion'];
    },
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
        ignored_faces: this.ignoredFaces,
      },
      threshold: base.threshold,
      faces: this.faces,
      matched_faces: this.faces.filter((f) => f.status === 'matched').length,
      unknown_faces: this.faces.filter((f) => f.status === 'unknown').length,
      liveness_blocked_faces: this.faces.filter((f) => f.status === 'liveness_blocked').length,
      preview: base.preview,
      motion: base.motion,
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

  /** The face fields every identity and zone event carries (unknown_id and identity: issue 42). */
  private faceFields(trackId: string, p: FacePayload) {
    const unknownId = this.trackFaces?.unknownId(trackId) ?? null;
    return {
      track_id: trackId,
      person: p.person,
      similarity: p.similarity,
      threshold: p.threshold,
      matched_face_id: p.matched_face_id,
      face: p.face,
      ...(unknownId ? { unknown_id: unknownId } : {}),
      ...(p.identity ? { identity: p.identity } : {}),
    };
  }

  private pushZone(
    type: 'zone_enter' | 'zone_exit',
    trackId: string,
    p: FacePayload,
    zone: string,
    reason?: ExitReason,
  ): void {
    this.push(type, {
      ...this.faceFields(trackId, p),
      zone,
      zones: this.zones.visited(trackId),
      ...(reason ? { reason } : {}),
    });
  }

  /**
   * Enters carry the current frame and are followed by a zone_enter per zone the face is in; exits carry the
   * frame their track was last seen in and follow a zone_exit per zone it was in (`inside`: those zones).
   */
  private emitTrackEvents(
    events: TrackEvent<FacePayload>[],
    current: EventFrame | null,
    inside: (trackId: string) => string[] = (id) => this.zones.inside(id),
  ): void {
    for (const e of events) {
      const p = e.payload;
      const exit = e.type.endsWith('_exit');
      const frame = exit ? (this.trackFrames.get(e.trackId)?.frame ?? null) : current;
      if (exit) {
        this.trackFrames.delete(e.trackId);
        for (const zone of new Set(inside(e.trackId))) this.pushZone('zone_exit', e.trackId, p, zone, e.reason);
        this.announced.delete(e.trackId);
      }
      // An unknown track gets its unknown visitor before its enter is pushed, and ends the visit after its exit.
      if (!exit) this.trackFaces?.entered(e, Date.now());
      this.push(
        e.type,
        {
          ...this.faceFields(e.trackId, p),
          zones: this.zones.visited(e.trackId),
          ...(exit ? { reason: e.reason ?? null } : {}),
        },
        frame,
      );
      if (exit) this.trackFaces?.exited(e, Date.now());
      if (!exit) {
        this.announced.add(e.trackId);
        for (const zone of this.zones.inside(e.trackId)) this.pushZone('zone_enter', e.trackId, p, zone);
      }
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
