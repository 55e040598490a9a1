import type { UnknownPageResponse, UnknownT } from '../../contract/unknowns.js';
import { api, enc, imageUrl, session, type Wire } from '../api.js';
import { enrolForm } from '../enrolForm.js';
import { field, fmt, h, replace } from '../dom.js';
import type { PageContext } from '../router.js';
import { Pager, busy, errorBox, messageArea } from '../ui.js';

/** One unknown visitor: its best crops, how often and where it was seen, and what an operator can do. */
function unknownCard(u: UnknownT, signal: AbortSignal, messages: ReturnType<typeof messageArea>, reload: () => void) {
  const crops = h('div', { class: 'unknown-crops' });
  for (const c of u.crops.slice(0, 3)) {
    const img = h('img', { class: 'person-photo', alt: `Unknown visitor ${u.id}`, width: 96, height: 96 });
    crops.append(img);
    imageUrl(c.url, signal).then(
      (url) => {
        if (signal.aborted) return URL.revokeObjectURL(url);
        signal.addEventListener('abort', () => URL.revokeObjectURL(url), { once: true });
        img.src = url;
      },
      () => img.remove(),
    );
  }
  const slot = h('div');
  const action = (label: string, run: () => Promise<unknown>, cls = 'small') => {
    const b = h('button', { type: 'button', class: cls }, label);
    b.addEventListener('click', () => void busy(b, messages, async () => (await run(), reload())));
    return b;
  };
  const path = `/v1/unknowns/${enc(u.id)}`;
  const operator = session.allows('operator');
  return h(
    'li',
    { class: 'card unknown', 'data-unknown-id': u.id },
    crops,
    h(
      'div',
      { class: 'event-body' },
      h('strong', null, `Seen ${u.visits} time${u.visits === 1 ? '' : 's'}`),
      h(
        'div',
        { class: 'muted' },
        `${u.cameras.join(', ')} · first ${fmt.time(u.first_seen_at)} · last ${fmt.time(u.last_seen_at)}`,
      ),
      u.enrolled_as
        ? h(
            'div',
            null,
            'Enrolled as ',
            h(
              'a',
              { href: `/collections/${enc(u.enrolled_as.collection_id)}/persons/${enc(u.enrolled_as.person_id)}` },
              u.enrolled_as.person_id,
            ),
          )
        : null,
      h(
        'div',
        { class: 'actions' },
        h('a', { href: `/events?unknown_id=${enc(u.id)}` }, 'Events'),
        operator && u.status !== 'enrolled'
          ? h(
              'button',
              {
                type: 'button',
                class: 'small',
                onclick: () =>
                  void enrolForm({
                    path: `${path}/enrol`,
                    collectionId: null,
                    signal,
                    label: `Enrol unknown visitor ${u.id}`,
                    onDone: () => setTimeout(reload, 1500),
                  }).then((f) => replace(slot, f)),
              },
              'Enrol…',
            )
          : null,
        operator && u.status === 'active' ? action('Dismiss', () => api('POST', `${path}/dismiss`, {})) : null,
        operator && u.status === 'dismissed' ? action('Restore', () => api('POST', `${path}/restore`, {})) : null,
        operator
          ? action(
              'Delete',
              async () => {
                if (confirm('Delete this visitor with its crops and events?')) await api('DELETE', path);
              },
              'small danger',
            )
          : null,
      ),
      slot,
    ),
  );
}

/**
 * Unknown visitors: the faces the cameras saw but nobody enrolled, grouped into visitors, last seen first;
 * each can be enrolled (the person picker), dismissed or deleted.
 */
export async function unknownsPage(ctx: PageContext): Promise<HTMLElement> {
  const messages = messageArea();
  const list = h('ul', { class: 'plain unknowns', 'aria-label': 'Unknown visitors', 'data-testid': 'unknowns' });
  const pagerSlot = h('div');
  const pager = new Pager();
  const status = h(
    'select',
    null,
    [
      ['active', 'Active'],
      ['dismissed', 'Dismissed'],
      ['enrolled', 'Enrolled'],
      ['all', 'All'],
    ].map(([v, t]) => h('option', { value: v }, t)),
  );
  let scope = new AbortController();
  ctx.signal.addEventListener('abort', () => scope.abort(), { once: true });
  const load = async () => {
    const q = new URLSearchParams({ limit: '24', status: status.value });
    if (pager.cursor) q.set('cursor', pager.cursor);
    try {
      const r = await api<Wire<typeof UnknownPageResponse>>('GET', `/v1/unknowns?${q}`, undefined, ctx.signal);
      pager.next = r.next_cursor;
      scope.abort();
      scope = new AbortController();
      replace(
        list,
        r.unknowns.length
          ? r.unknowns.map((u) => unknownCard(u, scope.signal, messages, () => void load()))
          : h('li', { class: 'muted' }, 'No unknown visitors.'),
      );
      replace(
        pagerSlot,
        pager.controls(() => void load()),
      );
    } catch (e) {
      if (!ctx.signal.aborted) messages.show(errorBox(e));
    }
  };
  status.addEventListener('change', () => {
    pager.reset();
    void load();
  });
  await load();
  return h(
    'div',
    null,
    h('h1', null, 'Unknown visitors'),
    h(
      'p',
      { class: 'muted' },
      'Faces nobody enrolled, grouped by likeness: the same stranger seen again is the same visitor.',
    ),
    h('div', { class: 'filters' }, field('Show', status)),
    messages,
    list,
    pagerSlot,
  );
}
