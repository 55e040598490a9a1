import { createRequire } from 'node:module';

/** One decoded RGB frame (tightly packed, 3 bytes per pixel). */
export interface Frame {
  /** The reader's frames copy their pixels out of GStreamer on the first read (FramePixels). */
  readonly data: Uint8Array;
  /**
   * The reader's frames: copies the packed RGB pixels into `target` (width x height x 3 bytes) without
   * making a JS view of GStreamer's buffer (see PixelSource), unless they were read already.
   */
  copyInto?(target: Uint8Array): void;
  /**
   * After copyInto: `keep` keeps the pixels readable for later (a frame with faces may become an event
   * snapshot), else GStreamer's buffer goes back as soon as the reader has moved past this frame.
   */
  settle?(keep: boolean): void;
  width: number;
  height: number;
  /** 1, 2, ... per session: gaps seen by inference are the dropped frames. */
  sequence: number;
  /** Wall clock (ms) when it reached us. */
  at: number;
}

/** A small grey frame (the motion branch), packed, one byte per pixel. */
export interface GreyFrame {
  data: Uint8Array;
  width: number;
  height: number;
}

export interface FrameSourceOptions {
  /** The [monitors].pipeline template; `{latency_ms}`, `{max_fps}` and `{max_side}` are substituted, the URL is set as src.location. */
  pipeline: string;
  latencyMs: number;
  /** Frames per second the pipeline lets through to conversion ({max_fps}); default 30. */
  maxFps?: number;
  /** Longest side of the frames delivered ({max_side}); default 1280. */
  maxSide?: number;
  /** Height of the grey motion frames ({motion_height}, the appsink named motion); default 90. */
  motionHeight?: number;
  openTimeoutMs: number;
  readTimeoutMs: number;
  /**
   * What `{record}` in the template becomes: the event clips' branch before the decoder (clipPipeline.ts:
   * a tee into mp4mux and the appsink named record), or nothing. A pipeline whose only appsink is the one
   * named record (clipPipeline's recordPipeline) records without decoding.
   */
  record?: string;
}

export interface FrameSourceHandlers {
  /** Caps of the first frame (and on a change): size and the source frame rate when known. */
  caps(info: { width: number; height: number; fps: number | null }): void;
  /**
   * A frame for inference, its pixels still in GStreamer's buffer (see FramePixels: the handler releases
   * them when it no longer needs them, or they are released when collected). `decoded`: frames the decoder
   * produced on this connection so far (read from the element named `rate`, the videorate that drops the
   * surplus; without one, every frame is delivered); `sourceFps`: the source's rate when known (caps, or
   * measured from that counter). `grey`: the same moment as a small GRAY8 frame from the pipeline's `motion`
   * appsink (packed; valid during this call only: its buffer is reused), or null without that branch.
   */
  frame(
    pixels: FramePixels,
    width: number,
    height: number,
    decoded: number,
    sourceFps: number | null,
    grey: GreyFrame | null,
  ): void;
  /** The source stopped by itself (timeout, end of stream, error). Called once; the source is stopped. */
  failed(reason: string): void;
  /** Bytes of the appsink named record (mp4mux's fragmented MP4 of the encoded stream), in order. */
  encoded?(chunk: Uint8Array): void;
}

// The gstreamer-superficial surface we use (a native addon without type declarations).
interface GstElement {
  [property: string]: unknown;
}
/** Our build's addition (vendor/README.md): a pulled sample, its pixels still in GStreamer's buffer. */
interface GstSample {
  /** Bytes of the buffer; 0 once released. */
  readonly size: number;
  /** The pixels in a new Buffer. Throws once released. */
  copy(): Buffer;
  /**
   * The pixels without a copy: a Buffer over GStreamer's mapped buffer, which it keeps (outliving
   * release()) until V8 collects it; V8 counts it as external memory. Throws once released.
   */
  view(): Buffer;
  /** Hands the buffer back to GStreamer now (idempotent); otherwise when the sample is collected. */
  release(): void;
  /** Copies the pixels into `target` at byte `offset` (no new Buffer); returns the byte count. Throws once released or when it does not fit. */
  copyTo(target: Uint8Array, offset?: number): number;
}
interface GstAppSink {
  /**
   * Our build's addition: the next sample (null at end of stream) without copying its pixels, and its caps
   * as an object that stays the same object while the caps do.
   */
  pullSample(cb: (sample: GstSample | null, caps: Record<string, unknown>) => void): void;
}
interface GstPipeline {
  play(): void;
  stop(): void;
  /** Our build's addition (vendor/README.md): frees the native pipeline now instead of never. */
  dispose(): void;
  findChild(name: string): (GstElement & Partial<GstAppSink>) | undefined;
}
interface GstModule {
  Pipeline: new (launch: string) => GstPipeline;
}

