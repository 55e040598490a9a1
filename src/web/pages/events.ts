import type { HistoryEvent, HistoryEventPageResponse, MONITOR_EVENT_TYPES } from '../../contract/events.js';
import type { MonitorPageResponse } from '../../contract/monitors.js';
import { api, enc, imageUrl, session, type Wire } from '../api.js';
import { field, fmt, h, replace } from '../dom.js';
import type { PageContext } from '../router.js';
import { Pager, busy, errorBox, messageArea, notice } from '../ui.js';
import { enrolForm } from '../enrolForm.js';
import { clipView } from '../clips.js';

const TYPES: (typeof MONITOR_EVENT_TYPES)[number][] = [
  'person_enter',
  'person_exit',
  'unknown_enter',
  'unknown_exit',
  'monitor_error',
  'monitor_recovered',
];
const LABEL: Record<string, string> = {
  person_enter: 'Arrived',
  person_exit: 'Left',
  unknown_enter: 'Unknown face arrived',
  unknown_exit: 'Unknown face left',
  monitor_error: 'Camera problem',
  monitor_recovered: 'Camera recovered',
};
type Event = Wire<typeof HistoryEvent>;

/** The event history: a timeline with the face crops, filters, a person's history, and "enrol this face". */
export async function eventsPage(ctx: PageContext): Promise<HTMLElement> {
  const q = ctx.query;
  const urls: string[] = [];
  ctx.signal.addEventListener('abort', () => urls.forEach((u) => URL.revokeObjectURL(u)), { once: true });
  const messages = messageArea();
  const list = h('ol', { class: 'timeline', 'aria-label': 'Events, newest first', 'data-testid': 'event-list' });
  const pager = new Pager();
  let fleet = false;
  const pagerSlot = h('div');

  const monitors = await api<Wire<typeof MonitorPageResponse>>('GET', '/v1/monitors?limit=100', undefined, ctx.signal)
    .then((r) => r.monitors)
    .catch(() => []);
  const monitor = h(
    'select',
    { name: 'monitor_id' },
    h('option', { value: '' }, 'All monitors'),
    monitors.map((m) => h('option', { value: m.id }, m.name)),
  );
  const type = h(
    'select',
    { name: 'type' },
    h('option', { value: '' }, 'All types'),
    TYPES.map((t) => h('option', { value: t }, LABEL[t]!)),
  );
  const unknownOnly = h('input', { type: 'checkbox', name: 'unknown_only' });
  const collection = h('input', { name: 'collection_id', placeholder: 'collection id', autocomplete: 'off' });
  const person = h('input', { name: 'person_id', placeholder: 'person id', autocomplete: 'off' });
  const since = h('input', { type: 'datetime-local', name: 'since' });
  const until = h('input', { type: 'datetime-local', name: 'until' });
  monitor.value = q.get('monitor_id') ?? '';
  type.value = q.get('type') ?? '';
  unknownOnly.checked = q.get('unknown_only') === 'true';
  collection.value = q.get('collection_id') ?? '';
  person.value = q.get('person_id') ?? '';
  const unknownId = q.get('unknown_id') ?? '';

  const query = () => {
    const p = new URLSearchParams({ limit: '20' });
    const set = (k: string, v: string) => {
      if (v) p.set(k, v);
    };
    set('monitor_id', monitor.value);
    set('type', type.value);
    if (unknownOnly.checked) p.set('unknown_only', 'true');
    set('collection_id', collection.value.trim());
    set('person_id', person.value.trim());
    // From an unknown visitor's "Events" link (the filter is not a field: it names a visitor, not a person).
    set('unknown_id', unknownId);
    if (since.value) p.set('since', new Date(since.value).toISOString());
    if (until.value) p.set('until', new Date(until.value).toISOString());
    if (pager.cursor) p.set('cursor', pager.cursor);
    return p;
  };

  const thumb = (e: Event) => {
    const img = h('img', {
      class: 'event-crop',
      alt: e.person ? `Face of ${e.person.name ?? e.person.id}` : 'Unknown face',
      width: 96,
      height: 96,
    });
    if (e.snapshot.status === 'ready' && e.snapshot.crop_url) {
      imageUrl(e.snapshot.crop_url, ctx.signal)
        .then((u) => {
          urls.push(u);
          img.src = u;
        })
        .catch(() => img.replaceWith(h('span', { class: 'muted event-crop' }, 'no picture')));
      return img;
    }
    return h('span', { class: 'muted event-crop' }, e.snapshot.status === 'none' ? '' : `picture ${e.snapshot.status}`);
  };

  // Enrol an unknown face as a person chosen by name (an existing one, or a new one), reviewed as usual.
  const enrol = async (e: Event, slot: HTMLElement) => {
    replace(
      slot,
      await enrolForm({
        path: `/v1/events/${enc(e.id)}/enrol`,
        collectionId: e.collection_id,
        signal: ctx.signal,
        label: 'Enrol this face',
      }),
    );
    slot.querySelector<HTMLInputElement>('input[type=search]')?.focus();
  };

  const row = (e: Event) => {
    const who = e.person
      ? h(
          'a',
          { href: `/events?collection_id=${enc(e.collection_id ?? '')}&person_id=${enc(e.person.id)}` },
          e.person.name ?? e.person.id,
        )
      : e.error
        ? h('span', { class: 'error' }, e.error.message)
        : h('span', null, 'Unknown face');
    const slot = h('div');
    const actions = h(
      'div',
      { class: 'actions' },
      e.snapshot.status === 'ready' && e.snapshot.frame_url
        ? h(
            'button',
            {
              type: 'button',
              class: 'small',
              onclick: () =>
                void imageUrl(e.snapshot.frame_url!, ctx.signal).then(
                  (u) => {
                    urls.push(u);
                    replace(
                      slot,
                      h('img', { class: 'event-frame', src: u, alt: `Frame of ${fmt.time(e.occurred_at)}` }),
                    );
                  },
                  (err: unknown) => replace(slot, errorBox(err)),
                ),
            },
            'Show frame',
          )
        : null,
      // Enrolling and deleting are an operator's; a viewer only watches.
      e.type.startsWith('unknown_') && e.snapshot.status === 'ready' && session.allows('operator')
        ? h('button', { type: 'button', class: 'small', onclick: () => void enrol(e, slot) }, 'Enrol this face')
        : null,
      session.allows('operator') &&
        h(
          'button',
          {
            type: 'button',
            class: 'small danger',
            onclick: () =>
              void busy(null, messages, async () => {
                await api('DELETE', `/v1/events/${enc(e.id)}`);
                li.remove();
              }),
          },
          'Delete',
        ),
    );
    const li = h(
      'li',
      { class: `event ${e.type}`, 'data-event-id': e.id, 'data-type': e.type },
      thumb(e),
      h(
        'div',
        { class: 'event-body' },
        h('div', null, h('strong', null, LABEL[e.type] ?? e.type), ' · ', who),
        h(
          'div',
          { class: 'muted' },
          `${fmt.time(e.occurred_at)} · ${fleet ? `${e.box_id} / ` : ''}${e.monitor_id}${e.similarity !== null ? ` · similarity ${fmt.num(e.similarity)}` : ''}`,
        ),
        e.clip ? clipView(e.id, e.clip, ctx.signal) : null,
        actions,
        slot,
      ),
    );
    return li;
  };

  const load = async () => {
    messages.clear();
    try {
      const r = await api<Wire<typeof HistoryEventPageResponse>>('GET', `/v1/events?${query()}`, undefined, ctx.signal);
      pager.next = r.next_cursor;
      // Fleet mode: events of every box (each names its box); the box's own history while the database is down.
      fleet = r.fleet !== undefined;
      if (r.fleet?.degraded)
        messages.show(notice("The fleet database is unreachable: showing only this box's own events.", 'warn'));
      replace(list, r.events.length ? r.events.map(row) : h('li', { class: 'muted' }, 'No events match.'));
      replace(
        pagerSlot,
        pager.controls(() => void load()),
      );
    } catch (e) {
      if (!ctx.signal.aborted) messages.show(errorBox(e));
    }
  };
  const filters = h(
    'form',
    { class: 'filters card', 'aria-label': 'Filter events' },
    field('Monitor', monitor),
    field('Type', type),
    h('label', { class: 'check' }, unknownOnly, ' Unknown faces only'),
    field('Collection', collection),
    field('Person', person),
    field('From', since),
    field('Until', until),
    h('button', { type: 'submit' }, 'Apply'),
  );
  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    pager.reset();
    void load();
  });
  await load();
  const title = person.value
    ? `History of ${person.value}`
    : unknownId
      ? `Visits of unknown visitor ${unknownId}`
      : 'Events';
  return h('div', null, h('h1', null, title), filters, messages, list, pagerSlot);
}
