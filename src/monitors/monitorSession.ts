import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { isApiError } from '../contract/errors.js';
import type { FrameProcessorDeps } from './frameProcessor.js';
import { FrameProcessor } from './frameProcessor.js';
import type { Frame } from './frameSource.js';
import type { EventPage, EventPosition } from './eventRing.js';
import type { MonitorEventSink } from './eventSink.js';
import { MonitorActivity, isoOrNull } from './monitorActivity.js';
import type { MonitorEventT, MonitorRuntimeT, MonitorStateT, SessionEndReason } from '../contract/monitors.js';
import type { MonitorRecord } from './model.js';
import { gateSettings, MotionGate, type GateStats, type MotionDefaults } from './motionGate.js';
import type { NormBox } from './motionDetector.js';
import { PreviewHub, previewFaces } from './previewHub.js';
import { StreamReader, type StreamReaderOptions } from './streamReader.js';
import { MainStream } from './mainStream.js';
import { trackFacesFor, type TrackFacesDefaults, type UnknownVisitors } from './trackFaces.js';
import type { GreyFrame } from './frameSource.js';
import { ClipRecorder, type ClipSink, type ClipSettings } from './clipRecorder.js';
import { RECORD_STALL_MS, recordTee } from './clipPipeline.js';
import { Fmp4Splitter } from './fmp4.js';
import type { VigilConfig } from '../config/schema.js';

/** [monitors.clips]: the event clips' defaults. */
export type ClipDefaults = VigilConfig['monitors']['clips'];

/** A monitor's clip settings: its overrides over the box's defaults; null when it records none. */
export function clipSettings(record: Pick<MonitorRecord, 'clips'>, d: ClipDefaults): ClipSettings | null {
  const o = record.clips;
  if (!(o?.enabled ?? d.enabled)) return null;
  return {
    preMs: (o?.pre_seconds ?? d.pre_seconds) * 1000,
    postMs: (o?.post_seconds ?? d.post_seconds) * 1000,
    maxMs: d.max_seconds * 1000,
  };
}

/** What a session needs from the rest of the daemon. */
export interface SessionDeps extends FrameProcessorDeps {
  source: StreamReaderOptions;
  preview: { fps: number; quality: number };
  /** [monitors] reidentify_interval_seconds in ms: how long a settled track's identity is reused (0: never). */
  reidentifyMs: number;
  log: Logger;
  /** The durable history and its outputs (MQTT, webhooks); every ring event also goes here. */
  events?: MonitorEventSink;
  /** [monitors.motion]: the motion gate's defaults. */
  motion: MotionDefaults;
  /** [monitors] track identity and unknown-visitor grouping (issue 42); absent: every frame on its own. */
  faces?: TrackFacesDefaults;
  /** Where announced unknown tracks are grouped (the events layer's UnknownService). */
  unknowns?: UnknownVisitors | null;
  /** [monitors.clips] and where clips are written (the events layer's ClipStore); absent: no clips. */
  clips?: ClipDefaults;
  clipSink?: ClipSink | null;
}

/** What a session tells its manager besides events (the MQTT motion topic). */
export interface SessionHooks {
  /** Motion started (true) or stopped after the off delay (false); false once more when the session ends while on. */
  motion?(active: boolean): void;
}

const box = ([left, top, width, height]: NormBox) => ({ left, top, width, height });

/** The monitor state's `motion`. */
export function motionState(s: GateStats, settings: ReturnType<typeof gateSettings>): MonitorStateT['motion'] {
  return {
    gate: settings.enabled,
    available: s.available,
    active: s.active,
    calibrating: s.calibrating,
    regions: s.regions.map(box),
    last_motion_at: isoOrNull(s.lastMotionAt),
    frames_analysed: s.framesAnalysed,
    motion_frames: s.motionFrames,
    inferences_skipped: s.skipped,
    inferences: { ...s.byReason },
    region_inferences: s.regionInferences,
    settings: {
      threshold: settings.threshold,
      min_area: settings.minArea,
      keepalive_seconds: settings.keepaliveMs / 1000,
      off_delay_seconds: settings.offDelayMs / 1000,
      regions: settings.regions,
    },
  };
}

/**
 * The later of two frames of one session (the reader's newest only moves forward; null before the first
 * frame). The reader's newest, even while disconnected: an older frame's pixels may have been released.
 */
