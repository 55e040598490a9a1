import type { CollectionPageResponse, RejectedImageT } from '../contract/collections.js';
import { ApiFailure, api, enc, type Wire } from './api.js';
import { field, h } from './dom.js';
import { freePersonId, personPicker } from './personPicker.js';
import { reasonText } from './pages/person.js';
import { busy, messageArea, notice } from './ui.js';

interface EnrolAnswer {
  person: { id: string; name?: string | null };
  faces: unknown[];
  rejected_images: RejectedImageT[];
}

/**
 * Enrols what the cameras saw (an event's face, an unknown visitor's crops) as a person chosen with the
 * picker, under the normal review (standard): `path` is the enrol endpoint. A refusal shows its reasons.
 */
export async function enrolForm(o: {
  path: string;
  collectionId: string | null;
  signal: AbortSignal;
  label: string;
  onDone?: (collectionId: string, personId: string) => void;
}): Promise<HTMLFormElement> {
  const out = messageArea();
  const cols = await api<Wire<typeof CollectionPageResponse>>('GET', '/v1/collections?limit=100', undefined, o.signal)
    .then((r) => r.collections)
    .catch(() => []);
  const col = h(
    'select',
    { name: 'collection_id', required: true },
    cols.map((c) => h('option', { value: c.id, selected: c.id === o.collectionId }, `${c.name} (${c.id})`)),
  );
  const picker = personPicker(() => col.value, o.signal);
  col.addEventListener('change', () => picker.reload());
  const submit = h('button', { type: 'submit' }, 'Enrol');
  const f = h(
    'form',
    { class: 'enrol', 'aria-label': o.label },
    field('Collection', col),
    picker.element,
    h('small', { class: 'muted' }, 'Reviewed as any enrolment: a blurred, tiny or turned face is refused.'),
    submit,
    out,
  );
  f.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const who = picker.value();
    if (!who) return out.show(notice('Choose a person, or name a new one.', 'warn'));
    void busy(submit, out, async () => {
      const cid = col.value;
      const body = who.create
        ? { person_id: await freePersonId(cid, who.name, o.signal), create: true, name: who.name }
        : { person_id: who.person_id, create: false };
      let r: EnrolAnswer;
      try {
        r = await api<EnrolAnswer>('POST', o.path, { collection_id: cid, review_mode: 'standard', ...body });
      } catch (e) {
        // A new person none of whose images passed the review: the reasons, not a bare error code.
        const rejected = e instanceof ApiFailure ? (e.details.rejected_images as RejectedImageT[] | undefined) : null;
        if (!rejected?.length) throw e;
        r = { person: { id: body.person_id }, faces: [], rejected_images: rejected };
      }
      out.show(
        r.faces.length
          ? notice(
              h(
                'span',
                { 'data-testid': 'enrolled' },
                'Enrolled into ',
                h('a', { href: `/collections/${enc(cid)}/persons/${enc(r.person.id)}` }, r.person.name ?? r.person.id),
                '.',
              ),
            )
          : notice(
              h(
                'span',
                { 'data-testid': 'not-enrolled' },
                `Not enrolled: ${r.rejected_images.map((x) => reasonText(x.reason)).join(', ')}`,
              ),
              'warn',
            ),
      );
      if (r.faces.length) o.onDone?.(cid, r.person.id);
    });
  });
  return f;
}
