import type { CollectionPageResponse } from '../../contract/collections.js';
import type { KioskTokenCreatedResponse, KioskTokenListResponse } from '../../contract/kiosk.js';
import type {
  MonitorEventPageResponse,
  MonitorPageResponse,
  MonitorResponse,
  MonitorStateResponse,
  MonitorT,
} from '../../contract/monitors.js';
import type { MonitorPipelinesResponse, MonitorTestResponse, MonitorTestResult } from '../../contract/settings.js';
import { ApiFailure, api, enc, session, type Wire } from '../api.js';
import { lastErrorText, statusBadge } from '../cameras.js';
import { facts, field, fmt, h } from '../dom.js';
import { idFromName, withCredentials } from '../names.js';
import { zoneEditor } from '../zoneEditor.js';
import { clipOfEvent } from '../clips.js';
import { openKiosk } from '../kioskHandoff.js';
import { LivePreview, type Recognised } from '../preview.js';
import { navigate, type PageContext } from '../router.js';
import { Pager, busy, errorBox, every, messageArea, notice } from '../ui.js';

/** 429 monitor_limit_exceeded gets its own wording: it is the one error installers hit in normal use. */
export function monitorError(e: unknown): HTMLElement {
  if (e instanceof ApiFailure && e.code === 'monitor_limit_exceeded') {
    return h(
      'div',
      { class: 'alert error capacity', role: 'alert', 'data-code': e.code },
      h('strong', null, 'No stream capacity left. '),
      `${e.message} Disable another monitor, or raise [monitors] max_streams if the hardware can take it.`,
      ' ',
      h('code', null, e.code),
    );
  }
  return errorBox(e);
}

const IDENTITY_EVENTS = new Set(['person_enter', 'person_exit', 'unknown_enter', 'unknown_exit']);

/** The live list's events carry no clip: its history entry is asked for when someone wants to watch it. */
function clipButton(eventId: string, signal: AbortSignal): HTMLElement {
  const b: HTMLButtonElement = h(
    'button',
    {
      type: 'button',
      class: 'small',
      onclick: () => {
        b.disabled = true;
        clipOfEvent(eventId, signal).then(
          (view) => b.replaceWith(view),
          (e: unknown) => b.replaceWith(errorBox(e)),
        );
      },
    },
    'Clip',
  );
  return b;
}

/** What a connection test found: the first frame, or how far it got and why not. */
function testResult(t: Wire<typeof MonitorTestResult>): HTMLElement {
  if (t.ok && t.snapshot)
    return h(
      'figure',
      { class: 'test-result', 'data-testid': 'test-result', 'data-ok': 'true' },
      h('img', {
        class: 'event-frame',
        src: `data:${t.snapshot.content_type};base64,${t.snapshot.data_base64}`,
        alt: `First frame of ${t.source}`,
      }),
      h(
        'figcaption',
        { class: 'ok' },
        `Connected: ${t.frame ? `${t.frame.width}×${t.frame.height}, ` : ''}first frame in ${(t.elapsed_ms / 1000).toFixed(1)} s with the ${t.pipeline} decoder.`,
      ),
    );
  const cause = t.cause ? t.cause.replaceAll('_', ' ') : null;
  return h(
    'div',
    { class: 'alert error test-result', role: 'alert', 'data-testid': 'test-result', 'data-ok': 'false' },
    h('strong', null, cause ? `Camera unreachable: ${cause}. ` : `Failed at the ${t.stage} step. `),
    t.message,
    ' ',
    h('code', null, `stage ${t.stage}`),
  );
}

/**
 * The camera form (add and edit): name (the id follows it), address with the user and password beside it
 * (the URL is stored encrypted and always shown without them), collection, analysis rate, threshold, the
 * decoder, and a connection test that shows the first frame or the cause.
 */
