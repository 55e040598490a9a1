import type { Logger } from 'pino';
import { GstFrameSource, type Frame, type FrameSourceOptions } from './frameSource.js';

const MAX_BACKOFF_MS = 30_000;

export interface StreamReaderOptions extends FrameSourceOptions { reconnectDelayMs: number }

/** What the reader tells its session. */
export interface StreamReaderEvents {
  /** A new newest frame (also the first one after a (re)connect). */
  frame(frame: Frame): void;
  /** The first frame after start or after a failure. */
  connected(): void;
  /** The source failed; the reader retries by itself after `retryMs`. */
  failed(reason: string, retryMs: number): void;
}

/**
 * Reads one RTSP source: a GStreamer pipeline that keeps only the newest frame, reconnecting with
 * exponential backoff (doubling up to 30 s) after any failure. Knows nothing of inference or events.
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
  /** The newest frame of the current connection; null while disconnected. */
  latest: Frame | null = null;
  connected = false;
  sourceInfo: { width: number | null; height: number | null; source_fps: number | null } = { width: null, height: null, source_fps: null };

  constructor(
    private readonly url: string,
    private readonly options: StreamReaderOptions,
    private readonly events: StreamReaderEvents,
    private readonly log: Logger,
    private readonly monitorId: string,
  ) {
    this.backoffMs = options.reconnectDelayMs;
  }

  /** Throws only when the pipeline cannot be built at all (configuration). */
  start(): void {
    this.connect(true);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.source?.stop();
    this.source = null;
    this.latest = null;
  }

  /** Some connection attempt has failed since start (so a disconnected reader is retrying, not starting). */
  get hasFailed(): boolean { return this.everFailed; }
  get counters(): { frameSequence: number; decoded: number; reconnects: number; lastFrameAt: number | null } {
    return { frameSequence: this.frameSequence, decoded: this.decoded, reconnects: this.failures, lastFrameAt: this.lastFrameAt };
  }

  private connect(initial: boolean): void {
    this.reconnectTimer = null;
    if (this.stopped) return;
    const source = new GstFrameSource(this.url, this.options, {
      caps: (info) => {
        this.sourceInfo = { width: info.width, height: info.height, source_fps: info.fps };
      },
      frame: (data, width, height) => this.onFrame(data, width, height),
      failed: (reason) => this.onFailed(reason),
    });
    try {
      source.start();
    } catch (e) {
      if (initial) throw e;
      this.onFailed(`the pipeline could not start: ${(e as Error).message}`);
      return;
    }
    this.source = source;
  }

  private onFrame(data: Uint8Array, width: number, height: number): void {
    if (this.stopped) return;
    const now = Date.now();
    this.frameSequence++;
    this.decoded++;
    const frame: Frame = { data, width, height, sequence: this.frameSequence, at: now };
    this.latest = frame;
    this.lastFrameAt = now;
    if (!this.connected) {
      this.connected = true;
      this.backoffMs = this.options.reconnectDelayMs;
      this.events.connected();
    }
    this.events.frame(frame);
  }

  private onFailed(reason: string): void {
    if (this.stopped) return;
    this.source = null;
    this.connected = false;
    this.everFailed = true;
    this.latest = null;
    this.failures++;
    const retryMs = this.backoffMs;
    this.log.warn({ monitor_id: this.monitorId, reason, retry_ms: retryMs }, 'monitor source unavailable');
    this.events.failed(reason, retryMs);
    this.reconnectTimer = setTimeout(() => this.connect(false), retryMs);
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
  }
}
