import type { PersonPageResponse, PersonT } from '../contract/collections.js';
import { api, enc, type Wire } from './api.js';
import { field, h } from './dom.js';
import { firstFreeId, idFromName } from './names.js';

/** Who a face goes to: an existing person, or a new one with this name. */
export type PickedPerson = { person_id: string; create: false; label: string } | { create: true; name: string };

/**
 * The id for a new person called `name`: its slug, or the slug with -2, -3 ... when that id is taken (one
 * search, not a probe per id: a 404 would be an error in the browser's console). The search's every page is
 * read (the API answers at most 100 persons a page): a taken id on a later page would make the enrolment fail.
 */
export async function freePersonId(collectionId: string, name: string, signal?: AbortSignal): Promise<string> {
  const base = idFromName(name);
  const taken = new Set<string>();
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams({ search: base, limit: '100' });
    if (cursor) q.set('cursor', cursor);
    const r: Wire<typeof PersonPageResponse> = await api<Wire<typeof PersonPageResponse>>(
      'GET',
      `/v1/collections/${enc(collectionId)}/persons?${q}`,
      undefined,
      signal,
    );
    for (const p of r.persons) taken.add(p.id);
    cursor = r.next_cursor;
  } while (cursor);
  return firstFreeId(base, taken);
}

const label = (p: PersonT) => (p.name ? `${p.name} (${p.id})` : p.id);

/**
 * Picks the person a face is enrolled as: search the collection's persons by name or id and choose one, or
 * name a new person (no ids to type). `collectionId` is read at each search (the form's collection may change).
 */
export function personPicker(collectionId: () => string, signal: AbortSignal) {
  const seq = Math.random().toString(36).slice(2, 8);
  const existing = h('input', { type: 'radio', name: `who-${seq}`, value: 'existing', checked: true });
  const fresh = h('input', { type: 'radio', name: `who-${seq}`, value: 'new' });
  const search = h('input', {
    type: 'search',
    placeholder: 'name or id',
    autocomplete: 'off',
    'aria-controls': `pp-${seq}`,
  });
  const results = h('ul', { id: `pp-${seq}`, 'aria-label': 'Matching persons', 'data-testid': 'person-results' });
  const chosen = h(
    'p',
    { class: 'muted', 'aria-live': 'polite', 'data-testid': 'person-chosen' },
    'Nobody chosen yet.',
  );
  const name = h('input', { type: 'text', maxlength: '200', autocomplete: 'off' });
  let picked: { id: string; label: string } | null = null;
  const existingPart = h('div', { class: 'person-picker' }, field('Find a person', search), results, chosen);
  const newPart = h('div', { class: 'person-picker', hidden: true }, field('Name of the new person', name));

  const choose = (p: PersonT, button: HTMLButtonElement) => {
    picked = { id: p.id, label: label(p) };
    for (const b of results.querySelectorAll('button')) b.setAttribute('aria-pressed', String(b === button));
    chosen.textContent = `Chosen: ${picked.label}`;
  };
  let timer = 0;
  let inFlight: AbortController | null = null;
  const find = async () => {
    inFlight?.abort();
    const mine = (inFlight = new AbortController());
    signal.addEventListener('abort', () => mine.abort(), { once: true });
    const q = new URLSearchParams({ limit: '8' });
    if (search.value.trim()) q.set('search', search.value.trim());
    try {
      const r = await api<Wire<typeof PersonPageResponse>>(
        'GET',
        `/v1/collections/${enc(collectionId())}/persons?${q}`,
        undefined,
        mine.signal,
      );
      results.replaceChildren(
        ...(r.persons.length
          ? r.persons.map((p) => {
              const b = h('button', { type: 'button', 'aria-pressed': String(picked?.id === p.id) }, label(p));
              b.addEventListener('click', () => choose(p, b));
              return h('li', null, b);
            })
          : [h('li', { class: 'muted' }, search.value ? 'Nobody matches.' : 'No persons in this collection yet.')]),
      );
    } catch (e) {
      if (!mine.signal.aborted)
        results.replaceChildren(h('li', { class: 'error' }, e instanceof Error ? e.message : String(e)));
    }
  };
  search.addEventListener('input', () => {
    clearTimeout(timer);
    timer = window.setTimeout(() => void find(), 200);
  });
  const mode = () => {
    existingPart.hidden = !existing.checked;
    newPart.hidden = !fresh.checked;
    (fresh.checked ? name : search).focus();
  };
  existing.addEventListener('change', mode);
  fresh.addEventListener('change', mode);
  void find();

  const element = h(
    'fieldset',
    { class: 'picker' },
    h('legend', null, 'Enrol as'),
    h(
      'div',
      { class: 'check-row' },
      h('label', null, existing, ' an existing person'),
      h('label', null, fresh, ' a new person'),
    ),
    existingPart,
    newPart,
  );
  return {
    element,
    /** What was picked, or null (with the reason shown) when nothing is. */
    value(): PickedPerson | null {
      if (fresh.checked) return name.value.trim() ? { create: true, name: name.value.trim() } : null;
      return picked ? { person_id: picked.id, create: false, label: picked.label } : null;
    },
    /** The collection changed: the choice is gone and the list is read again. */
    reload(): void {
      picked = null;
      chosen.textContent = 'Nobody chosen yet.';
      void find();
    },
    focus(): void {
      search.focus();
    },
  };
}