let gst: GstModule | null = null;
let livePipelines = 0;
/** Native pipelines created and not yet disposed: one per running source, whatever the reconnect count. */
export const liveNativePipelines = (): number => livePipelines;
/** Loaded on first use so the daemon starts (and answers 503 stream errors) even without GStreamer. */
function gstreamer(): GstModule {
  gst ??= createRequire(import.meta.url)('gstreamer-superficial') as GstModule;
  return gst;
}

/** "25/1" -> 25; "0/1" (unknown) -> null. */
export function parseFramerate(v: unknown): number | null {
  const m = typeof v === 'string' ? /^(\d+)\/(\d+)$/.exec(v) : null;
  if (!m || Number(m[1]) === 0 || Number(m[2]) === 0) return null;
  return Math.round((Number(m[1]) / Number(m[2])) * 1000) / 1000;
}

/**
 * One connection attempt: a GStreamer pipeline (rtspsrc -> decode -> RGB -> appsink with max-buffers=1
 * drop=true, so GStreamer itself keeps only the newest frame) pulled one buffer at a time. GStreamer's
 * bus is not polled (gstreamer-superficial's pollBus parks a libuv thread forever); instead open and
 * read timeouts, and the appsink's end of stream, tell that the source is gone.
 */
export class GstFrameSource {
  private pipeline: GstPipeline | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private stopped = false;
  private lastFrameAt = 0;
  private readonly startedAt = Date.now();
  private lastCaps: Record<string, unknown> | null = null;
  private lastCapsKey = '';
  /** A pull is parked in libuv's pool; the pipeline is disposed only once it has come back. */
  private pulling = false;
  /** The same for the record appsink's own pull. */
  private recordPulling = false;

  constructor(
    private readonly url: string,
    private readonly options: FrameSourceOptions,
    private readonly handlers: FrameSourceHandlers,
  ) {}

