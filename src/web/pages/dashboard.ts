import type { HistoryEventPageResponse } from '../../contract/events.js';
import type { MonitorPageResponse } from '../../contract/monitors.js';
import type { HealthResponse, LivenessManagementResponse, SystemResponse } from '../../contract/system.js';
import { api, type Wire } from '../api.js';
import { cameraPath, downCause, faceThumb, statusBadge, whoOf, type CameraEvent } from '../cameras.js';
import { facts, fmt, h } from '../dom.js';
import type { PageContext } from '../router.js';
import { errorBox, every } from '../ui.js';

/** What Vigil's /v1/system puts inside the contract's open `runtime` and `cpu` objects (read defensively). */
interface RuntimeReport {
  available_execution_providers?: string[];
  execution_provider_report?: { name: string; available: boolean; reason: string }[];
  load_average?: number[];
  memory?: { free_bytes: number; total_bytes: number };
  rss_bytes?: number;
  memory_allocator?: string;
  inference_concurrency?: { active: number; waiting: number };
  uptime_seconds?: number;
}
interface CpuReport {
  model?: string;
  logical_cores?: number;
}
interface RecentError {
  at: string;
  status: number;
  code: string;
  path: string;
}

/** The cameras at a glance: each one's state, or why it shows nothing. */
function camerasCard(monitors: Wire<typeof MonitorPageResponse> | null, error: unknown): HTMLElement {
  const list = monitors?.monitors ?? [];
  const up = list.filter((m) => m.runtime.status === 'running' && m.runtime.connected).length;
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'd-cams' },
    h('h2', { id: 'd-cams' }, 'Cameras'),
    monitors
      ? [
          h(
            'p',
            { class: `big ${up === list.length ? 'ok' : 'warn'}`, 'data-testid': 'cameras-up' },
            list.length ? `${up} of ${list.length} streaming` : 'None yet',
          ),
          h(
            'ul',
            { class: 'plain camera-list' },
            list.map((m) =>
              h(
                'li',
                null,
                h('a', { href: cameraPath(m.id) }, m.name),
                ' ',
                statusBadge(m.runtime.status, m.runtime.connected),
                downCause(m) ? h('small', { class: 'muted' }, ` ${downCause(m)}`) : null,
              ),
            ),
          ),
          h('a', { href: '/' }, 'Watch them live'),
        ]
      : errorBox(error),
  );
}

/** The newest arrivals with their faces; re-rendered only when they change (the crops are fetched once). */
function recentEvents(signal: AbortSignal) {
  const list = h('ul', { class: 'plain recent-events', 'data-testid': 'recent-events' });
  const card = h(
    'section',
    { class: 'card', 'aria-labelledby': 'd-events' },
    h('h2', { id: 'd-events' }, 'Recent events'),
    list,
    h('a', { href: '/events' }, 'All events'),
  );
  let key = '';
  let scope = new AbortController();
  signal.addEventListener('abort', () => scope.abort(), { once: true });
  const set = (events: CameraEvent[] | null, error: unknown) => {
    if (!events) return list.replaceChildren(h('li', null, errorBox(error)));
    const k = events.map((e) => e.id).join();
    if (k === key) return;
    key = k;
    scope.abort();
    scope = new AbortController();
    list.replaceChildren(
      ...(events.length
        ? events.map((e) => {
            const thumb = faceThumb(scope.signal);
            thumb.set(e);
            return h(
              'li',
              null,
              thumb.img,
              h(
                'span',
                null,
                h('strong', null, whoOf(e)),
                h('br'),
                h('small', { class: 'muted' }, `${e.monitor_id} · ${fmt.time(e.occurred_at)}`),
              ),
            );
          })
        : [h('li', { class: 'muted' }, 'No arrivals yet.')]),
    );
  };
  return { card, set };
}