async function monitorForm(
  signal: AbortSignal,
  m?: MonitorT,
): Promise<{ form: HTMLFormElement; body: () => Record<string, unknown> }> {
  const [cols, pipelines] = await Promise.all([
    api<Wire<typeof CollectionPageResponse>>('GET', '/v1/collections?limit=100', undefined, signal),
    api<Wire<typeof MonitorPipelinesResponse>>('GET', '/v1/monitor-pipelines', undefined, signal).catch(() => null),
  ]);
  const id = h('input', {
    type: 'text',
    required: true,
    pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}',
    autocomplete: 'off',
    value: m?.id ?? '',
    disabled: !!m,
  });
  const name = h('input', { type: 'text', required: true, maxlength: '200', value: m?.name ?? '' });
  // The id follows the name until someone edits it.
  let idTouched = false;
  id.addEventListener('input', () => (idTouched = true));
  name.addEventListener('input', () => {
    if (!m && !idTouched) id.value = idFromName(name.value, 'camera');
  });
  // The stored URL is never shown with its credentials: edit shows the redacted form and sends a URL only when retyped.
  const url = h('input', {
    type: 'text',
    required: !m,
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: m ? `unchanged: ${m.source.url}` : 'rtsp://camera.lan:554/stream1',
  });
  // The detect sub-stream: the same camera's low-resolution stream, with the same user and password.
  const detect = h('input', {
    type: 'text',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: m?.detect_url ? `unchanged: ${m.detect_url}` : 'rtsp://camera.lan:554/stream2 (optional)',
  });
  const noDetect = h('input', { type: 'checkbox', id: 'nodetect' });
  const user = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' });
  const password = h('input', { type: 'password', autocomplete: 'new-password' });
  const collection = h(
    'select',
    { required: true },
    cols.collections.map((c) =>
      h('option', { value: c.id, selected: m?.collection_id === c.id }, `${c.name} (${c.id})`),
    ),
  );
  const fps = h('input', { type: 'number', min: '0.1', max: '30', step: '0.1', value: m?.inference_fps ?? 2 });
  const threshold = h('input', {
    type: 'number',
    min: '0',
    max: '1',
    step: '0.01',
    value: m?.match_threshold ?? '',
    placeholder: 'collection default',
  });
  const decoder = h(
    'select',
    { disabled: !pipelines },
    (pipelines?.pipelines ?? []).map((p) =>
      h(
        'option',
        { value: p.id, selected: p.current, disabled: !p.available },
        `${p.label}${p.available ? '' : ' (not on this box)'}`,
      ),
    ),
  );
  const preview = h('input', { type: 'checkbox', checked: m ? m.preview_enabled : true, id: `pv${m ? 'e' : 'n'}` });
  const enabled = h('input', { type: 'checkbox', checked: m ? m.enabled : true, id: `en${m ? 'e' : 'n'}` });
  const cameraUrl = () => withCredentials(url.value, user.value.trim(), password.value);

  // Test connection: the typed address (or, when editing with none typed, the stored one) with the decoder chosen.
  const testOut = messageArea();
  const test = h('button', { type: 'button', class: 'secondary' }, 'Test connection');
  test.addEventListener('click', () => {
    const typed = url.value.trim();
    if (!typed && !m) return testOut.show(notice('Type the camera address first.', 'warn'));
    testOut.show(h('p', { class: 'muted' }, 'Connecting to the camera…'));
    void busy(test, testOut, async () => {
      const pipeline = decoder.value || undefined;
      const r = typed
        ? await api<Wire<typeof MonitorTestResponse>>('POST', '/v1/monitors/test', {
            source: { url: cameraUrl() },
            ...(pipeline ? { pipeline } : {}),
          })
        : await api<Wire<typeof MonitorTestResponse>>('POST', `/v1/monitors/${enc(m!.id)}/test`, {
            ...(pipeline ? { pipeline } : {}),
          });
      testOut.show(testResult(r.test));
    });
  });

  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': m ? 'edit-mon' : 'new-mon' },
    h('h2', { id: m ? 'edit-mon' : 'new-mon' }, m ? 'Settings' : 'Add a camera'),
    field('Name', name),
    m ? null : field('ID', id, 'Follows the name; letters, digits, . _ - (it names the camera in the API and MQTT).'),
    field(
      'RTSP URL',
      url,
      m
        ? 'Leave empty to keep the current address (stored encrypted, shown without credentials).'
        : 'The camera’s stream address; stored encrypted, shown without credentials afterwards.',
    ),
    h(
      'div',
      { class: 'field-pair' },
      field('Camera user', user, m ? 'With a new address only.' : 'If the camera asks for one.'),
      field('Camera password', password),
    ),
    h('div', { class: 'actions' }, test),
    testOut,
    field(
      'Sub-stream URL (detection)',
      detect,
      'Optional: the camera’s low-resolution stream. Motion and faces are found on it (far cheaper to decode); the RTSP URL above gives the event pictures while a face is in view. The user and password above apply to it too.',
    ),
    m?.detect_url
      ? h('div', { class: 'field inline' }, noDetect, h('label', { for: noDetect.id }, 'Detect on the main stream'))
      : null,
    field('Collection', collection, 'The persons this camera recognises.'),
    field('Inference rate (frames/s)', fps, 'How often a frame is analysed; higher finds faces sooner and costs more.'),
    field('Match threshold', threshold),
    pipelines
      ? field(
          'Decoder',
          decoder,
          'Used by the connection test. Every camera of this box decodes with the one chosen in Settings → Cameras.',
        )
      : null,
    h('div', { class: 'field inline' }, preview, h('label', { for: preview.id }, 'Live preview allowed')),
    m ? null : h('div', { class: 'field inline' }, enabled, h('label', { for: enabled.id }, 'Start now')),
  );
  const body = () => {
    const b: Record<string, unknown> = {
      name: name.value.trim(),
      collection_id: collection.value,
      inference_fps: Number(fps.value),
      preview_enabled: preview.checked,
    };
    if (!m) Object.assign(b, { id: id.value.trim() || idFromName(name.value, 'camera'), enabled: enabled.checked });
    if (url.value.trim()) b.source = { url: cameraUrl() };
    if (detect.value.trim()) b.detect_url = withCredentials(detect.value, user.value.trim(), password.value);
    else if (noDetect.checked) b.detect_url = null;
    if (threshold.value !== '') b.match_threshold = Number(threshold.value);
    else if (m && m.match_threshold !== null) b.match_threshold = null;
    return b;
  };
  return { form, body };
}

