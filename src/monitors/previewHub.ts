import sharp from 'sharp';

/** One MJPEG client. `write` returns false when its socket buffer is full (Node's backpressure). */
export interface PreviewViewer {
  write(jpeg: Buffer): boolean;
  /** Called when the socket has drained after `write` returned false. */
  onDrain(listener: () => void): void;
  end(): void;
}

interface ViewerState {
  viewer: PreviewViewer;
  busy: boolean;
  pending: Buffer | null;
}

/**
 * The MJPEG preview of one session. JPEGs are encoded only while at least one viewer watches, at most
 * `fps` per second, one encode at a time. Each viewer gets the newest JPEG: while its socket is still
 * busy with an older one, newer frames replace its single pending slot, so a slow viewer skips frames
 * instead of queueing them (memory stays bounded and the pipeline never waits for a client).
 */
export class PreviewHub {
  private readonly viewers = new Set<ViewerState>();
  private encoding = false;
  private lastEncodeAt = 0;
  private latest: Buffer | null = null;
  /** JPEGs encoded since the session started. */
  frames = 0;

  constructor(
    private readonly fps: number,
    private readonly quality: number,
  ) {}

  get viewerCount(): number {
    return this.viewers.size;
  }

  get active(): boolean {
    return this.viewers.size > 0;
  }

  add(viewer: PreviewViewer): () => void {
    const state: ViewerState = { viewer, busy: false, pending: null };
    this.viewers.add(state);
    viewer.onDrain(() => {
      state.busy = false;
      const next = state.pending;
      state.pending = null;
      if (next) this.send(state, next);
    });
    // A new viewer sees the current picture at once instead of waiting for the next encode.
    if (this.latest) this.send(state, this.latest);
    return () => {
      this.viewers.delete(state);
      // The last viewer leaving drops the cached JPEG.
      if (this.viewers.size === 0) this.latest = null;
    };
  }

  /**
   * Offered every decoded frame; encodes only when someone watches and the preview rate allows (only then
   * is `frame.data` read: reading copies the frame out of GStreamer's buffer).
   */
  offer(frame: { readonly data: Uint8Array; width: number; height: number }): void {
    if (this.viewers.size === 0 || this.encoding) return;
    const now = performance.now();
    if (now - this.lastEncodeAt < 1000 / this.fps) return;
    this.lastEncodeAt = now;
    this.encoding = true;
    const { width, height } = frame;
    sharp(frame.data, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: this.quality })
      .toBuffer()
      .then(
        (jpeg) => {
          this.encoding = false;
          if (this.viewers.size === 0) return;
          this.latest = jpeg;
          this.frames++;
          for (const v of this.viewers) this.send(v, jpeg);
        },
        () => {
          this.encoding = false;
        },
      );
  }

  /** Ends every viewer's response (the session stopped). */
  close(): void {
    for (const v of this.viewers) v.viewer.end();
    this.viewers.clear();
    this.latest = null;
  }

  private send(state: ViewerState, jpeg: Buffer): void {
    if (state.busy) {
      state.pending = jpeg;
      return;
    }
    state.busy = !state.viewer.write(jpeg);
  }
}
