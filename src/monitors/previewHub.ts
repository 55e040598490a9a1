import sharp from 'sharp';
import type { MonitorFaceT } from '../contract/monitors.js';
import type { PreviewFaceT } from '../contract/preview.js';

/** One JPEG of the stream: the frame it shows and, when that frame was analysed, the faces found on it. */
export interface PreviewPart {
  jpeg: Buffer;
  /** The session's frame sequence number (1, 2, ...). */
  seq: number;
  /** The faces of this very frame; null when it was not analysed (a client draws nothing on it). */
  faces: PreviewFaceT[] | null;
}

/** One MJPEG client. `write` returns false when its socket buffer is full (Node's backpressure). */
export interface PreviewViewer {
  write(part: PreviewPart): boolean;
  /** Called when the socket has drained after `write` returned false. */
  onDrain(listener: () => void): void;
  end(): void;
}

/** What a client asks for (the preview URL's query). */
export interface ViewerOptions {
  /** Frames per second at most; the hub's own rate caps it. */
  fps?: number | null;
  /** Width at most (never upscaled), rounded up to WIDTH_STEP. */
  width?: number | null;
  /** Boxes: while faces are in view, the analysed frames with their faces instead of the newest frames. */
  boxes?: boolean | null;
}

/** The faces of an analysed frame as the boxed preview carries them. */
export function previewFaces(faces: readonly MonitorFaceT[]): PreviewFaceT[] {
  return faces.map((f) => ({
    status: f.status,
    box: (({ left, top, width, height }) => ({ left, top, width, height }))(f.face.bbox.normalized),
    person: f.person ? { id: f.person.id, name: f.person.name } : null,
    similarity: f.similarity,
  }));
}

/** Requested widths are rounded up to a multiple of this, so tiles of similar size share one encode. */
export const WIDTH_STEP = 160;

/** The width a client gets for a frame `frameWidth` wide: null is the frame's own size. */
export function encodeWidth(requested: number | null | undefined, frameWidth: number): number | null {
  if (!requested) return null;
  const w = Math.ceil(requested / WIDTH_STEP) * WIDTH_STEP;
  return w >= frameWidth ? null : w;
}

/**
 * Paces one client at `fps`: a frame is due when its time has come (a tenth of an interval early counts, for
 * the jitter of the source), and the next one is an interval later, but at least half an interval after
 * now (after a pause there is no burst to catch up). With frames at 6/s and 5 asked, 5 of every 6 go out.
 */
export class Pacer {
  private next: number | null = null;
  constructor(private readonly intervalMs: number) {}
  due(now: number): boolean {
    return this.next === null || now >= this.next - this.intervalMs / 10;
  }
  sent(now: number): void {
    const i = this.intervalMs;
    this.next = this.next === null ? now + i : Math.max(this.next + i, now + i / 2);
  }
}

/**
 * How long after the last analysed frame with faces the boxed clients keep getting analysed frames: a few
 * inference intervals, or one and a half of the gap seen between analysed frames (the motion gate analyses a
 * face that stands still only at its keep-alive), so the boxes do not flicker off between two analyses of
 * the same face; at most 4 s, the longest a picture may stand still.
 */
export function followMs(inferenceIntervalMs: number, gapMs = 0): number {
  return Math.min(4000, Math.max(1000, 3 * inferenceIntervalMs, 1.5 * gapMs));
}

interface ViewerState {
  viewer: PreviewViewer;
  pacer: Pacer;
  width: number | null;
  boxes: boolean;
  busy: boolean;
  pending: PreviewPart | null;
  /** The newest frame sent: never an older one after it. */
  lastSeq: number;
}

interface Source {
  data: Uint8Array;
  width: number;
  height: number;
  seq: number;
  faces: PreviewFaceT[] | null;
}

/**
 * The MJPEG preview of one session. JPEGs are encoded only while someone watches, each client at its own
 * rate and width (at most the hub's `fps`, never wider than the frame); clients of the same width share
 * one encode, and one batch of encodes runs at a time. Each client gets the newest JPEG: while its socket
 * is busy with an older one, newer parts replace its single pending slot, so a slow client skips frames
 * instead of queueing them (memory stays bounded and the pipeline never waits for a client).
 *
 * Boxes belong to their frame: the session offers every decoded frame (`offer`) and, after inference, the
 * analysed frame with its faces (`offerAnalysed`). Clients that draw boxes get the analysed frames while
 * faces are in view (a frame's boxes travel with that frame), and the newest frames otherwise.
 */
export class PreviewHub {
  private readonly viewers = new Set<ViewerState>();
  private encoding = false;
  /** An analysed frame that came while a batch was encoding: encoded right after it. */
  private queued: Source | null = null;
  /** Per width (0: full size): the newest JPEG of a frame that was not analysed, for a client that joins. */
  private latest = new Map<number, PreviewPart>();
  /** The clock time until which boxed clients follow the analysed frames. */
  private facesUntil = 0;
  /** When the last analysed frame came (the gap to the next one sets how long boxes are followed). */
  private lastAnalysedAt: number | null = null;
  /** The width of the frames offered last (which width a joining client's cached JPEG has). */
  private frameWidth = 0;
  /** JPEGs encoded since the session started. */
  frames = 0;
  /** JPEG bytes encoded since the session started. */
  bytes = 0;

  constructor(
    private readonly fps: number,
    private readonly quality: number,
    /** The clock (tests drive their own). */
    private readonly now: () => number = () => performance.now(),
  ) {}

  get viewerCount(): number {
    return this.viewers.size;
  }

  get active(): boolean {
    return this.viewers.size > 0;
  }