/**
 * Cameras, recent arrivals and health at a glance, refreshed every 5 s; the model's execution-provider
 * report (why each unused provider is unavailable) stays behind a disclosure.
 */
export async function dashboardPage(ctx: PageContext): Promise<HTMLElement> {
  const body = h('div', { class: 'grid' });
  const events = recentEvents(ctx.signal);
  let providersOpen = false;
  const load = async () => {
    const [health, system, liveness, monitors, recent] = await Promise.allSettled([
      api<Wire<typeof HealthResponse>>('GET', '/v1/health', undefined, ctx.signal),
      api<Wire<typeof SystemResponse>>('GET', '/v1/system', undefined, ctx.signal),
      api<Wire<typeof LivenessManagementResponse>>('GET', '/v1/addons/liveness', undefined, ctx.signal),
      api<Wire<typeof MonitorPageResponse>>('GET', '/v1/monitors?limit=100', undefined, ctx.signal),
      api<Wire<typeof HistoryEventPageResponse>>(
        'GET',
        '/v1/events?limit=6&type=person_enter,unknown_enter',
        undefined,
        ctx.signal,
      ),
    ]);
    if (ctx.signal.aborted) return;
    const cards: HTMLElement[] = [];
    const hv = health.status === 'fulfilled' ? health.value : null;
    const ready = hv?.status === 'ready';
    // Degraded: serving, but the operator must act (e.g. a full disk); health says why.
    const degraded =
      hv?.status === 'degraded'
        ? ((hv as { reasons?: { message: string }[] }).reasons ?? []).map((r) => r.message).join(' ')
        : null;
    const vigilVersion = (hv as { vigil_version?: string } | null)?.vigil_version;
    cards.push(
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'd-ready' },
        h('h2', { id: 'd-ready' }, 'Status'),
        h(
          'p',
          { class: `big ${ready ? 'ok' : 'warn'}`, 'data-testid': 'readiness' },
          hv
            ? ready
              ? 'Ready'
              : degraded !== null
                ? `Degraded: ${degraded}`
                : 'Not ready (starting or unhealthy)'
            : 'Unreachable',
        ),
        facts([
          ['Version', hv ? `${vigilVersion ?? hv.version} (API ${hv.version})` : '—'],
          ['Authentication', hv ? (hv.auth_enabled ? 'on' : 'off') : '—'],
        ]),
      ),
    );
    cards.push(
      camerasCard(monitors.status === 'fulfilled' ? monitors.value : null, (monitors as { reason?: unknown }).reason),
    );
    events.set(recent.status === 'fulfilled' ? recent.value.events : null, (recent as { reason?: unknown }).reason);
    cards.push(events.card);
    if (system.status === 'fulfilled') {
      const s = system.value;
      const rt = s.runtime as RuntimeReport;
      const cpu = s.cpu as CpuReport;
      const la: number[] = rt.load_average ?? [];
      cards.push(
        h(
          'section',
          { class: 'card', 'aria-labelledby': 'd-host' },
          h('h2', { id: 'd-host' }, 'Health'),
          facts([
            [
              'Load (1/5/15 min)',
              h('span', { 'data-testid': 'load' }, la.length ? la.map((n) => n.toFixed(2)).join(' / ') : '—'),
            ],
            ['CPU', `${cpu.model ?? '—'} (${cpu.logical_cores ?? '?'} cores)`],
            [
              'Memory free',
              rt.memory ? `${fmt.bytes(rt.memory.free_bytes)} of ${fmt.bytes(rt.memory.total_bytes)}` : '—',
            ],
            [
              'Daemon memory (RSS)',
              rt.memory_allocator ? `${fmt.bytes(rt.rss_bytes)} (${rt.memory_allocator})` : fmt.bytes(rt.rss_bytes),
            ],
            [
              'Inference',
              rt.inference_concurrency
                ? `${rt.inference_concurrency.active} active, ${rt.inference_concurrency.waiting} waiting`
                : '—',
            ],
            [
              'Uptime',
              rt.uptime_seconds !== undefined
                ? `${Math.floor(rt.uptime_seconds / 3600)} h ${Math.floor((rt.uptime_seconds % 3600) / 60)} min`
                : '—',
            ],
            ['OS', `${s.os} ${s.architecture}`],
          ]),
        ),
      );
      const unavailable = (rt.execution_provider_report ?? []).filter((p) => !p.available);
      const details = h(
        'details',
        { class: 'providers', open: providersOpen },
        h('summary', null, `Provider details (${unavailable.length} not available here)`),
        facts([
          [
            'Available providers',
            h('span', { 'data-testid': 'providers-available' }, (rt.available_execution_providers ?? []).join(', ')),
          ],
          [
            'Not available here',
            h(
              'ul',
              { class: 'plain', 'data-testid': 'providers-unavailable' },
              ...unavailable.map((p) => h('li', null, h('strong', null, p.name), `: ${p.reason}`)),
            ),
          ],
        ]),
      );
      // The refresh keeps the disclosure as the user left it.
      details.addEventListener('toggle', () => (providersOpen = details.open));
      cards.push(
        h(
          'section',
          { class: 'card', 'aria-labelledby': 'd-model' },
          h('h2', { id: 'd-model' }, 'Model'),
          facts([
            ['Model pack', h('span', { 'data-testid': 'model-pack' }, s.model?.model_id ?? '—')],
            ['Model digest', h('code', null, String(s.model?.model_digest ?? '—').slice(0, 16))],
            ['Execution provider', h('span', { 'data-testid': 'provider' }, s.execution_provider ?? '—')],
            ['Embedding dimension', fmt.num(s.model?.embedding_dimension)],
            ['Collections', fmt.num(s.stats?.collection_count)],
            ['Persons', fmt.num(s.stats?.person_count)],
            ['Faces', fmt.num(s.stats?.face_count)],
          ]),
          details,
        ),
      );
      const errors = s.recent_errors as unknown as RecentError[];
      cards.push(
        h(
          'section',
          { class: 'card wide', 'aria-labelledby': 'd-errors' },
          h('h2', { id: 'd-errors' }, 'Recent errors'),
          errors.length
            ? h(
                'table',
                null,
                h(
                  'thead',
                  null,
                  h(
                    'tr',
                    null,
                    h('th', null, 'When'),
                    h('th', null, 'Status'),
                    h('th', null, 'Code'),
                    h('th', null, 'Path'),
                  ),
                ),
                h(
                  'tbody',
                  null,
                  errors.map((e) =>
                    h(
                      'tr',
                      null,
                      h('td', null, fmt.time(e.at)),
                      h('td', null, e.status),
                      h('td', null, h('code', null, e.code)),
                      h('td', null, e.path),
                    ),
                  ),
                ),
              )
            : h('p', { class: 'muted' }, 'None since the daemon started.'),
        ),
      );
    } else {
      cards.push(h('section', { class: 'card' }, h('h2', null, 'System'), errorBox(system.reason)));
    }
    if (liveness.status === 'fulfilled') {
      const l = liveness.value;
      cards.splice(
        1,
        0,
        h(
          'section',
          { class: 'card', 'aria-labelledby': 'd-live' },
          h('h2', { id: 'd-live' }, 'Liveness'),
          h(
            'p',
            { class: `big ${l.enabled ? 'ok' : 'muted'}`, 'data-testid': 'liveness' },
            l.enabled ? 'Enabled' : 'Disabled',
          ),
          l.restart_required ? h('p', { class: 'warn' }, 'A restart is needed to apply the configured setting.') : null,
          h('a', { href: '/system' }, 'Manage liveness'),
        ),
      );
    }
    body.replaceChildren(...cards);
  };
  await load();
  every(5000, ctx.signal, load);
  return h('div', null, h('h1', null, 'Dashboard'), body);
}