function newer(newest: Frame | null, fallback: Frame): Frame {
  return newest && newest.sequence > fallback.sequence ? newest : fallback;
}

export type MonitorStatus = 'starting' | 'running' | 'reconnecting' | 'degraded' | 'stopped' | 'error';

/**
 * One running monitor: a `StreamReader` keeps the newest frame, and an inference loop takes the newest
 * unprocessed frame at most `inference_fps` times a second (never catching up on missed ones), runs it
 * through the `FrameProcessor` and hands the result to `MonitorActivity` (tracking, events, state). The
 * `MotionGate` sees every frame's grey copy as it arrives and tells the loop whether (and where) to run
 * the detector: at once when something moved, so the gate adds no wait to a face's first frame.
 */
export class MonitorSession {
  readonly epoch = randomUUID();
  readonly startedAt = Date.now();
  readonly preview: PreviewHub;
  private record: MonitorRecord;
  private readonly reader: StreamReader;
  private readonly processor: FrameProcessor;
  private readonly activity: MonitorActivity;
  private readonly gate: MotionGate;
  private readonly abort = new AbortController();
  private stopped = false;
  /** Ends the loop's current wait when a frame arrives (only while it waits for one). */
  private wake: (() => void) | null = null;
  /** Ends the loop's current wait (stop). */
  private interrupt: (() => void) | null = null;
  private loop: Promise<void> = Promise.resolve();
  /** The main stream, for event pictures, when detection reads the monitor's detect sub-stream. */
  private readonly main: MainStream | null = null;
  /** Event clips (null: off for this monitor); the muxer's bytes of the current connection are split here. */
  private readonly clips: ClipRecorder | null = null;
  private splitter: { connection: number; split: Fmp4Splitter } | null = null;

  constructor(
    record: MonitorRecord,
    private readonly deps: SessionDeps,
    private readonly hooks: SessionHooks = {},
  ) {
    this.record = record;
    const clips = deps.clips && deps.clipSink ? clipSettings(record, deps.clips) : null;
    if (clips) this.clips = new ClipRecorder(record.id, clips, deps.clipSink!);
    this.activity = new MonitorActivity(
      record,
      this.epoch,
      this.clips && deps.events ? this.withClips(deps.events, this.clips) : (deps.events ?? null),
      trackFacesFor(record, deps.faces, deps.unknowns ?? null, this.epoch),
    );
    this.gate = new MotionGate(gateSettings(record, deps.motion), (active) => {
      if (!this.stopped) hooks.motion?.(active);
    });
    this.processor = new FrameProcessor(deps);
    this.preview = new PreviewHub(deps.preview.fps, deps.preview.quality);
    // Only the frames this monitor uses are converted: its inference rate (or the preview's when higher),
    // plus one: videorate drop-only keeps a frame only when a full 1/max-rate has passed, so with RTP
    // timestamp jitter max-rate=5 on a 25 fps source keeps every 6th frame (4.0 fps measured); at 6 it
    // keeps every 5th and the loop's own pacing holds the configured rate.
    const maxFps = Math.ceil(Math.max(record.inference_fps, record.preview_enabled ? deps.preview.fps : 0)) + 1;
    const frames = { ...deps.source, maxFps, motionHeight: deps.motion.frame_height };
    if (record.detect_url) this.main = new MainStream(record.url, frames, deps.log, record.id);
    this.reader = new StreamReader(
      record.detect_url ?? record.url,
      {
        ...deps.source,
        maxFps,
        motionHeight: deps.motion.frame_height,
        ...(this.clips && { recordFor: recordTee }),
      },
      {
        frame: (frame, grey) => this.onFrame(frame, grey),
        connected: () => {
          this.clips?.connected();
          this.activity.clearError('source');
        },
        failed: (cause, reason, retryMs) => {
          this.clips?.streamEnded();
          this.activity.sourceFailed(cause, reason, retryMs);
        },
        encoded: (chunk, connection) => this.onEncoded(chunk, connection),
        notRecordable: (codec) =>
          deps.log.warn(
            { monitor_id: record.id, codec },
            'event clips are on but cannot be recorded from this stream (H.264 or H.265 with {record} in the pipeline)',
          ),
      },
      deps.log,
      record.id,
    );
  }

  get id(): string {
    return this.record.id;
  }