  /**
   * Whether the next analysed frames go to a client, so their pixels must stay readable after inference
   * (a frame without faces is otherwise handed back to GStreamer unread).
   */
  get wantsAnalysed(): boolean {
    return this.now() < this.facesUntil && [...this.viewers].some((v) => v.boxes);
  }

  add(viewer: PreviewViewer, options: ViewerOptions = {}): () => void {
    const fps = Math.min(this.fps, options.fps ?? this.fps);
    const state: ViewerState = {
      viewer,
      pacer: new Pacer(1000 / fps),
      width: options.width ?? null,
      boxes: options.boxes ?? false,
      busy: false,
      pending: null,
      lastSeq: 0,
    };
    this.viewers.add(state);
    viewer.onDrain(() => {
      state.busy = false;
      const next = state.pending;
      state.pending = null;
      if (next) this.send(state, next);
    });
    // A new client sees the current picture at once instead of waiting for the next encode.
    const cached = this.latest.get(encodeWidth(state.width, this.frameWidth) ?? 0);
    if (cached) {
      state.pacer.sent(this.now());
      this.send(state, cached);
    }
    return () => {
      this.viewers.delete(state);
      // The last client leaving drops the cached JPEGs.
      if (this.viewers.size === 0) this.latest.clear();
    };
  }

  /**
   * Offered every decoded frame; encodes only for the clients that are due (only then is `frame.data`
   * read: reading copies the frame out of GStreamer's buffer).
   */
  offer(frame: { readonly data: Uint8Array; width: number; height: number; sequence: number }): void {
    if (this.viewers.size === 0 || this.encoding) return;
    const now = this.now();
    const following = now < this.facesUntil;
    const due = [...this.viewers].filter(
      (v) => !(v.boxes && following) && v.lastSeq < frame.sequence && v.pacer.due(now),
    );
    if (!due.length) return;
    let data: Uint8Array;
    try {
      data = frame.data;
    } catch {
      return; // released by a newer frame meanwhile
    }
    void this.encode({ data, width: frame.width, height: frame.height, seq: frame.sequence, faces: null }, due, now);
  }

  /**
   * The frame inference ran on, with the faces found on it (`intervalMs`: the inference interval). Boxed
   * clients get it while faces are in view; a frame whose pixels are gone is skipped.
   */
  offerAnalysed(
    frame: { readonly data: Uint8Array; width: number; height: number; sequence: number },
    faces: PreviewFaceT[],
    intervalMs: number,
  ): void {
    if (this.viewers.size === 0) return;
    const now = this.now();
    const gap = this.lastAnalysedAt === null ? 0 : now - this.lastAnalysedAt;
    this.lastAnalysedAt = now;
    if (faces.length) this.facesUntil = now + followMs(intervalMs, gap);
    if (now >= this.facesUntil || ![...this.viewers].some((v) => v.boxes)) return;
    let data: Uint8Array;
    try {
      data = frame.data;
    } catch {
      return;
    }
    const source = { data, width: frame.width, height: frame.height, seq: frame.sequence, faces };
    if (this.encoding) {
      this.queued = source;
      return;
    }
    this.encodeAnalysed(source, now);
  }

  /** Ends every client's response (the session stopped). */
  close(): void {
    for (const v of this.viewers) v.viewer.end();
    this.viewers.clear();
    this.latest.clear();
    this.queued = null;
  }

  private encodeAnalysed(source: Source, now: number): void {
    const due = [...this.viewers].filter((v) => v.boxes && v.lastSeq < source.seq && v.pacer.due(now));
    if (due.length) void this.encode(source, due, now);
  }

  /** One JPEG per distinct width among `due`, each sent to the clients of that width. */
  private async encode(source: Source, due: ViewerState[], now: number): Promise<void> {
    this.encoding = true;
    this.frameWidth = source.width;
    for (const v of due) v.pacer.sent(now);
    const byWidth = new Map<number, ViewerState[]>();
    for (const v of due) {
      const w = encodeWidth(v.width, source.width) ?? 0;
      byWidth.set(w, [...(byWidth.get(w) ?? []), v]);
    }
    try {
      await Promise.all(
        [...byWidth].map(async ([w, clients]) => {
          let img = sharp(source.data, { raw: { width: source.width, height: source.height, channels: 3 } });
          if (w) img = img.resize({ width: w });
          const jpeg = await img.jpeg({ quality: this.quality }).toBuffer();
          this.frames++;
          this.bytes += jpeg.length;
          const part: PreviewPart = { jpeg, seq: source.seq, faces: source.faces };
          if (!source.faces) this.latest.set(w, part);
          for (const v of clients) if (this.viewers.has(v)) this.send(v, part);
        }),
      );
    } catch {
      // A frame that cannot be encoded is skipped; the next one is tried.
    } finally {
      this.encoding = false;
    }
    const queued = this.queued;
    this.queued = null;
    if (queued && this.viewers.size) this.encodeAnalysed(queued, this.now());
  }

  private send(state: ViewerState, part: PreviewPart): void {
    if (part.seq <= state.lastSeq) return;
    state.lastSeq = part.seq;
    if (state.busy) {
      state.pending = part;
      return;
    }
    state.busy = !state.viewer.write(part);
  }
}

/** JSON with every non-ASCII character escaped, so it can travel in a header line. */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** The multipart headers of one part: its frame number and, for an analysed frame, its faces. */
export function partHeaders(part: PreviewPart, boundary: string): string {
  const faces = part.faces ? `X-Faces: ${asciiJson(part.faces)}\r\n` : '';
  return `--${boundary}\r\nContent-Type: image/jpeg\r\nContent-Length: ${part.jpeg.length}\r\nX-Frame-Seq: ${part.seq}\r\n${faces}\r\n`;
}
