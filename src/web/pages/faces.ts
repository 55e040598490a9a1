import type { CollectionPageResponse, SearchResponse } from '../../contract/collections.js';
import type { CompareResponse, DetectResponse, FaceObservationT } from '../../contract/faces.js';
import { ApiFailure, api, type Wire } from '../api.js';
import { field, fmt, h } from '../dom.js';
import { ImagePicker, annotate, livenessLine, type DrawnFace, type Liveness } from '../images.js';
import type { PageContext } from '../router.js';
import { busy, errorBox, messageArea, notice } from '../ui.js';

type Observation = FaceObservationT;

/** The distinct ways a face request is refused, worded for people, with the code kept for support. */
const REFUSALS: Record<string, string> = {
  face_not_found: 'No face was found in the image.',
  liveness_fake: 'Refused: the liveness check says this is not a live face (spoof suspected).',
  liveness_input_rejected:
    'Refused: liveness could not be checked on this image (face too close to the edge or cropped too tightly).',
  invalid_image: 'The file is not an image the service can read.',
  image_too_large: 'The image is too large.',
  collection_model_mismatch: 'The collection was built with another model pack.',
  search_index_unavailable: 'The collection’s search index is not available right now.',
  service_not_ready: 'The service is still starting.',
};

export function refusal(e: unknown): HTMLElement {
  if (!(e instanceof ApiFailure) || !REFUSALS[e.code]) return errorBox(e);
  const side = typeof e.details.side === 'string' ? ` (${e.details.side} image)` : '';
  return h(
    'div',
    { class: 'alert error', role: 'alert', 'data-code': e.code },
    h('strong', null, REFUSALS[e.code]! + side),
    ' ',
    h('code', null, e.code),
    livenessLine(e.details.liveness as Liveness | undefined),
  );
}

const drawn = (f: Observation, label?: string, colour?: string): DrawnFace => ({
  box: f.bbox.pixels,
  landmarks: f.landmarks,
  label,
  colour,
});

function faceFacts(f: Observation): HTMLElement {
  return h(
    'div',
    { class: 'facefacts' },
    h(
      'small',
      null,
      `detection ${fmt.num(f.detection_score, 3)} · quality ${fmt.num(f.quality.score, 2)} (sharpness ${fmt.num(f.quality.sharpness, 2)}, brightness ${fmt.num(f.quality.brightness, 2)}, pose ${fmt.num(f.quality.pose, 2)})`,
    ),
    livenessLine(f.liveness),
  );
}

async function collectionSelect(signal: AbortSignal, optional: boolean): Promise<HTMLSelectElement> {
  const r = await api<Wire<typeof CollectionPageResponse>>('GET', '/v1/collections?limit=100', undefined, signal);
  return h(
    'select',
    { required: !optional },
    optional ? h('option', { value: '' }, 'system detection profile') : null,
    r.collections.map((c) => h('option', { value: c.id }, `${c.name} (${c.id})`)),
  );
}

export async function searchPage(ctx: PageContext): Promise<HTMLElement> {
  const collection = await collectionSelect(ctx.signal, false);
  const picker = new ImagePicker('Photo to search with', false);
  const limit = h('input', { type: 'number', min: '1', max: '100', value: '5' });
  const threshold = h('input', { type: 'number', min: '0', max: '1', step: '0.01', placeholder: 'collection default' });
  const out = messageArea();
  const go = h('button', { type: 'submit' }, 'Search');
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'sh' },
    h('h2', { id: 'sh' }, 'Who is this?'),
    field('Collection', collection),
    picker.element,
    field('Results', limit),
    field('Threshold', threshold),
    go,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const file = picker.files[0];
    if (!file) return out.show(notice('Choose an image.', 'warn'));
    void busy(go, out, async () => {
      const fd = new FormData();
      fd.append('image', file, file.name);
      fd.append('limit', limit.value || '5');
      if (threshold.value) fd.append('threshold', threshold.value);
      // Every face of the photo is searched (faces=all); the selected face stays the headline.
      fd.append('faces', 'all');
      try {
        const r = await api<Wire<typeof SearchResponse>>(
          'POST',
          `/v1/collections/${encodeURIComponent(collection.value)}/search`,
          fd,
        );
        out.show(await searchResult(file, r));
      } catch (err) {
        out.show(refusal(err));
      }
    });
  });
  return h('div', null, h('h1', null, 'Search'), form, out);
}