  /** Throws when the pipeline template cannot be built (a configuration error, not a source error). */
  start(): void {
    const launch = this.options.pipeline
      .replaceAll('{latency_ms}', String(this.options.latencyMs))
      .replaceAll('{max_fps}', String(Math.max(1, Math.ceil(this.options.maxFps ?? 30))))
      .replaceAll('{max_side}', String(this.options.maxSide ?? 1280))
      .replaceAll('{motion_height}', String(this.options.motionHeight ?? 90))
      .replaceAll('{record}', this.options.record ?? '');
    const pipeline = new (gstreamer().Pipeline)(launch);
    livePipelines++;
    const src = pipeline.findChild('src');
    const sink = pipeline.findChild('sink');
    const rate = pipeline.findChild('rate');
    // Optional: the event clips' muxed encoded stream, pulled on its own (its buffers come at the stream's
    // full rate, in bursts of one key frame interval, unrelated to the decoded frames').
    const recordSink = pipeline.findChild('record');
    const record = recordSink?.pullSample && this.handlers.encoded ? recordSink : null;
    // Optional: the motion branch (a tee after the rate limiter, scaled down and GRAY8). Its appsink gets
    // the same frames in the same streaming thread, so its sample of a frame is there (or comes next)
    // when the RGB one has been pulled: one parked pull per source, never two.
    const motionSink = pipeline.findChild('motion');
    const motion = motionSink?.pullSample ? motionSink : null;
    let grey = new Uint8Array(0);
    let delivered = 0;
    let rateStart: { at: number; in: number } | null = null;
    let measuredFps: number | null = null;
    let firstAt: number | null = null;
    let capsFps: number | null = null;
    if (!src || (!sink?.pullSample && !record)) {
      pipeline.dispose();
      livePipelines--;
      throw new Error('the monitor pipeline needs elements named src and sink (an appsink)');
    }
    src.location = this.url;
    this.pipeline = pipeline;
    let width = 0,
      height = 0;
    const onSample = (sample: GstSample | null, caps: Record<string, unknown>) => {
      this.pulling = false;
      if (this.stopped) {
        sample?.release();
        this.dispose();
        return;
      }
      if (!sample) {
        this.fail('the stream ended');
        return;
      }
      this.lastFrameAt = Date.now();
      const sink = frames!;
      // The addon hands the same caps object while the caps stay the same.
      if (caps !== this.lastCaps) {
        this.lastCaps = caps;
        width = Number(caps.width);
        height = Number(caps.height);
        const key = `${width}x${height}@${String(caps.framerate)}`;
        if (key !== this.lastCapsKey) {
          this.lastCapsKey = key;
          capsFps = parseFramerate(caps.framerate);
          const limitedCaps = rate !== undefined && capsFps !== null && capsFps >= Math.ceil(this.options.maxFps ?? 30);
          this.handlers.caps({ width, height, fps: limitedCaps ? null : capsFps });
        }
      }
      delivered++;
      // Behind a videorate the caps say the limited rate; the decoder's own count tells the source's.
      let decoded = delivered;
      if (rate) {
        decoded = Number(rate.in) || delivered;
        const now = this.lastFrameAt;
        // Measured from one second after the first frame (the jitter buffer releases a burst at the start).
        if (!rateStart) firstAt ??= now;
        if (!rateStart && now - firstAt! >= 1000) rateStart = { at: now, in: decoded };
        else if (rateStart && now - rateStart.at >= 2000)
          measuredFps = Math.round((((decoded - rateStart.in) * 1000) / (now - rateStart.at)) * 10) / 10;
      }
      const limited = rate !== undefined && capsFps !== null && capsFps >= Math.ceil(this.options.maxFps ?? 30);
      const usable = width > 0 && height > 0 && sample.size >= width * 3 * height;
      const deliver = (g: GreyFrame | null) => {
        if (usable)
          this.handlers.frame(
            new FramePixels(sample, width, height),
            width,
            height,
            decoded,
            limited ? measuredFps : capsFps,
            g,
          );
        else sample.release();
        if (this.stopped) {
          this.dispose(); // a frame handler stopped the source
          return;
        }
        this.pulling = true;
        sink.pullSample!(onSample);
      };
      if (!motion || !usable) {
        deliver(null);
        return;
      }
      this.pulling = true;
      motion.pullSample!((m, mcaps) => {
        this.pulling = false;
        if (this.stopped) {
          m?.release();
          sample.release();
          this.dispose();
          return;
        }
        if (!m) {
          sample.release();
          this.fail('the stream ended');
          return;
        }
        const gw = Number(mcaps.width),
          gh = Number(mcaps.height);
        let g: GreyFrame | null = null;
        if (gw > 0 && gh > 0 && m.size >= gw * gh) {
          if (grey.length < m.size) grey = new Uint8Array(m.size);
          m.copyTo(grey);
          g = { data: packRows(grey.subarray(0, m.size), gw, gh, 1)!, width: gw, height: gh };
        }
        m.release();
        deliver(g);
      });
    };
    const onRecord = (sample: GstSample | null) => {
      this.recordPulling = false;
      if (this.stopped) {
        sample?.release();
        this.dispose();
        return;
      }
      if (!sample) {
        // Beside decoding, the frames' own appsink tells when the stream ended: the record branch never
        // takes the camera down.
        if (!frames) this.fail('the stream ended');
        return;
      }
      // A record-only pipeline is alive while its muxer writes (in bursts, one key frame interval each).
      if (!frames) this.lastFrameAt = Date.now();
      const bytes = sample.copy();
      sample.release();
      this.handlers.encoded!(bytes);
      if (this.stopped) {
        this.dispose();
        return;
      }
      this.recordPulling = true;
      record!.pullSample!(onRecord);
    };
    const frames = sink?.pullSample ? sink : null;
    // Playing first: a pull that reaches an appsink which has not started yet returns "end of stream".
    pipeline.play();
    if (frames) {
      this.pulling = true;
      frames.pullSample!(onSample);
    }
    if (record) {
      this.recordPulling = true;
      record.pullSample!(onRecord);
    }
    this.watch();
  }

