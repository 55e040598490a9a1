import { ApiFailure, ensureOk, enc, send } from './api.js';
import { h } from './dom.js';
import { MultipartParser, boundaryOf } from './mjpegParser.js';
import { drawOverlay, type OverlayFace } from './overlay.js';
import { overlayOf, partFrame, type PartFrame, type Recognised } from './previewParts.js';

export type { Recognised } from './previewParts.js';

/** Rate and size a client asks the server for (the grid asks for less than a full view). */
export interface PreviewParams {
  fps?: number;
  width?: number;
}

export interface PreviewOptions {
  /** Status line for people ("connecting", "preview disabled", ...). */
  onStatus?: (text: string, level: 'ok' | 'warn' | 'error') => void;
  /** The names of the last analysed frame (an empty list once nothing has been analysed for a while). */
  onRecognised?: (faces: Recognised[]) => void;
  /** No frame for this long: the stream is dropped and opened again. */
  stallMs?: number;
  /** Boxes over the faces (default true). */
  boxes?: boolean;
  /** Asked again at every (re)connect; setParams() reconnects when they change. */
  params?: PreviewParams;
}

interface Shown {
  url: string;
  frame: PartFrame;
}

/** Names are dropped when no analysed frame came for this long (the face left, or the gate stopped looking). */
const RECOGNISED_TTL_MS = 3000;

/**
 * The live MJPEG preview of one monitor, with each frame's own boxes. The stream is read with fetch (the
 * credential goes in a header or the session cookie, never in a URL), each JPEG becomes an object URL, and
 * the previous one is revoked as soon as the next has decoded: at most two are alive, so a kiosk running for
 * months does not grow. A part's X-Faces are drawn when that part is on screen and cleared with the next
 * one: a box is never shown over a frame it was not found on. The element says which frame is shown and
 * which frame the drawn boxes belong to (data-frame-seq, data-boxes-seq). Errors and stream ends reconnect
 * with backoff; setVisible(false) closes the stream until visible again; stop() ends everything.
 */
export class LivePreview {
  readonly element: HTMLElement;
  /** Two pictures: the one on screen and the one decoding behind it (swapped with the boxes in one step). */
  private readonly imgs: [HTMLImageElement, HTMLImageElement];
  private front = 0;
  private readonly canvas: HTMLCanvasElement;
  private readonly stopped = new AbortController();
  private stream: AbortController | null = null;
  private shown: Shown | null = null;
  private loading: Shown | null = null;
  private queued: { body: Uint8Array; frame: PartFrame } | null = null;
  private overlay: OverlayFace[] = [];
  private lastFrameAt = 0;
  private lastAnalysedAt = 0;
  private hasNames = false;
  private frames = 0;
  private timers: number[] = [];
  private visible = true;
  private wakeUp: (() => void) | null = null;
  private params: PreviewParams;
  private readonly resize = new ResizeObserver(() => this.redraw());

  constructor(
    private readonly monitorId: string,
    private readonly opts: PreviewOptions = {},
  ) {
    this.params = { ...opts.params };
    const img = () => h('img', { alt: `Live preview of monitor ${monitorId}`, class: 'preview-img' });
    this.imgs = [img(), img()];
    // Through the CSSOM: the page's CSP allows no style attributes.
    this.imgs[1].style.visibility = 'hidden';
    this.canvas = h('canvas', { class: 'preview-overlay', 'aria-hidden': 'true' });
    this.element = h(
      'div',
      { class: 'preview', 'data-frames': '0', 'data-frame-seq': '', 'data-boxes-seq': '', 'data-boxes': '0' },
      ...this.imgs,
      this.canvas,
    );
  }

  private get img(): HTMLImageElement {
    return this.imgs[this.front]!;
  }

  start(): this {
    void this.streamLoop();
    this.resize.observe(this.element);
    const stallMs = this.opts.stallMs ?? 10_000;
    this.timers.push(
      window.setInterval(() => {
        const now = Date.now();
        if (this.stream && this.lastFrameAt && now - this.lastFrameAt > stallMs) this.stream.abort();
        if (this.hasNames && now - this.lastAnalysedAt > RECOGNISED_TTL_MS) {
          this.hasNames = false;
          this.opts.onRecognised?.([]);
        }
      }, 1000),
    );
    return this;
  }

