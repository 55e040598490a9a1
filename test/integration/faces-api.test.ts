import test from 'ava';
import sharp from 'sharp';
import {
  DEFAULT_THRESHOLD,
  encodeBmp24,
  face,
  form,
  labels,
  post,
  startTestDaemon,
  type TestDaemon,
} from '../helpers/daemon.js';

let d: TestDaemon;
test.before(async () => {
  d = await startTestDaemon();
});
test.after.always(async () => {
  await d?.close();
});

const cosine = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i]!, 0);

test('group photos give the face counts in labels.json, sorted by descending area', async (t) => {
  for (const [file, { faces }] of Object.entries(labels.groups)) {
    const { res, json } = await post(d, '/v1/detect', form({ image: face(file) }));
    t.is(res.status, 200, file);
    t.is(json.faces.length, faces, file);
    const areas = json.faces.map((f: any) => f.bbox.pixels.width * f.bbox.pixels.height);
    t.deepEqual(
      areas,
      [...areas].sort((a: number, b: number) => b - a),
      `${file} sorted by area`,
    );
    for (const f of json.faces) {
      t.is(f.landmarks.length, 5);
      t.true(f.detection_score >= 0.5 && f.detection_score <= 1);
      for (const k of ['score', 'sharpness', 'brightness', 'pose']) t.true(f.quality[k] >= 0 && f.quality[k] <= 1, k);
      t.is(f.embedding, undefined, 'detect computes no embeddings');
    }
  }
});

test('the landscape has no face: detect 200 with faces [], embeddings and compare 422 face_not_found', async (t) => {
  const det = await post(d, '/v1/detect', form({ image: face('noface/landscape.jpg') }));
  t.is(det.res.status, 200);
  t.deepEqual(det.json.faces, []);
  const emb = await post(d, '/v1/embeddings', form({ image: face('noface/landscape.jpg') }));
  t.is(emb.res.status, 422);
  t.is(emb.json.error.code, 'face_not_found');
  const cmp = await post(
    d,
    '/v1/compare',
    form({ source: face('identities/obama/1.jpg'), target: face('noface/landscape.jpg') }),
  );
  t.is(cmp.res.status, 422);
  t.is(cmp.json.error.code, 'face_not_found');
  t.is(cmp.json.error.details.side, 'target');
});

test('EXIF orientation is applied before detection (live_T1 is stored 640x480 with orientation 6)', async (t) => {
  const { json } = await post(d, '/v1/detect', form({ image: face('liveness/live_T1.jpg') }));
  t.is(json.faces.length, 1);
  const f = json.faces[0];
  // Upright the image is 480 wide and 640 high: the normalised box maps back inside those bounds.
  t.true(f.bbox.pixels.x + f.bbox.pixels.width <= 480);
  t.true(f.bbox.pixels.y + f.bbox.pixels.height <= 640);
  // Pixels are rounded, normalised values are not: allow a pixel of slack in the implied image size.
  t.true(Math.abs(f.bbox.pixels.width / f.bbox.normalized.width - 480) < 3);
  t.true(Math.abs(f.bbox.pixels.height / f.bbox.normalized.height - 640) < 3);
  // Eyes above the mouth in an upright face.
  t.true(f.landmarks[0][1] < f.landmarks[3][1] && f.landmarks[1][1] < f.landmarks[4][1]);
});

test('a close-up that fills the frame (pre-aligned 112x112 crop) is still found', async (t) => {
  const { json } = await post(d, '/v1/detect', form({ image: face('identities/tom_hanks_aligned112/1.png') }));
  t.is(json.faces.length, 1);
});

test('max_faces caps the result to the largest faces', async (t) => {
  const all = await post(d, '/v1/detect', form({ image: face('groups/t1_friends.jpg') }));
  const two = await post(d, '/v1/detect', form({ image: face('groups/t1_friends.jpg'), max_faces: '2' }));
  t.is(two.json.faces.length, 2);
  t.deepEqual(two.json.faces, all.json.faces.slice(0, 2));
});