type FaceResult = NonNullable<Wire<typeof SearchResponse>['faces']>[number];
type Match = FaceResult['matches'][number];

const personName = (m: Match): string => m.person.name ?? m.person.id;
const faceVerdict = (f: FaceResult): string =>
  f.problem ? `Not searched: ${f.problem.message}` : f.matches[0] ? personName(f.matches[0]) : 'No match';

/** One result per face, numbered left to right on the picture and in the table; the selected face leads. */
async function searchResult(file: File, r: Wire<typeof SearchResponse>): Promise<HTMLElement> {
  const faces: FaceResult[] = [...(r.faces ?? [{ face: r.searched_face, selected: true, matches: r.matches }])].sort(
    (a, b) => a.face.bbox.pixels.x - b.face.bbox.pixels.x,
  );
  const label = (f: FaceResult, i: number) =>
    `${i + 1} ${f.problem ? f.problem.code : f.matches[0] ? `${personName(f.matches[0])} ${f.matches[0].similarity.toFixed(2)}` : 'no match'}`;
  const colour = (f: FaceResult) => (f.problem ? '#ff6b6b' : f.matches[0] ? '#3ddc97' : '#ffb347');
  const img = await annotate(
    file,
    faces.map((f, i) => drawn(f.face, label(f, i), colour(f))),
    `${faces.length} faces: ${faces.map(label).join(', ')}`,
  );
  // The headline names everyone recognised, left to right, and counts the rest.
  const named = faces.flatMap((f) => (f.matches[0] ? [personName(f.matches[0])] : []));
  const others = faces.length - named.length;
  const headline = named.length
    ? `${named.join(', ')}${others ? ` · ${others} not recognised` : ''}`
    : 'No match at or above the threshold';
  const selected = faces.find((f) => f.selected) ?? faces[0]!;
  return h(
    'section',
    { class: 'card result', 'aria-label': 'Search result' },
    h('p', { class: 'big', 'data-testid': 'best-match' }, headline),
    h(
      'p',
      null,
      `${faces.length} ${faces.length === 1 ? 'face' : 'faces'} · Threshold ${fmt.num(r.threshold, 2)} · ${fmt.num(r.processing_ms, 1)} ms`,
    ),
    img,
    h(
      'table',
      { 'aria-label': 'Faces' },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['Face', 'Who', 'Similarity', 'Other matches', 'Box'].map((t) => h('th', { scope: 'col' }, t)),
        ),
      ),
      h(
        'tbody',
        null,
        faces.map((f, i) => {
          const b = f.face.bbox.pixels;
          return h(
            'tr',
            { 'data-testid': 'face-result', 'data-code': f.problem?.code ?? '' },
            h('td', null, `${i + 1}${f.selected ? ' (selected)' : ''}`),
            h('td', { 'data-testid': 'face-who' }, faceVerdict(f)),
            h('td', null, f.matches[0] ? f.matches[0].similarity.toFixed(4) : '—'),
            h(
              'td',
              null,
              f.matches
                .slice(1)
                .map((m) => `${personName(m)} ${m.similarity.toFixed(2)}`)
                .join(', ') || '—',
            ),
            h('td', null, `${b.x},${b.y} ${b.width}×${b.height}`),
          );
        }),
      ),
    ),
    faceFacts(selected.face),
  );
}

