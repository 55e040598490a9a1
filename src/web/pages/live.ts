import type { MonitorPageResponse, MonitorStateResponse, MonitorT } from '../../contract/monitors.js';
import { api, enc, type Wire } from '../api.js';
import { cameraPath, downCause, faceThumb, lastArrival, statusBadge, whoOf } from '../cameras.js';
import { fmt, h, replace } from '../dom.js';
import { LivePreview } from '../preview.js';
import { tileParams } from '../previewBudget.js';
import type { PageContext } from '../router.js';
import { errorBox, every } from '../ui.js';

/** One camera's tile: its live picture, how it is doing, and who arrived last. */
class Tile {
  readonly element: HTMLAnchorElement;
  private readonly view: HTMLElement;
  private readonly down: HTMLElement;
  private readonly badge: HTMLElement;
  private readonly fps: HTMLElement;
  private readonly event: HTMLElement;
  private readonly thumb: ReturnType<typeof faceThumb>;
  private preview: LivePreview | null = null;
  private params = { fps: 1, width: 480 };
  private onScreen = true;

  constructor(
    private m: MonitorT,
    private readonly signal: AbortSignal,
  ) {
    this.view = h('div', { class: 'tile-view' });
    this.down = h('div', { class: 'tile-down', role: 'status', 'data-testid': 'camera-cause' });
    this.badge = h('span');
    this.fps = h('span', { class: 'tile-fps muted', 'data-testid': 'camera-fps' });
    this.thumb = faceThumb(signal);
    this.event = h('span', { class: 'tile-event-text muted', 'data-testid': 'camera-last-event' }, 'No arrivals yet');
    this.element = h(
      'a',
      { class: 'tile', href: cameraPath(m.id), 'data-monitor-id': m.id, 'aria-label': `Camera ${m.name}` },
      h('div', { class: 'tile-frame' }, this.view, this.down),
      h('div', { class: 'tile-head' }, h('strong', { class: 'tile-name' }, m.name), this.badge, this.fps),
      h('div', { class: 'tile-event' }, this.thumb.img, this.event),
    );
    this.update(m);
  }

  /** The monitor as the list says it now: starts or stops the picture, shows why there is none. */
  update(m: MonitorT): void {
    this.m = m;
    this.badge.replaceChildren(statusBadge(m.runtime.status, m.runtime.connected));
    const cause = downCause(m);
    this.down.textContent = cause ?? '';
    this.down.hidden = cause === null;
    // A camera that is down has no picture to send (the preview would answer 503 until it is back).
    const streaming = m.enabled && m.preview_enabled && cause === null;
    if (streaming && !this.preview) {
      this.preview = new LivePreview(m.id, { params: this.params, stallMs: 15_000 });
      this.view.replaceChildren(this.preview.element);
      this.preview.setVisible(this.onScreen && !document.hidden);
      this.preview.start();
    } else if (!streaming && this.preview) {
      this.stop();
      this.view.replaceChildren();
    }
  }

  setParams(params: { fps: number; width: number }): void {
    this.params = params;
    this.preview?.setParams(params);
  }

  setVisible(onScreen: boolean): void {
    this.onScreen = onScreen;
    this.preview?.setVisible(onScreen && !document.hidden);
  }

  async refresh(): Promise<void> {
    const [state, last] = await Promise.allSettled([
      api<Wire<typeof MonitorStateResponse>>('GET', `/v1/monitors/${enc(this.m.id)}/state`, undefined, this.signal),
      lastArrival(this.m.id, this.signal),
    ]);
    if (state.status === 'fulfilled') {
      const s = state.value.state;
      this.fps.textContent =
        s.connected && s.source.source_fps !== null ? `${fmt.num(s.source.source_fps, 1)} fps` : '';
      this.fps.title = `Analysed ${fmt.num(s.inference.actual_fps, 1)} of ${s.inference.configured_fps} frames/s`;
    }
    if (last.status === 'fulfilled') {
      const e = last.value;
      this.thumb.set(e);
      this.event.textContent = e
        ? `${whoOf(e)} · ${new Date(e.occurred_at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}`
        : 'No arrivals yet';
    }
  }

  stop(): void {
    this.preview?.stop();
    this.preview = null;
  }
}

/**
 * Home: every camera live on one screen. Each tile asks the server for its own width and a rate that keeps
 * the whole grid within one camera's preview budget (previewBudget.ts); tiles off screen or in a hidden tab
 * close their stream. A click opens the camera's page.
 */
export async function livePage(ctx: PageContext): Promise<HTMLElement> {
  const grid = h('div', { class: 'camera-grid', 'data-testid': 'camera-grid' });
  const messages = h('div');
  const tiles = new Map<string, Tile>();
  const visibility = new IntersectionObserver((entries) => {
    for (const e of entries) tiles.get((e.target as HTMLElement).dataset.monitorId!)?.setVisible(e.isIntersecting);
  });
  const budget = () => {
    const first = grid.firstElementChild as HTMLElement | null;
    if (!first || !tiles.size) return;
    const params = tileParams(tiles.size, first.clientWidth, window.devicePixelRatio || 1);
    for (const t of tiles.values()) t.setParams(params);
  };
  const resize = new ResizeObserver(budget);
  resize.observe(grid);
  const onVisibility = () => {
    for (const t of tiles.values()) t.setVisible(true);
  };
  document.addEventListener('visibilitychange', onVisibility);
  ctx.signal.addEventListener(
    'abort',
    () => {
      for (const t of tiles.values()) t.stop();
      visibility.disconnect();
      resize.disconnect();
      document.removeEventListener('visibilitychange', onVisibility);
    },
    { once: true },
  );

  const load = async () => {
    let monitors: MonitorT[];
    try {
      monitors = (await api<Wire<typeof MonitorPageResponse>>('GET', '/v1/monitors?limit=100', undefined, ctx.signal))
        .monitors;
      messages.replaceChildren();
    } catch (e) {
      if (!ctx.signal.aborted) messages.replaceChildren(errorBox(e));
      return;
    }
    const ids = new Set(monitors.map((m) => m.id));
    for (const [id, t] of tiles)
      if (!ids.has(id)) {
        t.stop();
        visibility.unobserve(t.element);
        t.element.remove();
        tiles.delete(id);
      }
    for (const m of monitors) {
      let t = tiles.get(m.id);
      if (t) t.update(m);
      else {
        t = new Tile(m, ctx.signal);
        tiles.set(m.id, t);
        visibility.observe(t.element);
      }
      grid.append(t.element); // in list order
    }
    if (!monitors.length)
      replace(
        grid,
        h(
          'p',
          { class: 'muted empty' },
          'No cameras yet. ',
          h('a', { href: '/monitors' }, 'Add one on the Monitors page.'),
        ),
      );
    else grid.querySelector(':scope > p.empty')?.remove();
    budget();
  };
  const refresh = () => Promise.all([...tiles.values()].map((t) => t.refresh().catch(() => undefined)));
  await load();
  void refresh();
  every(5000, ctx.signal, load);
  every(5000, ctx.signal, refresh);
  return h('div', { class: 'live' }, h('h1', { class: 'visually-hidden' }, 'Live'), messages, grid);
}