test("every same-person pair matches at the pack's default threshold and no different-person pair does", async (t) => {
  const people = Object.entries(labels.identities);
  const emb = new Map<string, number[]>();
  for (const [, files] of people) {
    for (const file of files) {
      const { res, json } = await post(d, '/v1/embeddings', form({ image: face(file) }));
      t.is(res.status, 200, file);
      t.is(json.faces.length, 1);
      const v: number[] = json.faces[0].embedding;
      t.is(v.length, 512);
      t.true(Math.abs(Math.hypot(...v) - 1) < 1e-5, 'L2-normalised');
      emb.set(file, v);
    }
  }
  let lowestSame = 1;
  for (const [, files] of people) {
    for (let i = 0; i < files.length; i++) {
      for (let j = i + 1; j < files.length; j++) {
        const { json } = await post(d, '/v1/compare', form({ source: face(files[i]!), target: face(files[j]!) }));
        t.true(json.matched, `${files[i]} vs ${files[j]}: ${json.similarity}`);
        t.is(json.threshold, DEFAULT_THRESHOLD);
        t.true(
          Math.abs(json.similarity - cosine(emb.get(files[i]!)!, emb.get(files[j]!)!)) < 1e-5,
          'compare agrees with embeddings',
        );
        lowestSame = Math.min(lowestSame, json.similarity);
      }
    }
  }
  let highestDifferent = -1;
  const all = people.flatMap(([who, files]) => files.map((f) => ({ who, f })));
  for (let i = 0; i < all.length; i++) {
    for (let j = i + 1; j < all.length; j++) {
      if (all[i]!.who === all[j]!.who) continue;
      const s = cosine(emb.get(all[i]!.f)!, emb.get(all[j]!.f)!);
      highestDifferent = Math.max(highestDifferent, s);
      t.true(s < DEFAULT_THRESHOLD, `${all[i]!.f} vs ${all[j]!.f}: ${s}`);
    }
  }
  // A real compare call for a different-person pair, through the endpoint itself.
  const diff = await post(
    d,
    '/v1/compare',
    form({ source: face('identities/obama/1.jpg'), target: face('identities/biden/1.jpg') }),
  );
  t.false(diff.json.matched);
  t.log(
    `lowest same-person similarity ${lowestSame.toFixed(4)}, highest different-person ${highestDifferent.toFixed(4)}`,
  );
});

test('compare honours an explicit threshold inclusively and validates it', async (t) => {
  const a = face('identities/obama/1.jpg'),
    b = face('identities/obama/2.jpg');
  const base = await post(d, '/v1/compare', form({ source: a, target: b }));
  const high = await post(d, '/v1/compare', form({ source: a, target: b, threshold: '0.99' }));
  t.false(high.json.matched);
  t.is(high.json.threshold, 0.99);
  t.true(base.json.similarity > DEFAULT_THRESHOLD);
  const bad = await post(d, '/v1/compare', form({ source: a, target: b, threshold: '1.5' }));
  t.is(bad.res.status, 400);
  t.is(bad.json.error.code, 'invalid_request');
});

test('embeddings returns one face and the model summary', async (t) => {
  const { json } = await post(d, '/v1/embeddings', form({ image: face('groups/obama_biden_office.jpg') }));
  t.is(json.faces.length, 1);
  t.is(json.model.model_id, 'edge_s');
  t.is(json.model.embedding_dimension, 512);
  t.regex(json.model.model_digest, /^[0-9a-f]{64}$/);
  t.is(json.model.provider, 'cpu');
  t.deepEqual(
    json.model.models.map((m: any) => m.task),
    ['face_detection', 'face_recognition'],
  );
  t.is(typeof json.processing_ms, 'number');
});