export async function comparePage(ctx: PageContext): Promise<HTMLElement> {
  const collection = await collectionSelect(ctx.signal, true);
  const source = new ImagePicker('First photo', false);
  const target = new ImagePicker('Second photo', false);
  const threshold = h('input', { type: 'number', min: '0', max: '1', step: '0.01', placeholder: 'server default' });
  const out = messageArea();
  const go = h('button', { type: 'submit' }, 'Compare');
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'ch' },
    h('h2', { id: 'ch' }, 'Same person?'),
    h('div', { class: 'pair' }, source.element, target.element),
    field('Threshold', threshold),
    field('Detection profile of collection', collection),
    go,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const [a, b] = [source.files[0], target.files[0]];
    if (!a || !b) return out.show(notice('Choose two images.', 'warn'));
    void busy(go, out, async () => {
      const fd = new FormData();
      fd.append('source', a, a.name);
      fd.append('target', b, b.name);
      if (threshold.value) fd.append('threshold', threshold.value);
      if (collection.value) fd.append('collection_id', collection.value);
      try {
        const r = await api<Wire<typeof CompareResponse>>('POST', '/v1/compare', fd);
        const colour = r.matched ? '#3ddc97' : '#ff5c7a';
        const [ia, ib] = await Promise.all([
          annotate(a, [drawn(r.source_face, undefined, colour)], 'First face'),
          annotate(b, [drawn(r.target_face, undefined, colour)], 'Second face'),
        ]);
        out.show(
          h(
            'section',
            { class: 'card result', 'aria-label': 'Comparison' },
            h(
              'p',
              { class: `big ${r.matched ? 'ok' : 'error'}`, 'data-testid': 'compare-verdict' },
              r.matched ? 'Same person' : 'Different people',
            ),
            h(
              'p',
              null,
              `Similarity ${r.similarity.toFixed(4)} · threshold ${fmt.num(r.threshold, 2)} · ${fmt.num(r.processing_ms, 1)} ms`,
            ),
            h(
              'div',
              { class: 'pair' },
              h('div', null, ia, faceFacts(r.source_face)),
              h('div', null, ib, faceFacts(r.target_face)),
            ),
          ),
        );
      } catch (err) {
        out.show(refusal(err));
      }
    });
  });
  return h('div', null, h('h1', null, 'Compare'), form, out);
}

export async function detectPage(ctx: PageContext): Promise<HTMLElement> {
  const collection = await collectionSelect(ctx.signal, true);
  const picker = new ImagePicker('Photo', false);
  const max = h('input', { type: 'number', min: '1', max: '100', placeholder: 'all' });
  const out = messageArea();
  const go = h('button', { type: 'submit' }, 'Detect faces');
  const form = h(
    'form',
    { class: 'card', 'aria-labelledby': 'dh' },
    h('h2', { id: 'dh' }, 'Find faces'),
    picker.element,
    field('Most faces', max),
    field('Detection profile of collection', collection),
    go,
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const file = picker.files[0];
    if (!file) return out.show(notice('Choose an image.', 'warn'));
    void busy(go, out, async () => {
      const fd = new FormData();
      fd.append('image', file, file.name);
      if (max.value) fd.append('max_faces', max.value);
      if (collection.value) fd.append('collection_id', collection.value);
      try {
        const r = await api<Wire<typeof DetectResponse>>('POST', '/v1/detect', fd);
        const faces = r.faces;
        const colourOf = (f: Observation) =>
          f.liveness && (f.liveness.status !== 'ok' || !f.liveness.is_live) ? '#ff5c7a' : '#3ddc97';
        const img = await annotate(
          file,
          faces.map((f, i) => drawn(f, String(i + 1), colourOf(f))),
          `${faces.length} faces detected`,
        );
        out.show(
          h(
            'section',
            { class: 'card result', 'aria-label': 'Detected faces' },
            h(
              'p',
              { class: 'big', 'data-testid': 'face-count' },
              `${faces.length} face${faces.length === 1 ? '' : 's'}`,
            ),
            h('p', null, `${fmt.num(r.processing_ms, 1)} ms`),
            img,
            h(
              'ol',
              null,
              faces.map((f) => h('li', null, faceFacts(f))),
            ),
          ),
        );
      } catch (err) {
        out.show(refusal(err));
      }
    });
  });
  return h('div', null, h('h1', null, 'Detect'), form, out);
}
