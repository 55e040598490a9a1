import type {
  FacePageResponse,
  FaceRegistrationResponse,
  FaceSampleT,
  PersonResponse,
  RejectedImageT,
} from '../../contract/collections.js';
import type { PersonTimelineResponse } from '../../contract/unknowns.js';
import { api, enc, imageUrl, type Wire } from '../api.js';
import { append, facts, field, fmt, h } from '../dom.js';
import { ImagePicker, livenessLine } from '../images.js';
import { navigate, type PageContext } from '../router.js';
import { Pager, busy, errorBox, messageArea, notice } from '../ui.js';

const REASONS: Record<string, string> = {
  face_not_found: 'No face found',
  multiple_faces: 'More than one face',
  low_detection_score: 'Face detection too uncertain',
  low_quality: 'Image quality too low (blur, light)',
  face_too_small: 'Face too small',
  extreme_pose: 'Head turned too far',
  invalid_image: 'Not a readable image',
  image_too_large: 'Image too large',
  invalid_landmarks: 'Face landmarks unusable',
  degenerate_landmarks: 'Face landmarks unusable',
  invalid_embedding: 'No usable embedding',
  invalid_external_embedding: 'External embedding invalid',
  liveness_fake: 'Liveness check failed (spoof suspected)',
  liveness_input_rejected: 'Liveness could not be checked on this image',
  identity_similarity_conflict: 'Looks like a different enrolled person',
};
export const reasonText = (code: string): string => `${REASONS[code] ?? 'Rejected'} (${code})`;

/**
 * Puts each image's outcome next to it. Rejections carry their multipart index; accepted faces come back
 * in upload order, so they fill the indices that were not rejected.
 */
export function enrolmentResults(
  picker: ImagePicker,
  count: number,
  faces: FaceSampleT[],
  rejected: RejectedImageT[],
): void {
  const byIndex = new Map(rejected.map((r) => [r.index, r]));
  let next = 0;
  for (let i = 0; i < count; i++) {
    const r = byIndex.get(i);
    if (r)
      picker.setResult(
        i,
        false,
        reasonText(r.reason) + (typeof r.detail === 'string' ? `: ${r.detail}` : ''),
        r.liveness,
      );
    else {
      const f = faces[next++];
      picker.setResult(
        i,
        true,
        f ? `Accepted (quality ${f.quality?.score.toFixed(2) ?? '—'})` : 'Accepted',
        f?.liveness,
      );
    }
  }
}

/** Where and when the cameras saw this person (GET …/timeline): per camera, then the latest visits. */
async function timelineSection(cid: string, pid: string, signal: AbortSignal): Promise<HTMLElement> {
  const body = h('div', { 'data-testid': 'timeline' });
  try {
    const t = await api<Wire<typeof PersonTimelineResponse>>(
      'GET',
      `/v1/collections/${enc(cid)}/persons/${enc(pid)}/timeline?limit=20`,
      undefined,
      signal,
    );
    append(body, [
      t.visit_count
        ? h(
            'p',
            null,
            `${t.visit_count} visit${t.visit_count === 1 ? '' : 's'}, first ${fmt.time(t.first_seen_at)}, last ${fmt.time(t.last_seen_at)}.`,
          )
        : h('p', { class: 'muted' }, 'Not seen by a camera yet.'),
      t.cameras.length
        ? h(
            'table',
            { 'aria-label': 'Cameras that saw this person' },
            h(
              'thead',
              null,
              h(
                'tr',
                null,
                ['Camera', 'Visits', 'Last seen', 'Zones'].map((x) => h('th', { scope: 'col' }, x)),
              ),
            ),
            h(
              'tbody',
              null,
              t.cameras.map((c) =>
                h(
                  'tr',
                  null,
                  h('td', null, h('a', { href: `/monitors/${enc(c.monitor_id)}` }, c.monitor_id)),
                  h('td', null, c.visits),
                  h('td', null, fmt.time(c.last_seen_at)),
                  h('td', null, c.zones.join(', ') || '—'),
                ),
              ),
            ),
          )
        : null,
      t.visits.length
        ? h(
            'ol',
            { class: 'plain visits', 'aria-label': 'Latest visits' },
            t.visits.map((v) =>
              h(
                'li',
                null,
                `${fmt.time(v.entered_at)} · ${v.monitor_id}`,
                v.seconds !== null ? ` · ${Math.round(v.seconds)} s` : ' · still there',
                v.zones.length ? ` · ${v.zones.join(', ')}` : '',
              ),
            ),
          )
        : null,
    ]);
  } catch (e) {
    body.append(errorBox(e));
  }
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'timeh' },
    h('h2', { id: 'timeh' }, 'Seen by the cameras'),
    body,
  );
}