  /**
   * The open / read timeout: one timer set for the moment the source would time out, set again for the
   * new moment when frames came meanwhile (a timer per timeout period instead of a check every 250 ms).
   */
  private watch(): void {
    if (this.stopped) return;
    const now = Date.now();
    const left =
      this.lastFrameAt === 0
        ? this.startedAt + this.options.openTimeoutMs - now
        : this.lastFrameAt + this.options.readTimeoutMs - now;
    if (left > 0) {
      this.watchdog = setTimeout(() => this.watch(), left + 1);
      return;
    }
    this.watchdog = null;
    this.fail(
      this.lastFrameAt === 0
        ? `no frame within ${this.options.openTimeoutMs / 1000} s of connecting`
        : `no frame for ${this.options.readTimeoutMs / 1000} s`,
    );
  }

  /** Idempotent. Stopping the pipeline also releases a pull that is waiting for a frame. */
  stop(): void {
    this.stopped = true;
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    this.pipeline?.stop();
    this.dispose();
  }

  /**
   * Frees the native pipeline (about 1.4 MB for an RTSP decode chain), which the upstream addon never
   * did: one leaked per reconnect. Not while a pull is parked: its worker still reads the appsink.
   */
  private dispose(): void {
    if (!this.pipeline || this.pulling || this.recordPulling) return;
    this.pipeline.dispose();
    this.pipeline = null;
    livePipelines--;
  }

  private fail(reason: string): void {
    if (this.stopped) return;
    this.stop();
    this.handlers.failed(reason);
  }
}

/**
 * The pixels of one pulled frame, still in GStreamer's buffer. `read()` returns them as tightly packed RGB,
 * the same array on every call: a view of GStreamer's buffer when its rows are packed already (1280x720:
 * no copy; the buffer goes back to its pool when V8 collects the view), else a packed copy; `release()`
 * hands the buffer back unread. Most frames are never read (the inference loop takes the newest one when a
 * worker is free; below the pipeline's max_fps the others are only counted), and a frame that is not read
 * costs JS nothing: upstream's pull copied every frame into a new Buffer, 2.7 MB at 1280x720 of new V8
 * external memory per frame, whose growth made V8 run a full garbage collection every second or two with
 * a few streams (see vendor/README.md).
 */
export class FramePixels {
  private data: Uint8Array | null = null;
  private pinned = false;
  private releaseAsked = false;

  constructor(
    private sample: GstSample | null,
    readonly width: number,
    readonly height: number,
  ) {}

  /** Throws when the pixels were released unread. */
  read(): Uint8Array {
    if (this.data) return this.data;
    if (!this.sample) throw new Error('the frame was released before it was read');
    const buf = this.sample.view();
    this.release();
    // The size was checked when the frame was pulled.
    this.data = packRgb(buf, this.width, this.height)!;
    return this.data;
  }

  /**
   * The packed pixels into `target`: straight from GStreamer's buffer when its rows are packed and nothing
   * has read them yet (no view, so nothing for V8 to count or collect), else from read().
   */
  copyInto(target: Uint8Array): void {
    if (!this.data && this.sample && this.sample.size === this.width * this.height * 3) {
      this.sample.copyTo(target);
      // Held until settle(): a newer frame must not release it while its result may still need it.
      this.pinned = true;
    } else target.set(this.read());
  }

  /** Ends copyInto's hold: `keep` reads the pixels (a view, as read() makes) so they outlive the sample. */
  settle(keep: boolean): void {
    if (!this.pinned) return;
    this.pinned = false;
    if (keep) this.read();
    else if (this.releaseAsked) this.release();
  }

  /** Idempotent; the pixels read so far stay readable. While copyInto's hold lasts, deferred to settle(). */
  release(): void {
    if (this.pinned) {
      this.releaseAsked = true;
      return;
    }
    this.sample?.release();
    this.sample = null;
  }
}

/** GStreamer pads RGB rows to 4 bytes; inference wants them packed. Null when the buffer is short. */
export function packRgb(buf: Buffer, width: number, height: number): Uint8Array | null {
  return packRows(buf, width, height, 3);
}

/**
 * Rows of `channels` bytes per pixel, padded by GStreamer to 4 bytes (RGB, GRAY8), packed: the buffer itself
 * when they are already, else a packed copy. Null when the buffer is short.
 */
export function packRows(buf: Uint8Array, width: number, height: number, channels: number): Uint8Array | null {
  const row = width * channels;
  if (!(width > 0 && height > 0) || buf.length < row * height) return null;
  if (buf.length === row * height) return new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
  const stride = Math.floor(buf.length / height);
  const out = new Uint8Array(row * height);
  for (let y = 0; y < height; y++) out.set(buf.subarray(y * stride, y * stride + row), y * row);
  return out;
}
