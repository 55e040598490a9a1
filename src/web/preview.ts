import { ApiFailure, api, ensureOk, enc, send } from './api.js';
import { h } from './dom.js';
import { MultipartParser, boundaryOf } from './mjpegParser.js';
import { drawOverlay, type OverlayFace } from './overlay.js';

/** One recognised face as the page lists it next to (or over) the video. */
export interface Recognised {
  name: string;
  kind: OverlayFace['kind'];
  similarity: number | null;
}

interface StateFace {
  status: 'matched' | 'unknown' | 'liveness_blocked';
  face: { bbox: { normalized: { left: number; top: number; width: number; height: number } } };
  person: { id: string; name: string | null } | null;
  similarity: number | null;
}

export function facesFromState(faces: StateFace[]): { overlay: OverlayFace[]; recognised: Recognised[] } {
  const overlay: OverlayFace[] = [];
  const recognised: Recognised[] = [];
  for (const f of faces) {
    const kind = f.status === 'matched' ? 'matched' : f.status === 'unknown' ? 'unknown' : 'blocked';
    const name = f.person ? (f.person.name ?? f.person.id) : kind === 'blocked' ? 'Liveness check failed' : 'Unknown';
    const label = f.similarity !== null && f.person ? `${name} ${f.similarity.toFixed(2)}` : name;
    overlay.push({ box: f.face.bbox.normalized, label, kind });
    recognised.push({ name, kind, similarity: f.similarity });
  }
  return { overlay, recognised };
}

export interface PreviewOptions {
  /** Status line for people ("connecting", "preview disabled", ...). */
  onStatus?: (text: string, level: 'ok' | 'warn' | 'error') => void;
  onRecognised?: (faces: Recognised[]) => void;
  statePollMs?: number;
  /** No frame for this long: the stream is dropped and opened again. */
  stallMs?: number;
}

/**
 * The live MJPEG preview of one monitor with overlays from /state. The stream is read with fetch (the key
 * goes in the Authorization header, never in a URL), each JPEG becomes an object URL, and the previous
 * one is revoked as soon as the next has decoded: at most two are alive, so a kiosk running for months
 * does not grow. Errors and stream ends reconnect with backoff; stop() aborts everything.
 */
export class LivePreview {
  readonly element: HTMLElement;
  private readonly img: HTMLImageElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly stopped = new AbortController();
  private stream: AbortController | null = null;
  private shownUrl: string | null = null;
  private loadingUrl: string | null = null;
  private queued: Uint8Array | null = null;
  private overlay: OverlayFace[] = [];
  private lastFrameAt = 0;
  private frames = 0;
  private timers: number[] = [];

  constructor(
    private readonly monitorId: string,
    private readonly opts: PreviewOptions = {},
  ) {
    this.img = h('img', { alt: `Live preview of monitor ${monitorId}`, class: 'preview-img' });
    this.canvas = h('canvas', { class: 'preview-overlay', 'aria-hidden': 'true' });
    this.element = h('div', { class: 'preview', 'data-frames': '0' }, this.img, this.canvas);
    this.img.addEventListener('load', () => this.onDecoded());
    this.img.addEventListener('error', () => this.onDecoded());
  }

  start(): this {
    void this.streamLoop();
    void this.stateLoop();
    const stallMs = this.opts.stallMs ?? 10_000;
    this.timers.push(
      window.setInterval(() => {
        if (this.stream && this.lastFrameAt && Date.now() - this.lastFrameAt > stallMs) this.stream.abort();
      }, 1000),
    );
    return this;
  }

  stop(): void {
    this.stopped.abort();
    this.stream?.abort();
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const u of [this.shownUrl, this.loadingUrl]) if (u) URL.revokeObjectURL(u);
    this.shownUrl = this.loadingUrl = null;
    this.queued = null;
    this.img.removeAttribute('src');
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

  private async streamLoop(): Promise<void> {
    let backoff = 500;
    while (!this.stopped.signal.aborted) {
      const controller = new AbortController();
      this.stream = controller;
      let gotFrame = false;
      // The stall watchdog also bounds a connect that never answers.
      this.lastFrameAt = Date.now();
      try {
        this.status('Connecting…', 'warn');
        const res = await ensureOk(
          await send(`/v1/monitors/${enc(this.monitorId)}/preview.mjpeg`, { signal: controller.signal }),
        );
        const boundary = boundaryOf(res.headers.get('content-type'));
        if (!boundary || !res.body) throw new ApiFailure(502, 'bad_stream', 'The preview is not a multipart stream.');
        const parser = new MultipartParser(boundary);
        const reader = res.body.getReader();
        this.lastFrameAt = Date.now();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          for (const part of parser.push(value)) {
            if (!gotFrame) {
              gotFrame = true;
              backoff = 500;
              this.status('Live', 'ok');
            }
            this.lastFrameAt = Date.now();
            this.show(part);
          }
        }
        if (!this.stopped.signal.aborted) this.status('The stream ended; reconnecting…', 'warn');
      } catch (e) {
        if (this.stopped.signal.aborted) break;
        const f = e instanceof ApiFailure ? e : null;
        this.status(
          f ? `${f.message} (${f.code}); retrying…` : 'The stream stalled; reconnecting…',
          f && f.status !== 0 && f.status < 500 ? 'error' : 'warn',
        );
      } finally {
        controller.abort();
        this.stream = null;
      }
      await this.sleep(backoff);
      if (!gotFrame) backoff = Math.min(backoff * 2, 10_000);
    }
  }

  /** Shows a JPEG part; while one is still decoding only the newest waiting part is kept. */
  private show(part: Uint8Array): void {
    if (this.loadingUrl) {
      this.queued = part;
      return;
    }
    this.loadingUrl = URL.createObjectURL(new Blob([part as BlobPart], { type: 'image/jpeg' }));
    this.img.src = this.loadingUrl;
  }

  private onDecoded(): void {
    if (!this.loadingUrl) return;
    if (this.shownUrl) URL.revokeObjectURL(this.shownUrl);
    this.shownUrl = this.loadingUrl;
    this.loadingUrl = null;
    this.frames++;
    this.element.dataset.frames = String(this.frames);
    this.redraw();
    const next = this.queued;
    this.queued = null;
    if (next) this.show(next);
  }

  private redraw(): void {
    if (this.img.naturalWidth) drawOverlay(this.canvas, this.img, this.overlay);
  }

  private async stateLoop(): Promise<void> {
    const every = this.opts.statePollMs ?? 500;
    while (!this.stopped.signal.aborted) {
      try {
        const r = await api<{ state: { faces: StateFace[] } }>(
          'GET',
          `/v1/monitors/${enc(this.monitorId)}/state`,
          undefined,
          this.stopped.signal,
        );
        const { overlay, recognised } = facesFromState(r.state.faces);
        this.overlay = overlay;
        this.opts.onRecognised?.(recognised);
        this.redraw();
      } catch {
        // The stream loop reports connection trouble; stale boxes are cleared instead of frozen.
        if (this.overlay.length) {
          this.overlay = [];
          this.opts.onRecognised?.([]);
          this.redraw();
        }
      }
      await this.sleep(every);
    }
  }
}