test('PNG (grayscale and RGBA), WebP and BMP are accepted; BMP gives the same faces as its source', async (t) => {
  for (const file of [
    'identities/alex_lacamoire/3.png',
    'identities/cai_xukun/1.png',
    'identities/robert_downey_jr/1.webp',
  ]) {
    const { res, json } = await post(d, '/v1/detect', form({ image: face(file) }));
    t.is(res.status, 200, file);
    t.true(json.faces.length >= 1, file);
  }
  const src = face('groups/kit_harington_rose_leslie.jpg');
  const { data, info } = await sharp(src).rotate().removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const bmp = encodeBmp24(data, info.width, info.height);
  const fromBmp = await post(d, '/v1/detect', form({ image: bmp }));
  const fromJpeg = await post(d, '/v1/detect', form({ image: src }));
  t.is(fromBmp.res.status, 200);
  t.deepEqual(
    fromBmp.json.faces.map((f: any) => f.bbox.pixels),
    fromJpeg.json.faces.map((f: any) => f.bbox.pixels),
  );
});

test('deprecated overrides are refused: min_score on detect, face_selection on embeddings', async (t) => {
  const det = await post(d, '/v1/detect', form({ image: face('identities/obama/1.jpg'), min_score: '0.3' }));
  t.is(det.res.status, 400);
  t.is(det.json.error.code, 'request_detection_override_not_supported');
  const emb = await post(
    d,
    '/v1/embeddings',
    form({ image: face('identities/obama/1.jpg'), face_selection: 'largest' }),
  );
  t.is(emb.res.status, 400);
  t.is(emb.json.error.code, 'request_detection_override_not_supported');
});

test('a collection_id that does not exist is 404 collection_not_found', async (t) => {
  for (const [path, parts] of [
    ['/v1/detect', { image: face('identities/obama/1.jpg') }],
    ['/v1/embeddings', { image: face('identities/obama/1.jpg') }],
    ['/v1/compare', { source: face('identities/obama/1.jpg'), target: face('identities/obama/2.jpg') }],
  ] as const) {
    const { res, json } = await post(d, path, form({ ...parts, collection_id: 'nope' }));
    t.is(res.status, 404, path);
    t.is(json.error.code, 'collection_not_found', path);
  }
});

test('images that are not JPEG/PNG/WebP/BMP, empty or corrupt are 422 invalid_image', async (t) => {
  const gif = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');
  const truncated = face('identities/obama/1.jpg').subarray(0, 2000);
  for (const [name, bytes] of [
    ['gif', gif],
    ['text', Buffer.from('hello')],
    ['empty', Buffer.alloc(0)],
    ['truncated jpeg', truncated],
  ] as const) {
    const { res, json } = await post(d, '/v1/detect', form({ image: bytes }));
    t.is(res.status, 422, name);
    t.is(json.error.code, 'invalid_image', name);
  }
});

test('validation errors are 400 invalid_request in the envelope', async (t) => {
  const cases: [string, FormData | string, Record<string, string>][] = [
    ['missing image', form({ max_faces: '3' }), {}],
    ['max_faces 0', form({ image: face('identities/obama/1.jpg'), max_faces: '0' }), {}],
    ['max_faces not a number', form({ image: face('identities/obama/1.jpg'), max_faces: 'many' }), {}],
    ['two images', form({ image: [face('identities/obama/1.jpg'), face('identities/obama/2.jpg')] }), {}],
    ['json body', JSON.stringify({ image: 'x' }), { 'Content-Type': 'application/json' }],
    [
      'broken multipart',
      '--x\r\nContent-Disposition: form-data; name="image"; filename="a"\r\n\r\nabc',
      { 'Content-Type': 'multipart/form-data; boundary=x' },
    ],
  ];
  for (const [name, body, headers] of cases) {
    const { res, json } = await post(d, '/v1/detect', body, { ...d.auth, ...headers });
    t.is(res.status, 400, name);
    t.is(json.error.code, 'invalid_request', name);
    t.regex(json.error.message, /^Request validation failed: /, name);
    t.deepEqual(Object.keys(json).sort(), ['error', 'request_id'], name);
    t.is(res.headers.get('x-request-id'), json.request_id, name);
  }
});
