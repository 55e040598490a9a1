import type { Logger } from 'pino';
import {
  GstFrameSource,
  type Frame,
  type FrameSourceOptions,
  type FramePixels,
  type GreyFrame,
} from './frameSource.js';
import { probeRtsp, type ProbeResult, type RtspCause } from './rtspProbe.js';

const MAX_BACKOFF_MS = 30_000;

export interface StreamReaderOptions extends FrameSourceOptions {
  reconnectDelayMs: number;
  /**
   * Event clips: what `{record}` becomes for the codec the probe read from the SDP (clipPipeline.ts's
   * recordTee), or null when clips cannot be recorded from it. When set, every attempt probes before its
   * pipeline (the first one too), since the branch depends on the codec.
   */
  recordFor?: ((codec: string | null) => string | null) | undefined;
}

/** What the reader tells its session. */
export interface StreamReaderEvents {
  /**
   * A new newest frame (also the first one after a (re)connect), with its small grey copy from the motion
   * branch when the pipeline has one (valid during this call only).
   */
  frame(frame: Frame, grey: GreyFrame | null): void;
  /** The first frame after start or after a failure. */
  connected(): void;
  /** The source failed for `cause`; the reader retries by itself after `retryMs`. */
  failed(cause: RtspCause, reason: string, retryMs: number): void;
  /**
   * Bytes of the record branch's muxer (fragmented MP4), in order; `connection` changes with each pipeline
   * (a new one starts with its own init segment). Only with `recordFor`.
   */
  encoded?(chunk: Uint8Array, connection: number): void;
  /** A pipeline started without the record branch: its codec (null: unknown) has no clips. */
  notRecordable?(codec: string | null): void;
}

/**
 * Reads one RTSP source: a GStreamer pipeline that keeps only the newest frame, reconnecting after any
 * failure. Knows nothing of inference or events.
 *
 * Causes: every attempt is checked by `probeRtsp` (DNS, connect, one DESCRIBE), beside the first
 * pipeline and before each later one, so a refused connection, an unknown host, a 404 mount, a 401, a
 * server that is not RTSP or a stream without video fails at once with its cause instead of after the
 * open timeout. A pipeline that fails although the probe passed is a `timeout` (or the stream ended).
 *
 * Retries: while the probe already knows the cause, the next attempt is only a probe, every
 * `reconnectDelayMs` (cheap: a name lookup and a connect), so a source that comes back is found within
 * that delay and its pipeline starts at once. Failures of the pipeline itself back off exponentially
 * (doubling up to 30 s), since each builds a whole decode chain.
 */
export class StreamReader {
  private source: GstFrameSource | null = null;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private backoffMs: number;
  private stopped = false;
  private everFailed = false;
  private frameSequence = 0;
  private decoded = 0;
  private failures = 0;
  private lastFrameAt: number | null = null;
  /** Bumped per attempt: a probe or a pipeline of an older attempt is ignored. */
  private attempt = 0;
  /** The newest frame of the current connection; null while disconnected. */
  latest: Frame | null = null;
  /**
   * The newest frame delivered, kept across failures: its pixels stay readable until a newer frame
   * supersedes it (the superseded frame's pixels are handed back to GStreamer unless already read).
   */
  newest: Frame | null = null;
  private newestPixels: FramePixels | null = null;
  connected = false;
  /** The cause of the current outage (null while connected or before the first failure). */
  cause: RtspCause | null = null;
  sourceInfo: { width: number | null; height: number | null; source_fps: number | null } = {
    width: null,
    height: null,
    source_fps: null,
  };

  constructor(
    private readonly url: string,
    private readonly options: StreamReaderOptions,
    private readonly events: StreamReaderEvents,
    private readonly log: Logger,
    private readonly monitorId: string,
    private readonly probe: (url: string, timeoutMs: number) => Promise<ProbeResult> = probeRtsp,
  ) {
    this.backoffMs = options.reconnectDelayMs;
  }

  /** Throws only when the pipeline cannot be built at all (configuration). */
  start(): void {
    const attempt = ++this.attempt;
    if (this.options.recordFor) {
      this.retry(attempt);
      return;
    }
    this.startPipeline(attempt, true);
    // Beside the first pipeline: a definite cause stops it before its open timeout.
    void this.probe(this.url, this.options.openTimeoutMs).then((r) => {
      if (!r.ok && attempt === this.attempt && !this.stopped && !this.connected)
        this.fail(attempt, r.cause, r.detail, false);
    });
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.attempt++;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.source?.stop();
    this.source = null;
    this.latest = null;
  }