function enableToggle(m: MonitorT, messages: ReturnType<typeof messageArea>, after: () => void): HTMLButtonElement {
  const b = h('button', { type: 'button', class: 'small' }, m.enabled ? 'Disable' : 'Enable');
  b.addEventListener(
    'click',
    () =>
      void busy(b, messages, async () => {
        try {
          await api('PATCH', `/v1/monitors/${enc(m.id)}`, { enabled: !m.enabled });
          messages.clear();
          after();
        } catch (e) {
          messages.show(monitorError(e));
        }
      }),
  );
  return b;
}

export async function monitorsPage(ctx: PageContext): Promise<HTMLElement> {
  const pager = new Pager();
  const list = h('div');
  const messages = messageArea();
  const load = async () => {
    try {
      const q = new URLSearchParams({ limit: '20' });
      if (pager.cursor) q.set('cursor', pager.cursor);
      const r = await api<Wire<typeof MonitorPageResponse>>('GET', `/v1/monitors?${q}`, undefined, ctx.signal);
      pager.next = r.next_cursor;
      list.replaceChildren(
        r.monitors.length
          ? h(
              'table',
              { 'aria-label': 'Monitors' },
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['ID', 'Name', 'Status', 'Source', 'Collection', 'Preview', ''].map((t) =>
                    h('th', { scope: 'col' }, t),
                  ),
                ),
              ),
              h(
                'tbody',
                null,
                r.monitors.map((m) =>
                  h(
                    'tr',
                    null,
                    h('td', null, h('a', { href: `/monitors/${enc(m.id)}` }, m.id)),
                    h('td', null, m.name),
                    h('td', null, statusBadge(m.runtime.status, m.runtime.connected)),
                    h('td', null, h('code', null, m.source.url)),
                    h('td', null, m.collection_id),
                    h('td', null, m.preview_enabled ? 'allowed' : 'off'),
                    h(
                      'td',
                      null,
                      session.allows('operator') ? [enableToggle(m, messages, () => void load()), ' '] : null,
                      h('button', { type: 'button', class: 'small', onclick: () => openKiosk(m.id) }, 'Kiosk'),
                    ),
                  ),
                ),
              ),
            )
          : h('p', { class: 'muted' }, 'No monitors yet.'),
        pager.controls(() => void load()),
      );
    } catch (e) {
      list.replaceChildren(errorBox(e));
    }
  };
  await load();
  every(5000, ctx.signal, load);
  // Viewers watch: adding a camera is for operators (its form would also read the collections, 403 to them).
  if (!session.allows('operator')) return h('div', null, h('h1', null, 'Monitors'), messages, list);

  const { form, body } = await monitorForm(ctx.signal);
  const formMessages = messageArea();
  const submit = h('button', { type: 'submit' }, 'Create monitor');
  form.append(submit, formMessages);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(submit, formMessages, async () => {
      try {
        const r = await api<Wire<typeof MonitorResponse>>('POST', '/v1/monitors', body());
        navigate(`/monitors/${enc(r.monitor.id)}`);
      } catch (err) {
        formMessages.show(monitorError(err));
      }
    });
  });
  return h('div', null, h('h1', null, 'Monitors'), messages, list, form);
}