  /** The history sink with each event's clip: the recorder hears the event first (an enter starts a clip). */
  private withClips(sink: MonitorEventSink, clips: ClipRecorder): MonitorEventSink {
    return {
      event: (e, ctx) => sink.event(e, { ...ctx, clipId: clips.event(e) }),
      sessionEnded: (monitorId, epoch) => sink.sessionEnded(monitorId, epoch),
    };
  }

  /** The record branch's muxer output: the init segment starts a connection's pre-roll, fragments follow. */
  private onEncoded(chunk: Uint8Array, connection: number): void {
    const clips = this.clips;
    if (!clips || this.stopped) return;
    if (this.splitter?.connection !== connection) this.splitter = { connection, split: new Fmp4Splitter() };
    try {
      for (const part of this.splitter.split.push(chunk)) {
        if (part.kind === 'init') clips.start(part.data, part.info);
        else clips.fragment(part.fragment);
      }
    } catch (e) {
      // Bytes that are not the MP4 we expect: this connection records nothing more.
      this.deps.log.warn({ monitor_id: this.record.id, err: (e as Error).message }, 'event clip stream unreadable');
      this.splitter = { connection: -1, split: new Fmp4Splitter() };
      clips.streamEnded();
    }
  }

  /** Starts reading and inferring. Throws only when the pipeline cannot be built at all (configuration). */
  start(): void {
    this.reader.start();
    this.loop = this.inferenceLoop();
  }

  /**
   * Resolves when the inference loop has exited, i.e. no inference of this session is still running in a
   * worker (the engine must not be closed under one: terminating a worker mid-run aborts the process).
   */
  get finished(): Promise<void> {
    return this.loop;
  }

