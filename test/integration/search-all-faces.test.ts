import test from 'ava';
import sharp from 'sharp';
import { installLiveness } from '../../src/addons/livenessFiles.js';
import { installPack } from '../../src/models/installer.js';
import { call, face, form, labels, MODELS_MIRROR, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { Sink } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Multi-face search (faces=all): one result per detected face with its box, over HTTP on real photos.
 * The default (and faces=selected) must stay the upstream single-face response exactly.
 */
let d: TestDaemon;
const GALLERY = {
  obama: ['identities/obama/1.jpg', 'identities/obama/2.jpg'],
  biden: ['identities/biden/1.jpg', 'identities/biden/2.jpg'],
  kit_harington: ['identities/kit_harington/1.jpg'],
};

test.before(async () => {
  d = await startTestDaemon();
  await call(d, 'POST', '/v1/collections', { id: 'staff', name: 'Staff' });
  for (const [id, files] of Object.entries(GALLERY)) {
    const r = await post(d, '/v1/collections/staff/persons', form({ id, name: id, images: files.map(face) }));
    if (r.res.status !== 201) throw new Error(`enrol ${id}: ${JSON.stringify(r.json)}`);
  }
});
test.after.always(async () => {
  await d?.close();
});

const search = (image: Buffer, fields: Record<string, string> = {}) =>
  post(d, '/v1/collections/staff/search', form({ image, ...fields }));
const byX = (faces: any[]) => [...faces].sort((a, b) => a.face.bbox.pixels.x - b.face.bbox.pixels.x);

for (const file of ['groups/obama_biden_office.jpg', 'groups/obama_biden_stage.jpg']) {
  test(`faces=all identifies every face of ${file} left to right, each with its box`, async (t) => {
    const { res, json } = await search(face(file), { faces: 'all' });
    t.is(res.status, 200);
    const expected = labels.groups[file]!.left_to_right!;
    t.is(json.faces.length, expected.length);
    const faces = byX(json.faces);
    faces.forEach((f, i) => {
      const who = expected[i]!;
      if (who in GALLERY)
        t.is(
          f.matches[0]?.person.id,
          who,
          `${file} face ${i}: ${JSON.stringify(f.matches.map((m: any) => [m.person.id, m.similarity]))}`,
        );
      else t.deepEqual(f.matches, [], `${who} is in no gallery`);
      t.is(f.problem, undefined);
      t.true(f.face.bbox.pixels.width > 0 && f.face.bbox.pixels.height > 0);
      t.is(f.face.landmarks.length, 5);
      for (const m of f.matches) t.true(m.similarity >= json.threshold);
    });
    // Largest first, as /v1/detect orders them; exactly one is the selected face, and it is what the
    // upstream fields describe.
    const areas = json.faces.map((f: any) => f.face.bbox.pixels.width * f.face.bbox.pixels.height);
    t.deepEqual(
      areas,
      [...areas].sort((a: number, b: number) => b - a),
    );
    const selected = json.faces.filter((f: any) => f.selected);
    t.is(selected.length, 1);
    t.deepEqual(json.searched_face, selected[0].face);
    t.deepEqual(json.matches, selected[0].matches);
    const det = await post(d, '/v1/detect', form({ image: face(file) }));
    t.deepEqual(
      json.faces.map((f: any) => f.face.bbox),
      det.json.faces.map((f: any) => f.bbox),
      'the same boxes as /v1/detect',
    );
  });
}

test('faces=all applies the limit and the threshold to every face', async (t) => {
  const one = await search(face('groups/obama_biden_office.jpg'), { faces: 'all', limit: '1', threshold: '0' });
  t.is(one.json.threshold, 0);
  for (const f of one.json.faces) t.is(f.matches.length, 1, 'threshold 0 finds someone; limit 1 keeps one');
  const none = await search(face('groups/obama_biden_office.jpg'), { faces: 'all', threshold: '0.99' });
  for (const f of none.json.faces) t.deepEqual(f.matches, []);
});

test('without faces (and with faces=selected) the response is the upstream single-face one, unchanged', async (t) => {
  const image = face('groups/obama_biden_office.jpg');
  const plain = await search(image);
  const selected = await search(image, { faces: 'selected' });
  const all = await search(image, { faces: 'all' });
  t.deepEqual(Object.keys(plain.json).sort(), ['matches', 'processing_ms', 'request_id', 'searched_face', 'threshold']);
  const strip = ({ request_id: _r, processing_ms: _p, ...rest }: Record<string, unknown>) => rest;
  t.deepEqual(strip(selected.json), strip(plain.json));
  // faces=all adds faces[] and leaves every upstream field as the default request gives it.
  const { faces, ...upstream } = strip(all.json) as Record<string, unknown> & { faces: unknown[] };
  t.is(faces.length, 2);
  t.deepEqual(upstream, strip(plain.json));
});

test('faces=all: no face is face_not_found like the default; a bad value is a 400', async (t) => {
  const none = await search(face('noface/landscape.jpg'), { faces: 'all' });
  t.is(none.res.status, 422);
  t.is(none.json.error.code, 'face_not_found');
  const bad = await search(face('groups/obama_biden_office.jpg'), { faces: 'every' });
  t.is(bad.res.status, 400);
  t.is(bad.json.error.code, 'invalid_request');
});

test('/openapi.json documents the faces field and the per-face results', async (t) => {
  const doc = (await (await fetch(`${d.url}/openapi.json`)).json()) as any;
  const body = doc.components.schemas.Body_search_v1_collections__collection_id__search_post;
  t.deepEqual(body.properties.faces.enum ?? body.properties.faces.anyOf?.[0]?.enum, ['selected', 'all']);
  t.regex(body.properties.faces.description, /all \(Vigil extension\)/);
  t.truthy(doc.components.schemas.SearchResponse.properties.faces);
  t.truthy(doc.components.schemas.FaceSearchResult);
  t.false((doc.components.schemas.SearchResponse.required as string[]).includes('faces'));
});

test('faces=all with liveness in normal mode: a spoofed face gets its problem, the live one is still searched', async (t) => {
  const models = tempDir(t, 'vigil-allfaces-models-');
  await installPack({
    packId: 'edge_s',
    modelsDir: models,
    mirror: MODELS_MIRROR,
    acceptLicense: true,
    io: { stdout: new Sink(), stderr: new Sink() } as never,
  });
  await installLiveness({ modelsDir: models, mirror: MODELS_MIRROR });
  const live = await startTestDaemon({
    modelsDir: models,
    toml: '[inference]\naddons = ["liveness"]\nliveness_mode = "normal"',
  });
  try {
    await call(live, 'POST', '/v1/collections', { id: 'door', name: 'Door' });
    t.is(
      (
        await post(
          live,
          '/v1/collections/door/persons',
          form({ id: 'person_t1', images: face('liveness/live_T1.jpg') }),
        )
      ).res.status,
      201,
    );
    // The live photo and a phone-screen replay side by side (both upright 480x640).
    const [a, b] = await Promise.all(
      ['liveness/live_T1.jpg', 'liveness/spoof_screen_F2.jpg'].map((f) =>
        sharp(face(f)).rotate().resize(480, 640).toBuffer(),
      ),
    );
    const pair = await sharp({ create: { width: 960, height: 640, channels: 3, background: '#000' } })
      .composite([
        { input: a!, left: 0, top: 0 },
        { input: b!, left: 480, top: 0 },
      ])
      .jpeg()
      .toBuffer();
    const { res, json } = await post(live, '/v1/collections/door/search', form({ image: pair, faces: 'all' }));
    t.is(res.status, 200, JSON.stringify(json));
    const [left, right] = byX(json.faces);
    t.is(left.face.liveness.status, 'ok');
    t.true(left.face.liveness.is_live);
    t.is(left.problem, undefined);
    t.is(left.matches[0]?.person.id, 'person_t1');
    t.is(right.problem?.code, 'liveness_fake');
    t.false(right.face.liveness.is_live);
    t.deepEqual(right.matches, [], 'the index is never queried for a spoofed face');
  } finally {
    await live.close();
  }
});