export function recognisedList(): HTMLElement & { set(faces: Recognised[]): void } {
  const ul = Object.assign(h('ul', { class: 'recognised', 'aria-label': 'Recognised now', 'aria-live': 'polite' }), {
    set(_faces: Recognised[]): void {},
  });
  let last = '';
  ul.set = (faces) => {
    const key = faces.map((f) => `${f.kind}:${f.name}`).join('|');
    if (key === last) return;
    last = key;
    ul.replaceChildren(...faces.map((f) => h('li', { class: f.kind }, f.name)));
  };
  return ul;
}

export async function monitorPage(ctx: PageContext): Promise<HTMLElement> {
  const mid = ctx.params.mid!;
  const path = `/v1/monitors/${enc(mid)}`;
  let m = (await api<Wire<typeof MonitorResponse>>('GET', path, undefined, ctx.signal)).monitor;
  const top = messageArea();
  const details = h('section', { class: 'card' });
  const stateBox = h('div');

  const renderDetails = () =>
    details.replaceChildren(
      facts([
        ['Status', statusBadge(m.runtime.status, m.runtime.connected)],
        ['Source', h('code', { 'data-testid': 'source-url' }, m.source.url)],
        ...(m.detect_url ? [['Detection sub-stream', h('code', null, m.detect_url)] as [string, HTMLElement]] : []),
        ['Collection', m.collection_id],
        ['Inference rate', `${m.inference_fps} fps`],
        ['Threshold', m.match_threshold === null ? 'collection default' : fmt.num(m.match_threshold, 2)],
        ['Preview', m.preview_enabled ? 'allowed' : 'off'],
        [
          'Last error',
          m.runtime.last_error
            ? h(
                'code',
                null,
                typeof m.runtime.last_error === 'string' ? m.runtime.last_error : lastErrorText(m.runtime.last_error),
              )
            : '—',
        ],
      ]),
      h(
        'div',
        { class: 'actions' },
        session.allows('operator') ? enableToggle(m, top, () => void reload()) : null,
        h('button', { type: 'button', onclick: () => openKiosk(mid) }, 'Open kiosk view'),
        session.allows('operator') ? del : null,
      ),
    );
  const reload = async () => {
    try {
      m = (await api<Wire<typeof MonitorResponse>>('GET', path, undefined, ctx.signal)).monitor;
      renderDetails();
    } catch (e) {
      if (!ctx.signal.aborted) top.show(errorBox(e));
    }
  };

  const del = h('button', { type: 'button', class: 'danger' }, 'Delete monitor');
  del.addEventListener('click', () => {
    if (!confirm(`Delete monitor ${mid}?`)) return;
    void busy(del, top, async () => {
      await api('DELETE', path);
      navigate('/monitors');
    });
  });
  renderDetails();

  // Live preview with overlays, and the names recognised now.
  const previewStatus = h('p', { class: 'muted', role: 'status', 'data-testid': 'preview-status' }, 'Connecting…');
  const names = recognisedList();
  const preview = new LivePreview(mid, {
    onStatus: (text, level) => {
      previewStatus.textContent = text;
      previewStatus.className = level;
    },
    onRecognised: (faces) => names.set(faces),
  });
  if (m.preview_enabled) {
    preview.start();
    ctx.signal.addEventListener('abort', () => preview.stop(), { once: true });
  }

  // Events by cursor: new ones are prepended; an epoch change (restart) starts the list afresh.
  const events = h('ol', { class: 'events', 'aria-label': 'Events, newest first', reversed: true });
  const eventNote = h('p', { class: 'muted' });
  let cursor: string | null = null;
  let inFlight = false;
  const pollEvents = async (): Promise<void> => {
    // One reader at a time: the interval and a has_more follow-up must not read the same cursor twice.
    if (inFlight) return;
    inFlight = true;
    let more = false;
    try {
      const q = new URLSearchParams({ limit: '100' });
      if (cursor) q.set('cursor', cursor);
      const r = await api<Wire<typeof MonitorEventPageResponse>>('GET', `${path}/events?${q}`, undefined, ctx.signal);
      if (r.stream_reset) events.replaceChildren();
      eventNote.textContent = r.truncated ? 'Some events fell out of the buffer before they were shown.' : '';
      for (const ev of r.events) {
        const who = ev.person ? (ev.person.name ?? ev.person.id) : ev.error ? `${ev.error.code}` : '';
        events.prepend(
          h(
            'li',
            { class: ev.type },
            h('time', { datetime: ev.occurred_at }, new Date(ev.occurred_at).toLocaleTimeString()),
            ' ',
            h('strong', null, ev.type.replace('_', ' ')),
            who ? ` ${who}` : '',
            typeof ev.similarity === 'number' ? ` (${ev.similarity.toFixed(2)})` : '',
            // Identity events of a camera that may record clips ([monitors.clips] decides when it says null).
            m.clips?.enabled !== false && IDENTITY_EVENTS.has(ev.type) ? clipButton(ev.id, ctx.signal) : null,
          ),
        );
      }
      while (events.children.length > 200) events.lastElementChild!.remove();
      cursor = r.next_cursor;
      more = r.has_more;
    } catch {
    } finally {
      inFlight = false;
    }
    if (more && !ctx.signal.aborted) await pollEvents();
  };
  const pollState = async () => {
    try {
      const s = (await api<Wire<typeof MonitorStateResponse>>('GET', `${path}/state`, undefined, ctx.signal)).state;
      stateBox.replaceChildren(
        facts([
          ['Connected', s.connected ? 'yes' : 'no'],
          [
            'Source',
            s.source.width ? `${s.source.width}×${s.source.height} @ ${fmt.num(s.source.source_fps, 1)} fps` : '—',
          ],
          [
            'Inference',
            `${fmt.num(s.inference.actual_fps, 1)} of ${s.inference.configured_fps} fps${s.inference.capacity_limited ? ' (capacity limited)' : ''}`,
          ],
          ['Frames', `${s.inference.processed_frames} processed, ${s.inference.dropped_frames} skipped`],
          ['Reconnects', s.reconnects],
          ['Preview viewers', s.preview.viewers],
        ]),
      );
    } catch {}
  };
  await Promise.all([pollEvents(), pollState()]);
  every(1000, ctx.signal, pollEvents);
  every(2000, ctx.signal, pollState);
  every(5000, ctx.signal, reload);

  // What a viewer may not change is not offered: the settings form (operator) and the kiosk links (admin).
  const { form, body } = session.allows('operator')
    ? await monitorForm(ctx.signal, m)
    : { form: h('form', { hidden: true }), body: () => ({}) };
  const formMessages = messageArea();
  const save = h('button', { type: 'submit' }, 'Save changes');
  form.append(save, formMessages);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(save, formMessages, async () => {
      try {
        m = (await api<Wire<typeof MonitorResponse>>('PATCH', path, body())).monitor;
        renderDetails();
        formMessages.show(notice('Saved.'));
      } catch (err) {
        formMessages.show(monitorError(err));
      }
    });
  });

  const kiosk = session.allows('admin') ? await kioskLinks(mid, ctx.signal) : null;
  // Zones and masks are drawn on a still of this camera (operators).
  const zones = session.allows('operator')
    ? zoneEditor(
        m,
        () => preview.currentImage(),
        (saved) => {
          m = saved;
          renderDetails();
        },
      )
    : null;
  return h(
    'div',
    null,
    h('p', null, h('a', { href: '/monitors' }, '← Monitors')),
    h('h1', null, m.name),
    top,
    details,
    h(
      'section',
      { class: 'card wide', 'aria-labelledby': 'live' },
      h('h2', { id: 'live' }, 'Live'),
      m.preview_enabled
        ? [preview.element, previewStatus, h('h3', null, 'Recognised now'), names]
        : h('p', { class: 'muted' }, 'The preview is off for this monitor: allow it in the settings below.'),
      stateBox,
    ),
    h('section', { class: 'card', 'aria-labelledby': 'evh' }, h('h2', { id: 'evh' }, 'Events'), eventNote, events),
    zones,
    kiosk,
    form,
  );
}