  /**
   * Ends the session; the faces in view exit now with `reason` (before the sink hears the session ended), so
   * no enter is left without its exit. An inference still running is discarded.
   */
  stop(reason: SessionEndReason): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.gate.stats().active) this.hooks.motion?.(false);
    this.activity.end(reason);
    this.clips?.close();
    this.deps.events?.sessionEnded(this.record.id, this.epoch);
    this.abort.abort(new Error('monitor stopped'));
    this.reader.stop();
    this.main?.close();
    this.preview.close();
    this.interrupt?.();
  }

  /**
   * name, description, preview_enabled, event_buffer_size, motion, motion_mask, face_mask and min_face_size
   * apply without a restart.
   */
  applyLive(record: MonitorRecord): void {
    this.record = record;
    this.gate.configure(gateSettings(record, this.deps.motion));
    this.activity.applyLive(record);
    if (!record.preview_enabled) this.preview.close();
  }

  get status(): MonitorStatus {
    if (this.stopped) return 'stopped';
    if (this.activity.hasError('source')) return 'reconnecting';
    if (!this.reader.connected) return this.reader.hasFailed ? 'reconnecting' : 'starting';
    return this.activity.hasError('inference') ? 'degraded' : 'running';
  }

  /** A frame to preview exists: the stream is connected and has delivered at least one frame. */
  get streaming(): boolean {
    return this.reader.connected && this.reader.latest !== null;
  }

  runtime(): MonitorRuntimeT {
    return {
      status: this.status,
      connected: this.reader.connected,
      stream_epoch: this.epoch,
      last_frame_at: isoOrNull(this.reader.counters.lastFrameAt),
      last_error: this.activity.lastError,
      preview_active: this.preview.active,
      preview_viewers: this.preview.viewerCount,
    };
  }

  state(threshold: number | null): MonitorStateT {
    const preview = {
      enabled: this.record.preview_enabled,
      active: this.preview.active,
      viewers: this.preview.viewerCount,
      frames: this.preview.frames,
    };
    const motion = motionState(this.gate.stats(), gateSettings(this.record, this.deps.motion));
    const state = this.activity.state(
      { status: this.status, startedAt: this.startedAt, threshold, preview, motion },
      this.reader,
    );
    const main = this.main;
    if (!main) return state;
    return {
      ...state,
      streams: {
        main_open: main.open,
        main: { ...main.size },
        pictures_from_main: main.counters.fromMain,
        pictures_from_detect: main.counters.fromDetect,
      },
    };
  }

  events(after: EventPosition | null, limit: number): EventPage<MonitorEventT> {
    return this.activity.events(after, limit);
  }

  private onFrame(frame: Frame, grey: GreyFrame | null): void {
    if (this.clips?.checkStall(frame.at))
      this.deps.log.warn(
        { monitor_id: this.record.id, silent_ms: RECORD_STALL_MS },
        'event clips stopped on this connection: the record branch (mp4mux) gave nothing while frames were decoded (e.g. frames without timestamps); detection goes on, the clip recording ended record_failed',
      );
    if (this.record.preview_enabled) this.preview.offer(frame);
    if (grey) this.gate.observe(grey.data, grey.width, grey.height, frame.at);
    this.wake?.();
  }

  private async inferenceLoop(): Promise<void> {
    let nextAllowed = 0;
    while (!this.stopped) {
      this.activity.expire(Date.now());
      this.gate.tick(Date.now());
      // Faces tracked (not mere motion: measured, opening it on motion cost more than it saved).
      this.main?.demand(this.activity.expiring, Date.now());
      const frame = this.reader.latest;
      const now = performance.now();
      if (!frame || frame.sequence <= this.activity.lastProcessedSequence) {
        await this.idle(250);
        continue;
      }
      if (now < nextAllowed) {
        // Open tracks are checked for their absence timeout every 250 ms; without any, nothing can change
        // before the next inference (at 0.1 fps: one wake-up per 10 s instead of 40).
        await this.idle(this.activity.expiring ? Math.min(nextAllowed - now, 250) : nextAllowed - now, false);
        continue;
      }
      const interval = 1000 / this.record.inference_fps;
      const decision = this.gate.decide(
        Date.now(),
        this.activity.gateTracks(),
        this.activity.lastInferenceAt,
        this.record.event_policy.absence_timeout_seconds * 1000,
      );
      if (!decision.infer) {
        // Nothing to look for: wait for the next frame (its motion) or the keep-alive, whichever comes first.
        this.gate.skippedOne(now, interval);
        this.activity.frameGated(frame.sequence);
        await this.idle(Math.max(1, Math.min(250, decision.dueAt - Date.now())));
        continue;
      }
      this.gate.inferring(decision.reason, decision.region);
      const started = performance.now();
      this.activity.inferenceStarted(started);
      try {
        // The frame is picked when a worker is free: the newest by then, not the one that woke the loop
        // (under load the wait for a worker would otherwise add to every event's delay).
        // Confirmed tracks identified less than reidentifyMs ago keep their identity when their face is
        // detected in nearly the same box: the worker skips those embeddings.
        const known = this.activity.knownTracks(Date.now(), this.deps.reidentifyMs);
        const result = await this.processor.process(
          () => this.keptForPreview(newer(this.reader.newest, frame)),
          this.record,
          this.abort.signal,
          known,
          decision.region,
        );
        if (this.stopped) break;
        this.activity.frameProcessed(
          result.frame.sequence,
          result,
          Date.now(),
          performance.now() - started,
          // Event pictures: the main stream's frame of the same moment when detection reads a sub-stream.
          this.main && result.detections.length > 0 ? this.main.pictureFor(result.frame) : result.frame,
        );
        // The analysed frame goes to the boxed previews with its own faces (boxes belong to their frame).
        if (this.preview.active && this.record.preview_enabled)
          this.preview.offerAnalysed(
            result.frame,
            previewFaces(this.activity.currentFaces),
            1000 / this.record.inference_fps,
          );
        this.activity.clearError('inference');
      } catch (e) {
        if (this.stopped) break;
        const message = isApiError(e) ? `${e.code}: ${e.message}` : (e as Error).message;
        this.activity.inferenceFailed(message);
        this.deps.log.warn({ monitor_id: this.record.id, err: message }, 'monitor inference failed');
      }
      // Never catch up: the next run waits for the interval or for this run to finish, whichever is later.
      nextAllowed = Math.max(started + interval, performance.now());
    }
  }

  /**
   * A frame about to be analysed: while a boxed preview follows the analysed frames its pixels are read now,
   * so they are still there after inference even when it finds no face (that frame must clear the boxes).
   */
  private keptForPreview(frame: Frame): Frame {
    if (this.preview.wantsAnalysed) {
      try {
        void frame.data;
      } catch {
        // Released already: the preview skips it.
      }
    }
    return frame;
  }

  /** Waits for `ms`, or (when `onFrame`) until a new frame arrives, or until stop(), whichever is first. */
  private idle(ms: number, onFrame = true): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = onFrame ? done : null;
      this.interrupt = done;
      if (this.stopped) done();
    }).then(() => {
      this.wake = null;
      this.interrupt = null;
    });
  }
}