  stop(): void {
    this.stopped.abort();
    this.stream?.abort();
    this.wakeUp?.();
    this.resize.disconnect();
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const s of [this.shown, this.loading]) if (s) URL.revokeObjectURL(s.url);
    this.shown = this.loading = null;
    this.queued = null;
    for (const i of this.imgs) i.removeAttribute('src');
  }

  /** The picture on screen now (a still for the zone editor), or null before the first frame. */
  currentImage(): HTMLImageElement | null {
    return this.shown ? this.img : null;
  }

  /** Off screen (or the tab hidden): the stream is closed, so the server encodes nothing for it. */
  setVisible(visible: boolean): void {
    if (visible === this.visible) return;
    this.visible = visible;
    if (visible) this.wakeUp?.();
    else this.stream?.abort();
  }

  /** New rate or size (the tile changed): reconnects only when they differ. */
  setParams(params: PreviewParams): void {
    if (params.fps === this.params.fps && params.width === this.params.width) return;
    this.params = { ...params };
    this.stream?.abort();
  }

  private status(text: string, level: 'ok' | 'warn' | 'error'): void {
    this.opts.onStatus?.(text, level);
  }

  /** Sleeps unless stopped. The abort listener is removed when the timer fires: a kiosk sleeps ~2x a second for months. */
  private sleep(ms: number): Promise<void> {
    const signal = this.stopped.signal;
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(t);
        signal.removeEventListener('abort', wake);
        resolve();
      };
      const t = window.setTimeout(wake, ms);
      signal.addEventListener('abort', wake, { once: true });
    });
  }

  private url(): string {
    const q = new URLSearchParams();
    if (this.opts.boxes ?? true) q.set('boxes', 'true');
    if (this.params.fps) q.set('fps', String(this.params.fps));
    if (this.params.width) q.set('width', String(Math.round(this.params.width)));
    return `/v1/monitors/${enc(this.monitorId)}/preview.mjpeg?${q}`;
  }

  private async streamLoop(): Promise<void> {
    let backoff = 500;
    while (!this.stopped.signal.aborted) {
      if (!this.visible) {
        this.status('Paused', 'ok');
        await new Promise<void>((r) => (this.wakeUp = r));
        this.wakeUp = null;
        continue;
      }
      const controller = new AbortController();
      this.stream = controller;
      let gotFrame = false;
      // The stall watchdog also bounds a connect that never answers.
      this.lastFrameAt = Date.now();
      try {
        this.status('Connecting…', 'warn');
        // A camera that is not connected has no picture (the stream would answer 503, an error in the console
        // at every try): its state says so first, and the loop backs off.
        const state = await ensureOk(
          await send(`/v1/monitors/${enc(this.monitorId)}/state`, { signal: controller.signal }),
        );
        if (!((await state.json()) as { state: { connected: boolean } }).state.connected)
          throw new ApiFailure(503, 'stream_unavailable', 'The camera is not connected.');
        const res = await ensureOk(await send(this.url(), { signal: controller.signal }));
        const boundary = boundaryOf(res.headers.get('content-type'));
        if (!boundary || !res.body) throw new ApiFailure(502, 'bad_stream', 'The preview is not a multipart stream.');
        const parser = new MultipartParser(boundary);
        const reader = res.body.getReader();
        this.lastFrameAt = Date.now();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const part of parser.pushParts(value)) {
            if (!gotFrame) {
              gotFrame = true;
              backoff = 500;
              this.status('Live', 'ok');
            }
            this.lastFrameAt = Date.now();
            this.show(part.body, partFrame(part.headers));
          }
        }
        if (!this.stopped.signal.aborted && !controller.signal.aborted)
          this.status('The stream ended; reconnecting…', 'warn');
      } catch (e) {
        if (this.stopped.signal.aborted) break;
        const f = e instanceof ApiFailure ? e : null;
        if (!controller.signal.aborted || f)
          this.status(
            f ? `${f.message} (${f.code}); retrying…` : 'The stream stalled; reconnecting…',
            f && f.status !== 0 && f.status < 500 ? 'error' : 'warn',
          );
      } finally {
        controller.abort();
        this.stream = null;
      }
      // A pause or a change of parameters reconnects at once; a failure backs off.
      if (!this.visible || gotFrame) continue;
      await this.sleep(backoff);
      backoff = Math.min(backoff * 2, 10_000);
    }
  }

  /**
   * Decodes a JPEG part behind the picture on screen; while one is decoding only the newest waiting part is
   * kept.
   */
  private show(body: Uint8Array, frame: PartFrame): void {
    if (this.loading) {
      this.queued = { body, frame };
      return;
    }
    const loading = { url: URL.createObjectURL(new Blob([body as BlobPart], { type: 'image/jpeg' })), frame };
    this.loading = loading;
    const back = this.imgs[1 - this.front]!;
    back.src = loading.url;
    back.decode().then(
      () => this.onDecoded(loading, true),
      () => this.onDecoded(loading, false),
    );
  }

  /**
   * The decoded picture comes to the front and its boxes are drawn in the same task, so no paint shows a
   * picture with another frame's boxes.
   */
  private onDecoded(loading: Shown, ok: boolean): void {
    if (this.loading !== loading) {
      URL.revokeObjectURL(loading.url); // stopped meanwhile
      return;
    }
    this.loading = null;
    if (!ok) {
      URL.revokeObjectURL(loading.url);
      return this.showQueued();
    }
    const back = this.imgs[1 - this.front]!;
    back.style.visibility = '';
    this.img.style.visibility = 'hidden';
    this.front = 1 - this.front;
    if (this.shown) URL.revokeObjectURL(this.shown.url);
    this.shown = loading;
    this.frames++;
    const { faces, seq } = this.shown.frame;
    const drawn = faces ? overlayOf(faces) : null;
    // The boxes on screen are this frame's, or none.
    this.overlay = drawn?.overlay ?? [];
    const d = this.element.dataset;
    d.frames = String(this.frames);
    d.frameSeq = seq === null ? '' : String(seq);
    d.boxesSeq = this.overlay.length && seq !== null ? String(seq) : '';
    d.boxes = String(this.overlay.length);
    this.redraw();
    if (drawn) {
      this.lastAnalysedAt = Date.now();
      this.hasNames = drawn.recognised.length > 0;
      this.opts.onRecognised?.(drawn.recognised);
    }
    this.showQueued();
  }

  private showQueued(): void {
    const next = this.queued;
    this.queued = null;
    if (next) this.show(next.body, next.frame);
  }

  private redraw(): void {
    if (this.img.naturalWidth) drawOverlay(this.canvas, this.img, this.overlay);
  }
}