export async function personPage(ctx: PageContext): Promise<HTMLElement> {
  const { cid, pid } = ctx.params as { cid: string; pid: string };
  const path = `/v1/collections/${enc(cid)}/persons/${enc(pid)}`;
  const person = (await api<Wire<typeof PersonResponse>>('GET', path, undefined, ctx.signal)).person;
  const top = messageArea();
  const urls: string[] = [];
  ctx.signal.addEventListener('abort', () => {
    for (const u of urls) URL.revokeObjectURL(u);
  });

  const pager = new Pager();
  const faces = h('div');
  const loadFaces = async () => {
    try {
      const q = new URLSearchParams({ limit: '24' });
      if (pager.cursor) q.set('cursor', pager.cursor);
      const r = await api<Wire<typeof FacePageResponse>>('GET', `${path}/faces?${q}`, undefined, ctx.signal);
      pager.next = r.next_cursor;
      for (const u of urls.splice(0)) URL.revokeObjectURL(u);
      const cards = r.faces.map((f) => {
        const img = f.has_crop
          ? h('img', { alt: `Saved crop of face ${f.id}`, width: '112', height: '112' })
          : h('div', { class: 'nocrop' }, 'No crop saved');
        if (f.has_crop) {
          imageUrl(`${path}/faces/${enc(f.id)}/image`, ctx.signal)
            .then((u) => {
              if (ctx.signal.aborted) return URL.revokeObjectURL(u);
              urls.push(u);
              (img as HTMLImageElement).src = u;
            })
            .catch(() => img.replaceWith(h('div', { class: 'nocrop' }, 'Crop unavailable')));
        }
        const del = h('button', { type: 'button', class: 'small danger' }, 'Delete face');
        del.addEventListener('click', () => {
          if (!confirm('Delete this face sample?')) return;
          void busy(del, top, async () => {
            await api('DELETE', `${path}/faces/${enc(f.id)}`);
            await loadFaces();
          });
        });
        return h(
          'li',
          { class: 'facecard' },
          img,
          h('small', null, `score ${fmt.num(f.detection_score, 2)} · quality ${fmt.num(f.quality?.score, 2)}`),
          livenessLine(f.liveness),
          del,
        );
      });
      faces.replaceChildren(
        cards.length ? h('ul', { class: 'faces' }, cards) : h('p', { class: 'muted' }, 'No faces.'),
        pager.controls(() => void loadFaces()),
      );
    } catch (e) {
      faces.replaceChildren(errorBox(e));
    }
  };
  await loadFaces();

  const picker = new ImagePicker('More photos of this person');
  const addMessages = messageArea();
  const add = h('button', { type: 'submit' }, 'Add faces');
  const addForm = h(
    'form',
    { class: 'card', 'aria-labelledby': 'addf' },
    h('h2', { id: 'addf' }, 'Add faces'),
    picker.element,
    add,
    addMessages,
  );
  addForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const files = picker.files;
    if (!files.length) return addMessages.show(notice('Add at least one image.', 'warn'));
    void busy(add, addMessages, async () => {
      const fd = new FormData();
      for (const file of files) fd.append('images', file, file.name);
      const r = await api<Wire<typeof FaceRegistrationResponse>>('POST', `${path}/faces`, fd);
      enrolmentResults(picker, files.length, r.faces, r.rejected_images);
      addMessages.show(notice(`${r.faces.length} of ${files.length} images added.`, r.faces.length ? 'ok' : 'warn'));
      pager.reset();
      await loadFaces();
    });
  });

  const name = h('input', { type: 'text', maxlength: '200', value: person.name ?? '' });
  const external = h('input', { type: 'text', maxlength: '200', value: person.external_id ?? '' });
  const editMessages = messageArea();
  const save = h('button', { type: 'submit' }, 'Save');
  const edit = h(
    'form',
    { class: 'card', 'aria-labelledby': 'editp' },
    h('h2', { id: 'editp' }, 'Details'),
    field('Name', name),
    field('External ID', external),
    save,
    editMessages,
  );
  edit.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(save, editMessages, async () => {
      await api('PATCH', path, { name: name.value.trim() || null, external_id: external.value.trim() || null });
      editMessages.show(notice('Saved.'));
    });
  });

  const del = h('button', { type: 'button', class: 'danger' }, 'Delete person');
  del.addEventListener('click', () => {
    if (!confirm(`Delete ${person.name ?? pid} and all their faces?`)) return;
    void busy(del, top, async () => {
      await api('DELETE', path);
      navigate(`/collections/${enc(cid)}`);
    });
  });

  return h(
    'div',
    null,
    h('p', null, h('a', { href: `/collections/${enc(cid)}` }, `← ${cid}`)),
    h('h1', null, person.name ?? pid),
    top,
    h(
      'p',
      null,
      h(
        'a',
        { href: `/events?collection_id=${enc(cid)}&person_id=${enc(pid)}` },
        'History: when and where this person was seen',
      ),
    ),
    h(
      'section',
      { class: 'card' },
      facts([
        ['ID', h('code', null, person.id)],
        ['External ID', person.external_id ?? '—'],
        ['Faces', person.face_count],
        ['Created', fmt.time(person.created_at)],
      ]),
      del,
    ),
    h('section', { class: 'card', 'aria-labelledby': 'facesh' }, h('h2', { id: 'facesh' }, 'Saved faces'), faces),
    await timelineSection(cid, pid, ctx.signal),
    addForm,
    edit,
  );
}