/**
 * Kiosk links: a preview-only token for this monitor, as a URL with the token in its fragment, that a
 * wall display can keep in its start-up config (it survives reboots of the display and the daemon).
 */
async function kioskLinks(mid: string, signal: AbortSignal): Promise<HTMLElement> {
  const messages = messageArea();
  const list = h('ul', { class: 'plain', 'data-testid': 'kiosk-tokens' });
  const created = h('div');
  const label = h('input', { type: 'text', maxlength: '200', placeholder: 'e.g. hall display' });
  const render = async () => {
    const r = await api<Wire<typeof KioskTokenListResponse>>('GET', '/v1/kiosk-tokens', undefined, signal);
    const mine = r.kiosk_tokens.filter((k) => k.monitor_ids.includes(mid) && !k.revoked_at);
    list.replaceChildren(
      ...(mine.length
        ? mine.map((k) => {
            const revoke = h('button', { type: 'button', class: 'small danger' }, 'Revoke');
            revoke.addEventListener(
              'click',
              () =>
                void busy(revoke, messages, async () => {
                  await api('DELETE', `/v1/kiosk-tokens/${enc(k.id)}`);
                  created.replaceChildren();
                  await render();
                }),
            );
            return h(
              'li',
              null,
              h('code', null, `${k.prefix}…`),
              ` ${k.label || '(no label)'} · last used ${k.last_used_at ? new Date(k.last_used_at).toLocaleString() : 'never'} `,
              revoke,
            );
          })
        : [h('li', { class: 'muted' }, 'No kiosk links for this monitor.')]),
    );
  };
  const create = h('button', { type: 'button' }, 'Create kiosk link');
  create.addEventListener(
    'click',
    () =>
      void busy(create, messages, async () => {
        const r = await api<Wire<typeof KioskTokenCreatedResponse>>('POST', '/v1/kiosk-tokens', {
          monitor_ids: [mid],
          label: label.value,
        });
        const url = location.origin + r.kiosk_paths[mid]!;
        const out = h('input', {
          type: 'text',
          readonly: true,
          value: url,
          'aria-label': 'Kiosk URL',
          'data-testid': 'kiosk-url',
          class: 'wide-input',
        });
        created.replaceChildren(
          notice(
            "Kiosk link created. Copy it now: it is shown only once. It opens this monitor's preview and nothing else.",
          ),
          out,
        );
        out.select();
        label.value = '';
        await render();
      }),
  );
  await render().catch((e: unknown) => messages.show(errorBox(e)));
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'kiosk-h' },
    h('h2', { id: 'kiosk-h' }, 'Kiosk links'),
    h('p', { class: 'muted' }, 'A preview-only link for a wall display: it keeps working after reboots until revoked.'),
    field('Label', label),
    h('div', { class: 'actions' }, create),
    created,
    messages,
    list,
  );
}