  /** Some connection attempt has failed since start (so a disconnected reader is retrying, not starting). */
  get hasFailed(): boolean {
    return this.everFailed;
  }
  get counters(): { frameSequence: number; decoded: number; reconnects: number; lastFrameAt: number | null } {
    return {
      frameSequence: this.frameSequence,
      decoded: this.decoded,
      reconnects: this.failures,
      lastFrameAt: this.lastFrameAt,
    };
  }

  /** A retry: the probe first, and a pipeline only when the source answers. */
  private retry(first?: number): void {
    this.reconnectTimer = null;
    if (this.stopped) return;
    const attempt = first ?? ++this.attempt;
    void this.probe(this.url, this.options.openTimeoutMs).then((r) => {
      if (attempt !== this.attempt || this.stopped) return;
      if (!r.ok) this.fail(attempt, r.cause, r.detail, false);
      else this.startPipeline(attempt, false, r.codec ?? null);
    });
  }

  private startPipeline(attempt: number, initial: boolean, codec: string | null = null): void {
    let connectionDecoded = 0;
    const record = this.options.recordFor?.(codec) ?? null;
    if (this.options.recordFor && record === null) this.events.notRecordable?.(codec);
    const options = { ...this.options, record: record ?? '' };
    const source = new GstFrameSource(this.url, options, {
      ...(record !== null && {
        encoded: (chunk: Uint8Array) => {
          if (attempt === this.attempt) this.events.encoded?.(chunk, attempt);
        },
      }),
      caps: (info) => {
        if (attempt === this.attempt)
          this.sourceInfo = { width: info.width, height: info.height, source_fps: info.fps };
      },
      frame: (pixels, width, height, decoded, sourceFps, grey) => {
        if (attempt !== this.attempt) {
          pixels.release();
          return;
        }
        this.decoded += Math.max(0, decoded - connectionDecoded);
        connectionDecoded = decoded;
        if (sourceFps !== null) this.sourceInfo.source_fps = sourceFps;
        this.onFrame(pixels, width, height, grey);
      },
      failed: (reason) => {
        if (attempt === this.attempt) this.pipelineFailed(attempt, reason);
      },
    });
    try {
      source.start();
    } catch (e) {
      if (initial) throw e;
      this.fail(attempt, 'timeout', `the pipeline could not start: ${(e as Error).message}`, true);
      return;
    }
    this.source = source;
  }

  /** The pipeline gave up (no frame in time, end of stream): the probe tells whether the source is gone. */
  private pipelineFailed(attempt: number, reason: string): void {
    this.source = null;
    this.connected = false;
    this.latest = null;
    void this.probe(this.url, this.options.openTimeoutMs).then((r) => {
      if (attempt !== this.attempt || this.stopped) return;
      if (!r.ok) this.fail(attempt, r.cause, r.detail, false);
      else this.fail(attempt, 'timeout', reason, true);
    });
  }

  private onFrame(pixels: FramePixels, width: number, height: number, grey: GreyFrame | null): void {
    if (this.stopped) {
      pixels.release();
      return;
    }
    const now = Date.now();
    this.frameSequence++;
    // The pixels are copied into JS only when someone reads `data` (inference, preview, snapshots).
    const frame: Frame = {
      get data() {
        return pixels.read();
      },
      copyInto: (target) => pixels.copyInto(target),
      settle: (keep) => pixels.settle(keep),
      width,
      height,
      sequence: this.frameSequence,
      at: now,
    };
    const superseded = this.newestPixels;
    this.newestPixels = pixels;
    this.newest = frame;
    superseded?.release();
    this.latest = frame;
    this.lastFrameAt = now;
    if (!this.connected) {
      this.connected = true;
      this.cause = null;
      this.backoffMs = this.options.reconnectDelayMs;
      this.events.connected();
    }
    this.events.frame(frame, grey);
  }

  /** Ends `attempt` with `cause`; a pipeline failure backs off, a probe failure retries at the base delay. */
  private fail(attempt: number, cause: RtspCause, reason: string, backOff: boolean): void {
    if (this.stopped || attempt !== this.attempt) return;
    this.attempt++;
    this.source?.stop();
    this.source = null;
    this.connected = false;
    this.everFailed = true;
    this.latest = null;
    this.failures++;
    const retryMs = backOff ? this.backoffMs : this.options.reconnectDelayMs;
    if (backOff) this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    // One warning per outage and per change of cause, not one per retry.
    if (cause !== this.cause)
      this.log.warn({ monitor_id: this.monitorId, cause, reason, retry_ms: retryMs }, 'monitor source unavailable');
    this.cause = cause;
    this.events.failed(cause, reason, retryMs);
    this.reconnectTimer = setTimeout(() => this.retry(), retryMs);
  }
}
