import type {
  CollectionPageResponse,
  CollectionResponse,
  CollectionT,
  FacePageResponse,
  PersonPageResponse,
  PersonRegistrationResponse,
  PersonT,
  RejectedImageT,
} from '../../contract/collections.js';
import type { ModelsResponse } from '../../contract/system.js';
import { ApiFailure, api, enc, imageUrl, type Wire } from '../api.js';
import { facts, field, fmt, h, replace } from '../dom.js';
import { navigate, type PageContext } from '../router.js';
import { ImagePicker } from '../images.js';
import { Pager, busy, errorBox, messageArea, notice } from '../ui.js';
import { enrolmentResults } from './person.js';
import { initials } from '../names.js';

const PROFILES = ['fp32_v1', 'fp16_v1', 'bf16_v1', 'int8_x736_v1', 'int8_x1000_v1'];
const num = (v: string): number | undefined => (v.trim() === '' ? undefined : Number(v));

/** "512x512, 96x96" -> [[512,512],[96,96]]; undefined when empty. */
export function parseSizes(text: string): number[][] | undefined {
  const parts = text.split(/[,;\s]+/).filter(Boolean);
  if (!parts.length) return undefined;
  return parts.map((p) => {
    const m = /^(\d+)x(\d+)$/i.exec(p);
    if (!m) throw new ApiFailure(400, 'invalid_input_sizes', `"${p}" is not a size like 512x512.`);
    return [Number(m[1]), Number(m[2])];
  });
}

/** The detection, threshold and crop fields shared by the create and edit forms. */
function profileFields(c?: CollectionT) {
  const f = {
    threshold: h('input', {
      type: 'number',
      min: '0',
      max: '1',
      step: '0.01',
      value: c?.default_threshold ?? '',
      placeholder: 'server default',
    }),
    // New collections made here keep their face crops (the person pages show them); the API's default stays upstream's.
    crops: h('input', { type: 'checkbox', checked: c?.save_face_crops ?? true }),
    detThreshold: h('input', {
      type: 'number',
      min: '0',
      max: '1',
      step: '0.01',
      value: c?.detection?.threshold ?? '',
      placeholder: 'system default',
    }),
    nms: h('input', {
      type: 'number',
      min: '0',
      max: '1',
      step: '0.01',
      value: c?.detection?.nms_threshold ?? '',
      placeholder: 'system default',
    }),
    sizes: h('input', {
      type: 'text',
      value: c ? c.detection.input_sizes.map((s: number[]) => s.join('x')).join(', ') : '',
      placeholder: 'e.g. 512x512, 96x96',
    }),
    selection: h(
      'select',
      null,
      h('option', { value: '' }, 'system default'),
      ['largest', 'center_largest'].map((v) =>
        h('option', { value: v, selected: c?.detection?.single_face_selection === v }, v),
      ),
    ),
  };
  const detection = () => {
    const d: Record<string, unknown> = {};
    if (num(f.detThreshold.value) !== undefined) d.threshold = num(f.detThreshold.value);
    if (num(f.nms.value) !== undefined) d.nms_threshold = num(f.nms.value);
    const sizes = parseSizes(f.sizes.value);
    if (sizes) d.input_sizes = sizes;
    if (f.selection.value) d.single_face_selection = f.selection.value;
    return d;
  };
  // The server default follows the model pack; show the number it would use.
  if (!c)
    api<Wire<typeof ModelsResponse>>('GET', '/v1/models').then(
      (m) => {
        f.threshold.placeholder = `server default (${m.default_threshold ?? 0.4})`;
      },
      () => undefined,
    );
  const fields = [
    field('Match threshold', f.threshold, 'Similarity at or above this is a match (0–1).'),
    h(
      'div',
      { class: 'field inline' },
      f.crops,
      h('label', { for: (f.crops.id = `crops${Math.random().toString(36).slice(2)}`) }, 'Save 112×112 face crops'),
    ),
    h(
      'fieldset',
      null,
      h('legend', null, 'Detection profile'),
      field('Detection threshold', f.detThreshold),
      field('NMS threshold', f.nms),
      field('Input sizes', f.sizes, 'Multiples of 32, largest first.'),
      field('Single-face selection', f.selection),
    ),
  ];
  return { f, detection, fields };
}

