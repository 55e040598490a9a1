import type { EventOutputsResponse } from '../../contract/events.js';
import type {
  WebhookCreatedResponse,
  WebhookDeliveriesResponse,
  WebhookPageResponse,
  WebhookResponse,
  Webhook,
} from '../../contract/webhooks.js';
import { api, enc, type Wire } from '../api.js';
import { facts, field, fmt, h, replace } from '../dom.js';
import type { PageContext } from '../router.js';
import { busy, errorBox, every, messageArea, notice } from '../ui.js';

type Hook = Wire<typeof Webhook>;

/** System → Event outputs: the history, the MQTT broker connection and queue, and the webhook endpoints. */
export async function outputsSection(ctx: PageContext): Promise<HTMLElement> {
  const status = h('div', { 'data-testid': 'outputs-status' });
  const hooks = h('div', { 'data-testid': 'webhooks' });
  const messages = messageArea();

  const renderStatus = (s: Wire<typeof EventOutputsResponse>) => {
    const m = s.mqtt;
    replace(
      status,
      facts([
        ['Events kept', `${s.history.events} (${fmt.bytes(s.history.snapshot_bytes)} of pictures)`],
        [
          'Retention',
          `${s.history.retention.max_age_days} days, ${s.history.retention.max_events} events, ${fmt.bytes(s.history.retention.max_snapshot_bytes)} of pictures`,
        ],
        [
          'MQTT',
          m.enabled
            ? h(
                'span',
                { 'data-testid': 'mqtt-state', class: m.connected ? 'ok' : 'error' },
                m.connected
                  ? `connected to ${m.broker}`
                  : `not connected to ${m.broker}${m.last_error ? ` (${m.last_error})` : ''}`,
              )
            : h('span', { 'data-testid': 'mqtt-state', class: 'muted' }, 'off ([mqtt] enabled = false)'),
        ],
        [
          'MQTT queue',
          h(
            'span',
            { 'data-testid': 'mqtt-queue' },
            `${m.queued} waiting, ${m.published} published, `,
            h('span', { class: m.dropped ? 'error' : '' }, `${m.dropped} dropped`),
          ),
        ],
        ['Webhook retries', `${s.webhooks.retry_schedule_seconds.map((x) => `${x} s`).join(', ')}, … (± jitter)`],
      ]),
    );
  };

  const deliveries = async (w: Hook, slot: HTMLElement) => {
    const r = await api<Wire<typeof WebhookDeliveriesResponse>>(
      'GET',
      `/v1/webhooks/${enc(w.id)}/deliveries?limit=20`,
      undefined,
      ctx.signal,
    );
    replace(
      slot,
      r.deliveries.length
        ? h(
            'table',
            { 'aria-label': `Deliveries of ${w.url}`, 'data-testid': 'deliveries' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['When', 'Type', 'Attempt', 'Result', 'Latency'].map((x) => h('th', { scope: 'col' }, x)),
              ),
            ),
            h(
              'tbody',
              null,
              r.deliveries.map((a) =>
                h(
                  'tr',
                  null,
                  h('td', null, fmt.time(a.at)),
                  h('td', null, a.type),
                  h('td', null, a.attempt),
                  h(
                    'td',
                    { class: a.outcome === 'delivered' ? 'ok' : 'error' },
                    a.outcome === 'delivered' ? `delivered (${a.status_code})` : `failed: ${a.error ?? ''}`,
                  ),
                  h('td', null, `${a.latency_ms} ms`),
                ),
              ),
            ),
          )
        : h('p', { class: 'muted' }, 'No attempts yet.'),
    );
  };

  // Rows are kept across the periodic refresh (only their facts are redrawn), so an open delivery log or a
  // message under a row does not vanish every five seconds.
  const rows = new Map<string, { li: HTMLElement; update: (w: Hook) => void }>();
  const hookRow = (first: Hook) => {
    let w = first;
    const slot = h('div');
    const out = messageArea();
    const toggle = h('button', { type: 'button', class: 'small' });
    toggle.addEventListener(
      'click',
      () =>
        void busy(toggle, out, async () => {
          await api<Wire<typeof WebhookResponse>>('PATCH', `/v1/webhooks/${enc(w.id)}`, { enabled: !w.enabled });
          await load();
        }),
    );
    const test = h('button', { type: 'button', class: 'small' }, 'Send test event');
    test.addEventListener(
      'click',
      () =>
        void busy(test, out, async () => {
          await api('POST', `/v1/webhooks/${enc(w.id)}/test`);
          out.show(notice('Test event queued.'));
          setTimeout(() => void deliveries(w, slot).catch(() => undefined), 1500);
        }),
    );
    const log = h('button', { type: 'button', class: 'small' }, 'Delivery log');
    log.addEventListener('click', () => void busy(log, out, () => deliveries(w, slot)));
    const del = h('button', { type: 'button', class: 'small danger' }, 'Delete');
    del.addEventListener(
      'click',
      () =>
        void busy(del, out, async () => {
          await api('DELETE', `/v1/webhooks/${enc(w.id)}`);
          await load();
        }),
    );
    const about = h('div');
    const update = (next: Hook) => {
      w = next;
      toggle.textContent = w.enabled ? 'Disable' : 'Enable';
      replace(
        about,
        h(
          'div',
          null,
          h('code', null, w.url),
          ' ',
          h('strong', { class: w.enabled ? 'ok' : 'error' }, w.enabled ? 'enabled' : 'disabled'),
        ),
        w.disabled_reason
          ? h('div', { class: 'alert error', role: 'alert' }, `Disabled by Vigil: ${w.disabled_reason}`)
          : null,
        h(
          'div',
          { class: 'muted' },
          `${w.event_types.length ? w.event_types.join(', ') : 'all event types'} · ${w.monitors.length ? `monitors ${w.monitors.join(', ')}` : 'all monitors'} · ${w.pending_messages} waiting · ${w.failure_streak} failures in a row`,
        ),
      );
    };
    update(w);
    return {
      li: h(
        'li',
        { class: 'card', 'data-webhook-id': w.id },
        about,
        h('div', { class: 'actions' }, test, log, toggle, del),
        out,
        slot,
      ),
      update,
    };
  };

  const load = async () => {
    const [s, list] = await Promise.all([
      api<Wire<typeof EventOutputsResponse>>('GET', '/v1/events/status', undefined, ctx.signal),
      api<Wire<typeof WebhookPageResponse>>('GET', '/v1/webhooks?limit=100', undefined, ctx.signal),
    ]);
    renderStatus(s);
    const ids = list.webhooks.map((w) => w.id);
    if (ids.length === rows.size && ids.every((id) => rows.has(id))) {
      for (const w of list.webhooks) rows.get(w.id)!.update(w);
      return;
    }
    const kept = new Map(rows);
    rows.clear();
    for (const w of list.webhooks) {
      const r = kept.get(w.id);
      if (r) r.update(w);
      rows.set(w.id, r ?? hookRow(w));
    }
    replace(
      hooks,
      rows.size
        ? h(
            'ul',
            { class: 'plain' },
            [...rows.values()].map((r) => r.li),
          )
        : h('p', { class: 'muted' }, 'No webhooks yet.'),
    );
  };

  const url = h('input', {
    type: 'url',
    name: 'url',
    required: true,
    placeholder: 'https://receiver.lan/vigil',
    autocomplete: 'off',
  });
  const monitors = h('input', { name: 'monitors', placeholder: 'door, gate (empty = all)', autocomplete: 'off' });
  const add = h('button', { type: 'submit' }, 'Add webhook');
  const created = messageArea();
  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Add a webhook' },
    field('Receiver URL', url),
    field('Monitors', monitors),
    add,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(add, created, async () => {
      const r = await api<Wire<typeof WebhookCreatedResponse>>('POST', '/v1/webhooks', {
        url: url.value.trim(),
        monitors: monitors.value
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      });
      created.show(
        h(
          'div',
          { class: 'alert ok', role: 'status' },
          'Signing secret (shown only now; the receiver verifies webhook-signature with it): ',
          h('code', { class: 'secret', 'data-testid': 'webhook-secret' }, r.secret),
        ),
      );
      url.value = '';
      await load();
    });
  });
  try {
    await load();
  } catch (e) {
    messages.show(errorBox(e));
  }
  every(5000, ctx.signal, () => load().catch(() => undefined));
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'outh' },
    h('h2', { id: 'outh' }, 'Event outputs'),
    h(
      'p',
      { class: 'muted' },
      'Every monitor event is kept in the history (see Events) and sent to MQTT and to these webhooks; while a receiver or the broker is away, events wait on disk.',
    ),
    status,
    messages,
    h('h3', null, 'Webhooks'),
    hooks,
    form,
    created,
  );
}