/**
 * A person of the face library: a saved face crop (the first face that has one), the name and the count.
 * The crop is fetched with the credential and shown from an object URL, revoked with the page.
 */
function personCard(collectionPath: string, p: PersonT, signal: AbortSignal): HTMLElement {
  const href = `${location.pathname.replace(/\/$/, '')}/persons/${enc(p.id)}`;
  const photo = h('span', { class: 'person-photo nocrop', 'aria-hidden': 'true' }, initials(p.name ?? p.id));
  const personPath = `${collectionPath}/persons/${enc(p.id)}`;
  void api<Wire<typeof FacePageResponse>>('GET', `${personPath}/faces?limit=10`, undefined, signal)
    .then(async (r) => {
      const f = r.faces.find((x) => x.has_crop);
      if (!f) return;
      const u = await imageUrl(`${personPath}/faces/${enc(f.id)}/image`, signal);
      if (signal.aborted) return URL.revokeObjectURL(u);
      signal.addEventListener('abort', () => URL.revokeObjectURL(u), { once: true });
      photo.replaceWith(h('img', { class: 'person-photo', src: u, alt: '', width: 96, height: 96 }));
    })
    .catch(() => undefined);
  return h(
    'li',
    { class: 'person-card' },
    h(
      'a',
      { href },
      photo,
      h('strong', null, p.name ?? p.id),
      h('small', { class: 'muted' }, `${p.id} · ${p.face_count} face${p.face_count === 1 ? '' : 's'}`),
    ),
  );
}

export async function collectionsPage(ctx: PageContext): Promise<HTMLElement> {
  const pager = new Pager();
  const list = h('div');
  const load = async () => {
    try {
      const q = new URLSearchParams({ limit: '20' });
      if (pager.cursor) q.set('cursor', pager.cursor);
      const r = await api<Wire<typeof CollectionPageResponse>>('GET', `/v1/collections?${q}`, undefined, ctx.signal);
      pager.next = r.next_cursor;
      list.replaceChildren(
        r.collections.length
          ? h(
              'table',
              { 'aria-label': 'Collections' },
              h(
                'thead',
                null,
                h(
                  'tr',
                  null,
                  ['ID', 'Name', 'Persons', 'Faces', 'Threshold', 'Search profile', 'Crops'].map((t) =>
                    h('th', { scope: 'col' }, t),
                  ),
                ),
              ),
              h(
                'tbody',
                null,
                r.collections.map((c) =>
                  h(
                    'tr',
                    null,
                    h('td', null, h('a', { href: `/collections/${enc(c.id)}` }, c.id)),
                    h('td', null, c.name),
                    h('td', null, c.person_count),
                    h('td', null, c.face_count),
                    h('td', null, fmt.num(c.default_threshold, 2)),
                    h('td', null, c.search_profile),
                    h('td', null, c.save_face_crops ? 'yes' : 'no'),
                  ),
                ),
              ),
            )
          : h('p', { class: 'muted' }, 'No collections yet.'),
        pager.controls(() => void load()),
      );
    } catch (e) {
      list.replaceChildren(errorBox(e));
    }
  };
  await load();

  const id = h('input', {
    type: 'text',
    required: true,
    pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}',
    autocomplete: 'off',
  });
  const name = h('input', { type: 'text', required: true, maxlength: '200' });
  const description = h('textarea', { maxlength: '2000', rows: '2' });
  const profile = h(
    'select',
    null,
    PROFILES.map((p) => h('option', { value: p }, p)),
  );
  const { f, detection, fields } = profileFields();
  const messages = messageArea();
  const submit = h('button', { type: 'submit' }, 'Create collection');
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'new-col' },
    h('h2', { id: 'new-col' }, 'New collection'),
    field('ID', id, 'Letters, digits, . _ - (up to 64).'),
    field('Name', name),
    field('Description', description),
    ...fields,
    field('Search profile', profile, 'Fixed once created. fp32 is exact; int8 profiles use less memory.'),
    submit,
    messages,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(submit, messages, async () => {
      const body: Record<string, unknown> = {
        id: id.value.trim(),
        name: name.value.trim(),
        description: description.value,
        save_face_crops: f.crops.checked,
        search: { profile: profile.value },
      };
      if (num(f.threshold.value) !== undefined) body.threshold = num(f.threshold.value);
      const d = detection();
      if (Object.keys(d).length) body.detection = d;
      const r = await api<Wire<typeof CollectionResponse>>('POST', '/v1/collections', body);
      navigate(`/collections/${enc(r.collection.id)}`);
    });
  });
  return h('div', null, h('h1', null, 'Collections'), list, form);
}

export async function collectionPage(ctx: PageContext): Promise<HTMLElement> {
  const cid = ctx.params.cid!;
  const path = `/v1/collections/${enc(cid)}`;
  const c = (await api<Wire<typeof CollectionResponse>>('GET', path, undefined, ctx.signal)).collection;
  const top = messageArea();

  // Edit
  const name = h('input', { type: 'text', required: true, maxlength: '200', value: c.name });
  const description = h('textarea', { maxlength: '2000', rows: '2' }, c.description);
  const { f, detection, fields } = profileFields(c);
  const editMessages = messageArea();
  const save = h('button', { type: 'submit' }, 'Save changes');
  const edit = h(
    'form',
    { class: 'card', 'aria-labelledby': 'edit-col' },
    h('h2', { id: 'edit-col' }, 'Settings'),
    field('Name', name),
    field('Description', description),
    ...fields,
    save,
    editMessages,
  );
  edit.addEventListener('submit', (e) => {
    e.preventDefault();
    void busy(save, editMessages, async () => {
      const patch: Record<string, unknown> = {
        name: name.value.trim(),
        description: description.value,
        save_face_crops: f.crops.checked,
      };
      if (num(f.threshold.value) !== undefined) patch.threshold = num(f.threshold.value);
      const d = detection();
      if (Object.keys(d).length) patch.detection = d;
      renderSummary((await api<Wire<typeof CollectionResponse>>('PATCH', path, patch)).collection);
      editMessages.show(notice('Saved.'));
    });
  });

  // Delete, with the force confirmation when persons would go with it.
  const del = h('button', { type: 'button', class: 'danger' }, 'Delete collection');
  del.addEventListener('click', () => {
    if (!confirm(`Delete collection ${cid}?`)) return;
    void busy(del, top, async () => {
      try {
        await api('DELETE', path);
      } catch (e) {
        if (!(e instanceof ApiFailure) || e.code !== 'collection_not_empty') throw e;
        const force = h('button', { type: 'button', class: 'danger' }, 'Delete it with all its persons and faces');
        force.addEventListener(
          'click',
          () =>
            void busy(force, top, async () => {
              await api('DELETE', `${path}?force=true`);
              navigate('/collections');
            }),
        );
        top.show(
          h(
            'div',
            { class: 'alert warn', role: 'alert' },
            h(
              'p',
              null,
              `${cid} still holds persons: deleting it removes them, their faces and crops. This cannot be undone.`,
            ),
            force,
          ),
        );
        force.focus();
        return;
      }
      navigate('/collections');
    });
  });

  const summary = h('section', { class: 'card' });
  const renderSummary = (c: CollectionT) =>
    replace(
      summary,
      facts([
        ['ID', h('code', null, c.id)],
        ['Persons', c.person_count],
        ['Faces', c.face_count],
        ['Threshold', fmt.num(c.default_threshold, 2)],
        ['Search profile', c.search_profile],
        ['Capacity', c.capacity_rows],
        ['Model', `${c.model_id} (${String(c.model_digest).slice(0, 12)})`],
        [
          'Detection',
          `${c.detection.input_sizes.map((s: number[]) => s.join('x')).join(', ')}; threshold ${c.detection.threshold}; ${c.detection.single_face_selection}`,
        ],
      ]),
      del,
    );
  const refreshSummary = async () =>
    renderSummary((await api<Wire<typeof CollectionResponse>>('GET', path, undefined, ctx.signal)).collection);
  renderSummary(c);

  // Persons: search and pages.
  const pager = new Pager();
  // The thumbnails of the page shown; a new page or search drops the old ones.
  let scope = new AbortController();
  ctx.signal.addEventListener('abort', () => scope.abort(), { once: true });
  const search = h('input', { type: 'search', placeholder: 'id, name or external id', maxlength: '200' });
  const persons = h('div');
  const loadPersons = async () => {
    try {
      const q = new URLSearchParams({ limit: '20' });
      if (pager.cursor) q.set('cursor', pager.cursor);
      if (search.value.trim()) q.set('search', search.value.trim());
      const r = await api<Wire<typeof PersonPageResponse>>('GET', `${path}/persons?${q}`, undefined, ctx.signal);
      pager.next = r.next_cursor;
      scope.abort();
      scope = new AbortController();
      persons.replaceChildren(
        r.persons.length
          ? h(
              'ul',
              { class: 'person-grid', 'aria-label': 'Persons' },
              r.persons.map((p) => personCard(path, p, scope.signal)),
            )
          : h('p', { class: 'muted' }, search.value ? 'No person matches.' : 'No persons yet.'),
        pager.controls(() => void loadPersons()),
      );
    } catch (e) {
      persons.replaceChildren(errorBox(e));
    }
  };
  let searchTimer = 0;
  search.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = window.setTimeout(() => {
      pager.reset();
      void loadPersons();
    }, 250);
  });
  await loadPersons();

  // Enrol
  const pid = h('input', {
    type: 'text',
    pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}',
    placeholder: 'generated when empty',
    autocomplete: 'off',
  });
  const pname = h('input', { type: 'text', maxlength: '200' });
  const external = h('input', { type: 'text', maxlength: '200' });
  // Enrolment from the UI is reviewed: a group photo, a blurred or tiny face is refused with its reason.
  const review = h(
    'select',
    null,
    ['standard', 'strict', 'off'].map((v) => h('option', { value: v, selected: v === 'standard' }, v)),
  );
  const picker = new ImagePicker('Photos of the person (one face each)');
  const enrolMessages = messageArea();
  const enrol = h('button', { type: 'submit' }, 'Enrol person');
  const enrolForm = h(
    'form',
    { class: 'card', 'aria-labelledby': 'enrol' },
    h('h2', { id: 'enrol' }, 'Enrol a person'),
    field('Person ID', pid),
    field('Name', pname),
    field('External ID', external),
    field(
      'Review mode',
      review,
      'standard refuses photos with several faces and blurry, small or turned faces; strict is stricter; off takes the largest face of any photo.',
    ),
    picker.element,
    enrol,
    enrolMessages,
  );
  enrolForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const files = picker.files;
    if (!files.length) {
      enrolMessages.show(notice('Add at least one image.', 'warn'));
      return;
    }
    void busy(enrol, enrolMessages, async () => {
      const fd = new FormData();
      if (pid.value.trim()) fd.append('id', pid.value.trim());
      if (pname.value.trim()) fd.append('name', pname.value.trim());
      if (external.value.trim()) fd.append('external_id', external.value.trim());
      fd.append('review_mode', review.value);
      for (const file of files) fd.append('images', file, file.name);
      try {
        const r = await api<Wire<typeof PersonRegistrationResponse>>('POST', `${path}/persons`, fd);
        enrolmentResults(picker, files.length, r.faces, r.rejected_images);
        enrolMessages.show(
          notice(
            h(
              'span',
              null,
              `Enrolled ${r.person.name ?? r.person.id} with ${r.faces.length} of ${files.length} images. `,
              h('a', { href: `${location.pathname.replace(/\/$/, '')}/persons/${enc(r.person.id)}` }, 'Open person'),
            ),
          ),
        );
        pager.reset();
        await Promise.all([loadPersons(), refreshSummary()]);
      } catch (err) {
        if (err instanceof ApiFailure && err.code === 'registration_failed')
          enrolmentResults(
            picker,
            files.length,
            [],
            (err.details.rejected_images as RejectedImageT[] | undefined) ?? [],
          );
        throw err;
      }
    });
  });

  return h(
    'div',
    null,
    h('p', null, h('a', { href: '/collections' }, '← Collections')),
    h('h1', null, `Collection ${c.name}`),
    top,
    summary,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'persons' },
      h('h2', { id: 'persons' }, 'Persons'),
      field('Search persons', search),
      persons,
    ),
    enrolForm,
    edit,
  );
}
