import test from 'ava';
import sharp from 'sharp';
import { call, DEFAULT_THRESHOLD, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

let d: TestDaemon;
test.before(async () => {
  d = await startTestDaemon();
});
test.after.always(async () => {
  await d?.close();
});

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const OBAMA = [
  'identities/obama/1.jpg',
  'identities/obama/2.jpg',
  'identities/obama/3.jpg',
  'identities/obama/4.jpg',
  'identities/obama/5.jpg',
];
const BIDEN = ['identities/biden/1.jpg', 'identities/biden/2.jpg'];
const create = (body: Record<string, unknown>) => call(d, 'POST', '/v1/collections', body);
const register = (cid: string, parts: Record<string, Buffer | string | (Buffer | string)[]>) =>
  post(d, `/v1/collections/${cid}/persons`, form(parts));

test('create: defaults, model binding, timestamps; duplicate, bad id, unknown field, capacity and profile rules', async (t) => {
  const r = await create({ id: 'defaults', name: 'Defaults' });
  t.is(r.status, 201);
  const c = r.json.collection;
  t.like(c, {
    id: 'defaults',
    name: 'Defaults',
    description: '',
    default_threshold: DEFAULT_THRESHOLD,
    search_profile: 'fp32_v1',
    capacity_rows: 100000,
    max_faces_per_person: 20,
    load_policy: 'lazy',
    search_revision: 0,
    detection_revision: 1,
    save_face_crops: false,
    metadata: {},
    person_count: 0,
    face_count: 0,
    model_id: 'edge_s',
    embedding_dimension: 512,
  });
  t.deepEqual(c.detection, {
    input_sizes: [
      [96, 96],
      [512, 512],
    ],
    threshold: 0.5,
    nms_threshold: 0.4,
    single_face_selection: 'largest',
  });
  t.regex(c.created_at, ISO_MS);
  t.regex(c.embedding_contract_id, /^ifsemb-v2-sha256:[0-9a-f]{64}$/);
  const models = await call(d, 'GET', '/v1/models');
  t.is(c.model_digest, models.json.model_digest);

  t.is((await create({ id: '_default', name: 'Default' })).json.collection.load_policy, 'eager');
  t.is((await create({ id: 'defaults', name: 'again' })).json.error.code, 'collection_exists');
  for (const bad of [
    { id: '-x', name: 'n' },
    { id: 'a'.repeat(65), name: 'n' },
    { id: '_other', name: 'n' },
    { id: 'ok1', name: '' },
    { id: 'ok2', name: 'n', colour: 'red' },
    { id: 'ok3', name: 'n', search: { profile: 'fp64_v9' } },
  ]) {
    const e = await create(bad);
    t.is(e.status, 400, JSON.stringify(bad));
    t.is(e.json.error.code, 'invalid_request');
  }
  const big = await create({ id: 'big', name: 'n', search: { capacity_rows: 10_000_001 } });
  t.is(big.status, 400);
  t.is(big.json.error.code, 'search_capacity_too_large');
  t.is(big.json.error.details.max_capacity_rows, 10_000_000);
  const det = await create({ id: 'baddet', name: 'n', detection: { input_sizes: [[100, 100]] } });
  t.is(det.status, 400);
  t.is(det.json.error.code, 'invalid_detection_profile');
  const notJson = await fetch(`${d.url}/v1/collections`, {
    method: 'POST',
    headers: { ...d.auth, 'content-type': 'application/json' },
    body: '{"id":',
  });
  t.is(notJson.status, 400);
  t.is((await call(d, 'GET', '/v1/collections/missing')).json.error.code, 'collection_not_found');
});

test('list: keyset pages with signed cursors; tampered or cross-scope cursors are invalid_cursor', async (t) => {
  for (const id of ['page-a', 'page-b', 'page-c']) t.is((await create({ id, name: id })).status, 201);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const q: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const r = await call(d, 'GET', `/v1/collections?limit=1${q}`);
    t.is(r.status, 200);
    seen.push(...r.json.collections.map((c: { id: string }) => c.id));
    cursor = r.json.next_cursor;
  } while (cursor);
  t.deepEqual(seen, [...seen].sort());
  t.true(['page-a', 'page-b', 'page-c'].every((id) => seen.includes(id)));

  const first = await call(d, 'GET', '/v1/collections?limit=1');
  const token: string = first.json.next_cursor;
  const [payload, sig] = token.split('.');
  const forged = Buffer.from(payload!, 'base64url')
    .toString()
    .replace(/"after":"[^"]*"/, '"after":"zzz"');
  for (const bad of [
    `${Buffer.from(forged).toString('base64url')}.${sig}`,
    `${payload}.${sig!.slice(0, -2)}AA`,
    'x'.repeat(2049),
    'not-a-cursor',
  ]) {
    const r = await call(d, 'GET', `/v1/collections?cursor=${encodeURIComponent(bad)}`);
    t.is(r.status, 400);
    t.is(r.json.error.code, 'invalid_cursor');
  }
  // A collections cursor is not valid for a persons list.
  const persons = await call(d, 'GET', `/v1/collections/page-a/persons?cursor=${encodeURIComponent(token)}`);
  t.is(persons.json.error.code, 'invalid_cursor');
  t.is((await call(d, 'GET', '/v1/collections?limit=0')).json.error.code, 'invalid_request');
  t.is((await call(d, 'GET', '/v1/collections?limit=101')).json.error.code, 'invalid_request');
});

test('patch: nulls and unknown fields rejected, profile immutable, no-op bumps nothing, detection change bumps detection_revision', async (t) => {
  const c = (await create({ id: 'patchy', name: 'P' })).json.collection;
  for (const body of [
    { name: null },
    { threshold: null },
    { colour: 'red' },
    { search: { profile: 'int8_x736_v1' } },
    { detection: { threshold: null } },
    { metadata: null },
  ]) {
    const r = await call(d, 'PATCH', '/v1/collections/patchy', body);
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.json.error.code, 'invalid_request');
  }
  const same = await call(d, 'PATCH', '/v1/collections/patchy', { name: 'P', detection: { threshold: 0.5 } });
  t.is(same.status, 200);
  t.is(same.json.collection.updated_at, c.updated_at);
  t.is(same.json.collection.detection_revision, 1);
  const changed = await call(d, 'PATCH', '/v1/collections/patchy', {
    threshold: 0.55,
    detection: { threshold: 0.6, single_face_selection: 'center_largest' },
    search: { max_faces_per_person: 3, load_policy: 'eager' },
  });
  t.is(changed.status, 200);
  t.like(changed.json.collection, {
    default_threshold: 0.55,
    detection_revision: 2,
    max_faces_per_person: 3,
    load_policy: 'eager',
    search_profile: 'fp32_v1',
  });
  t.like(changed.json.collection.detection, { threshold: 0.6, single_face_selection: 'center_largest' });
  t.is(
    (await call(d, 'PATCH', '/v1/collections/patchy', { detection: { input_sizes: [[64, 48]] } })).json.error.code,
    'invalid_detection_profile',
  );
  t.is((await call(d, 'PATCH', '/v1/collections/nope', { name: 'x' })).json.error.code, 'collection_not_found');
});

test('registration: partial success (unloadable images first, then the rest, as upstream), all-fail 422, id/metadata/count errors, duplicates', async (t) => {
  t.is((await create({ id: 'reg', name: 'Reg' })).status, 201);
  const r = await register('reg', {
    id: 'obama',
    name: 'Barack',
    images: [face('noface/landscape.jpg'), face(OBAMA[0]!), Buffer.from('not an image'), face(OBAMA[1]!)],
  });
  t.is(r.res.status, 201);
  t.is(r.json.faces.length, 2);
  t.deepEqual(
    r.json.rejected_images.map((x: { index: number; reason: string }) => [x.index, x.reason]),
    [
      [2, 'invalid_image'],
      [0, 'face_not_found'],
    ],
  );
  t.like(r.json.person, { id: 'obama', name: 'Barack', external_id: null, face_count: 2 });
  const f = r.json.faces[0];
  t.like(f, {
    person_id: 'obama',
    embedding_source: 'server',
    embedding_contract_id: null,
    has_crop: false,
    model_id: 'edge_s',
  });
  t.is(f.landmarks.length, 5);
  t.regex(f.created_at, ISO_MS);

  const fail = await register('reg', { id: 'ghost', images: [face('noface/landscape.jpg'), Buffer.from('')] });
  t.is(fail.res.status, 422);
  t.is(fail.json.error.code, 'registration_failed');
  t.deepEqual(
    fail.json.error.details.rejected_images.map((x: { reason: string }) => x.reason),
    ['invalid_image', 'face_not_found'],
  );
  t.is(fail.json.error.message, 'None of the uploaded images contained one registrable face.');
  t.is((await call(d, 'GET', '/v1/collections/reg/persons/ghost')).json.error.code, 'person_not_found');

  t.is((await register('reg', { id: 'obama', images: [face(OBAMA[2]!)] })).json.error.code, 'person_exists');
  t.is((await register('reg', { id: 'bad id!', images: [face(OBAMA[2]!)] })).json.error.code, 'invalid_person_id');
  t.is(
    (await register('reg', { id: 'm1', metadata: '[1,2]', images: [face(OBAMA[2]!)] })).json.error.code,
    'invalid_metadata',
  );
  t.is(
    (await register('reg', { id: 'm2', metadata: '{oops', images: [face(OBAMA[2]!)] })).json.error.code,
    'invalid_metadata',
  );
  const none = await register('reg', { id: 'm3', name: 'x' });
  t.is(none.res.status, 400);
  t.is(none.json.error.code, 'invalid_request');
  const many = await register('reg', { id: 'm4', images: Array.from({ length: 21 }, () => face(OBAMA[2]!)) });
  t.is(many.res.status, 400);
  t.is(many.json.error.code, 'too_many_images');
  const badMode = await register('reg', { id: 'm5', review_mode: 'lenient', images: [face(OBAMA[2]!)] });
  t.is(badMode.json.error.code, 'invalid_request');
  const generated = await register('reg', {
    images: [face(BIDEN[0]!)],
    external_id: 'ext-1',
    metadata: '{"team":"blue"}',
  });
  t.is(generated.res.status, 201);
  t.regex(generated.json.person.id, /^[0-9a-f-]{36}$/);
  t.deepEqual(generated.json.person.metadata, { team: 'blue' });
  t.is((await register('reg', { images: [face(BIDEN[1]!)], external_id: 'ext-1' })).json.error.code, 'person_exists');
});

test('review modes: standard rejects a group photo (multiple_faces), off registers its largest face', async (t) => {
  t.is((await create({ id: 'modes', name: 'Modes' })).status, 201);
  const group = face('groups/obama_biden_office.jpg');
  const std = await register('modes', { id: 'p1', review_mode: 'standard', images: [group, face(OBAMA[0]!)] });
  t.is(std.res.status, 201);
  t.deepEqual(
    std.json.rejected_images.map((x: { index: number; reason: string }) => [x.index, x.reason]),
    [[0, 'multiple_faces']],
  );
  const off = await register('modes', { id: 'p2', images: [group] });
  t.is(off.res.status, 201);
  t.is(off.json.faces.length, 1);
});

test("strict review: bootstrap, then another person's face is an identity_similarity_conflict", async (t) => {
  t.is((await create({ id: 'strict', name: 'Strict' })).status, 201);
  const first = await register('strict', { id: 'obama', review_mode: 'strict', images: [face(OBAMA[0]!)] });
  t.is(first.res.status, 201);
  const impostor = await register('strict', {
    id: 'not-obama',
    review_mode: 'strict',
    images: [face(BIDEN[0]!), face(OBAMA[1]!)],
  });
  t.is(impostor.res.status, 201, JSON.stringify(impostor.json));
  t.is(impostor.json.faces.length, 1);
  const conflict = impostor.json.rejected_images[0];
  t.like(conflict, { index: 1, reason: 'identity_similarity_conflict', other_person_id: 'obama' });
  t.true(conflict.other_person_similarity >= conflict.same_person_similarity);
  t.is(conflict.matched_face_id, first.json.faces[0].id);
  const more = await post(
    d,
    '/v1/collections/strict/persons/obama/faces',
    form({ review_mode: 'strict', images: [face(OBAMA[2]!), face(BIDEN[1]!)] }),
  );
  t.is(more.res.status, 201);
  t.is(more.json.faces.length, 1);
  t.like(more.json.rejected_images[0], {
    index: 1,
    reason: 'identity_similarity_conflict',
    other_person_id: 'not-obama',
  });
});

test('limits: max_faces_per_person and capacity_rows are hard 409s with nothing committed', async (t) => {
  t.is((await create({ id: 'limits', name: 'L', search: { max_faces_per_person: 2, capacity_rows: 3 } })).status, 201);
  const over = await register('limits', { id: 'o', images: OBAMA.slice(0, 3).map(face) });
  t.is(over.res.status, 409);
  t.is(over.json.error.code, 'person_face_limit_exceeded');
  t.like(over.json.error.details, { max_faces: 2, requested_faces: 3 });
  t.is((await call(d, 'GET', '/v1/collections/limits/persons/o')).status, 404);
  t.is((await register('limits', { id: 'o', images: OBAMA.slice(0, 2).map(face) })).res.status, 201);
  const addOver = await post(d, '/v1/collections/limits/persons/o/faces', form({ images: [face(OBAMA[2]!)] }));
  t.is(addOver.json.error.code, 'person_face_limit_exceeded');
  t.is((await register('limits', { id: 'b', images: [face(BIDEN[0]!)] })).res.status, 201);
  const full = await register('limits', { id: 'c', images: [face(BIDEN[1]!)] });
  t.is(full.res.status, 409);
  t.is(full.json.error.code, 'collection_capacity_exceeded');
  t.like(full.json.error.details, { capacity_rows: 3, requested_rows: 4 });
  const c = (await call(d, 'GET', '/v1/collections/limits')).json.collection;
  t.like(c, { face_count: 3, person_count: 2 });
  const lower = await call(d, 'PATCH', '/v1/collections/limits', { search: { capacity_rows: 2 } });
  t.is(lower.status, 409);
  t.is(lower.json.error.code, 'collection_capacity_exceeded');
});

test('concurrent registrations racing the capacity limit never exceed it', async (t) => {
  t.is((await create({ id: 'race', name: 'Race', search: { capacity_rows: 3 } })).status, 201);
  const files = [...OBAMA, ...BIDEN, 'identities/rob_lowe/1.jpg'];
  const results = await Promise.all(files.map((f, i) => register('race', { id: `p${i}`, images: [face(f)] })));
  const codes = results.map((r) => r.res.status);
  t.is(codes.filter((s) => s === 201).length, 3, JSON.stringify(codes));
  t.true(
    results
      .filter((r) => r.res.status !== 201)
      .every((r) => r.res.status === 409 && r.json.error.code === 'collection_capacity_exceeded'),
  );
  const c = (await call(d, 'GET', '/v1/collections/race')).json.collection;
  t.like(c, { face_count: 3, person_count: 3, search_revision: 3 });
});

test('delete: collection_not_empty without force; a force delete racing searches gives 404, never 500', async (t) => {
  t.is((await create({ id: 'doomed', name: 'D' })).status, 201);
  t.is((await register('doomed', { id: 'o', images: [face(OBAMA[0]!)] })).res.status, 201);
  const refused = await call(d, 'DELETE', '/v1/collections/doomed');
  t.is(refused.status, 409);
  t.is(refused.json.error.code, 'collection_not_empty');
  // The refused delete left search working.
  const ok = await post(d, '/v1/collections/doomed/search', form({ image: face(OBAMA[1]!) }));
  t.is(ok.res.status, 200);
  const searches = Array.from({ length: 4 }, () =>
    post(d, '/v1/collections/doomed/search', form({ image: face(OBAMA[2]!) })),
  );
  const del = await call(d, 'DELETE', '/v1/collections/doomed?force=true');
  t.is(del.status, 204);
  t.is(await del.res.text(), '');
  for (const s of await Promise.all(searches)) {
    t.true(
      s.res.status === 200 || (s.res.status === 404 && s.json.error.code === 'collection_not_found'),
      `${s.res.status} ${JSON.stringify(s.json)}`,
    );
  }
  t.is((await call(d, 'GET', '/v1/collections/doomed')).status, 404);
  t.is((await call(d, 'DELETE', '/v1/collections/doomed')).json.error.code, 'collection_not_found');
});

test('persons: patch rules, substring search with cursors bound to the filter, faces list, deletes are immediate in search', async (t) => {
  t.is((await create({ id: 'people', name: 'People' })).status, 201);
  t.is(
    (
      await register('people', {
        id: 'obama',
        name: 'Barack Obama',
        external_id: 'POTUS-44',
        images: OBAMA.slice(0, 3).map(face),
      })
    ).res.status,
    201,
  );
  t.is(
    (await register('people', { id: 'biden', name: 'Joe Biden', external_id: 'potus_46', images: [face(BIDEN[0]!)] }))
      .res.status,
    201,
  );
  t.is(
    (await register('people', { id: 'lowe', name: '100% Rob', images: [face('identities/rob_lowe/1.jpg')] })).res
      .status,
    201,
  );

  const names = async (q: string) =>
    (await call(d, 'GET', `/v1/collections/people/persons?search=${encodeURIComponent(q)}`)).json.persons.map(
      (p: { id: string }) => p.id,
    );
  t.deepEqual(await names('POTUS'), ['biden', 'obama']);
  t.deepEqual(await names('joe'), ['biden']);
  t.deepEqual(await names('%'), ['lowe']);
  t.deepEqual(await names('_'), ['biden']);
  const page = await call(d, 'GET', '/v1/collections/people/persons?search=potus&limit=1');
  t.is(page.json.persons.length, 1);
  const other = await call(
    d,
    'GET',
    `/v1/collections/people/persons?search=joe&cursor=${encodeURIComponent(page.json.next_cursor)}`,
  );
  t.is(other.json.error.code, 'invalid_cursor');
  const next = await call(
    d,
    'GET',
    `/v1/collections/people/persons?search=potus&limit=1&cursor=${encodeURIComponent(page.json.next_cursor)}`,
  );
  t.deepEqual(
    next.json.persons.map((p: { id: string }) => p.id),
    ['obama'],
  );

  for (const body of [{ metadata: null }, { nickname: 'x' }])
    t.is((await call(d, 'PATCH', '/v1/collections/people/persons/obama', body)).json.error.code, 'invalid_request');
  t.is(
    (await call(d, 'PATCH', '/v1/collections/people/persons/obama', { external_id: 'potus_46' })).json.error.code,
    'external_id_exists',
  );
  const patched = await call(d, 'PATCH', '/v1/collections/people/persons/obama', { name: null, metadata: { term: 2 } });
  t.like(patched.json.person, { name: null, external_id: 'POTUS-44', metadata: { term: 2 }, face_count: 3 });

  const faces = await call(d, 'GET', '/v1/collections/people/persons/obama/faces?limit=2');
  t.is(faces.json.faces.length, 2);
  t.truthy(faces.json.next_cursor);
  t.false('embedding' in faces.json.faces[0]);
  const rest = await call(
    d,
    'GET',
    `/v1/collections/people/persons/obama/faces?cursor=${encodeURIComponent(faces.json.next_cursor)}`,
  );
  t.is(rest.json.faces.length, 1);
  t.is(rest.json.next_cursor, null);
  const crossScope = await call(
    d,
    'GET',
    `/v1/collections/people/persons/biden/faces?cursor=${encodeURIComponent(faces.json.next_cursor)}`,
  );
  t.is(crossScope.json.error.code, 'invalid_cursor');

  const before = (await call(d, 'GET', '/v1/collections/people')).json.collection.search_revision;
  const hit = await post(d, '/v1/collections/people/search', form({ image: face(OBAMA[3]!) }));
  const matchedFace: string = hit.json.matches[0].matched_face_id;
  t.is(hit.json.matches[0].person.id, 'obama');
  t.is((await call(d, 'DELETE', `/v1/collections/people/persons/obama/faces/${matchedFace}`)).status, 204);
  const after = await post(d, '/v1/collections/people/search', form({ image: face(OBAMA[3]!) }));
  t.not(after.json.matches[0]?.matched_face_id, matchedFace);
  t.is((await call(d, 'GET', '/v1/collections/people')).json.collection.search_revision, before + 1);
  t.is(
    (await call(d, 'DELETE', `/v1/collections/people/persons/obama/faces/${matchedFace}`)).json.error.code,
    'face_not_found',
  );

  t.is((await call(d, 'DELETE', '/v1/collections/people/persons/obama')).status, 204);
  const gone = await post(d, '/v1/collections/people/search', form({ image: face(OBAMA[3]!) }));
  t.false(gone.json.matches.some((m: { person: { id: string } }) => m.person.id === 'obama'));
  t.like((await call(d, 'GET', '/v1/collections/people')).json.collection, {
    person_count: 2,
    face_count: 2,
    search_revision: before + 2,
  });
  t.is((await call(d, 'GET', '/v1/collections/people/persons/obama/faces')).json.error.code, 'person_not_found');
});

test('search: inclusive threshold on the raw score, limit, face_not_found, deprecated face_selection', async (t) => {
  t.is((await create({ id: 'finder', name: 'F', threshold: 0.3 })).status, 201);
  t.is((await register('finder', { id: 'obama', images: OBAMA.slice(0, 2).map(face) })).res.status, 201);
  t.is((await register('finder', { id: 'biden', images: [face(BIDEN[0]!)] })).res.status, 201);
  const r = await post(d, '/v1/collections/finder/search', form({ image: face(OBAMA[4]!), threshold: '0' }));
  t.is(r.res.status, 200);
  t.is(r.json.threshold, 0);
  // Every person at or above 0 (biden may score just below 0 against this photo), best first.
  const sims: number[] = r.json.matches.map((m: { similarity: number }) => m.similarity);
  t.is(r.json.matches[0].person.id, 'obama');
  t.true(sims.every((v, i) => v >= 0 && (i === 0 || v <= sims[i - 1]!)));
  t.is(r.json.searched_face.landmarks.length, 5);
  const def = await post(d, '/v1/collections/finder/search', form({ image: face(OBAMA[4]!) }));
  t.is(def.json.threshold, 0.3);
  const top = r.json.matches[0].similarity as number;
  // A threshold equal to the score still matches (>=); one just above it does not.
  const exact = await post(
    d,
    '/v1/collections/finder/search',
    form({ image: face(OBAMA[4]!), threshold: String(top) }),
  );
  t.is(exact.json.matches[0]?.person.id, 'obama');
  const above = await post(
    d,
    '/v1/collections/finder/search',
    form({ image: face(OBAMA[4]!), threshold: String(Math.min(1, top + 1e-6)) }),
  );
  t.deepEqual(above.json.matches, []);
  t.is(
    (await post(d, '/v1/collections/finder/search', form({ image: face(OBAMA[4]!), threshold: '0', limit: '1' }))).json
      .matches.length,
    1,
  );
  t.is(
    (await post(d, '/v1/collections/finder/search', form({ image: face('noface/landscape.jpg') }))).json.error.code,
    'face_not_found',
  );
  t.is(
    (await post(d, '/v1/collections/finder/search', form({ image: face(OBAMA[4]!), face_selection: 'largest' }))).json
      .error.code,
    'request_detection_override_not_supported',
  );
  t.is(
    (await post(d, '/v1/collections/finder/search', form({ image: face(OBAMA[4]!), limit: '0' }))).json.error.code,
    'invalid_request',
  );
  t.is(
    (await post(d, '/v1/collections/nowhere/search', form({ image: face(OBAMA[4]!) }))).json.error.code,
    'collection_not_found',
  );
  // detect/compare/embeddings use the collection's profile; an unknown one is 404.
  t.is((await post(d, '/v1/detect', form({ image: face(OBAMA[4]!), collection_id: 'finder' }))).res.status, 200);
  t.is(
    (await post(d, '/v1/detect', form({ image: face(OBAMA[4]!), collection_id: 'nowhere' }))).json.error.code,
    'collection_not_found',
  );
});

test('crops: stored 112x112 JPEG behind auth, face_image_not_found without one', async (t) => {
  t.is((await create({ id: 'crops', name: 'C', save_face_crops: true })).status, 201);
  const r = await register('crops', { id: 'obama', images: [face(OBAMA[0]!)] });
  const f = r.json.faces[0];
  t.true(f.has_crop);
  const img = await fetch(`${d.url}/v1/collections/crops/persons/obama/faces/${f.id}/image`, { headers: d.auth });
  t.is(img.status, 200);
  t.is(img.headers.get('content-type'), 'image/jpeg');
  t.is(img.headers.get('cache-control'), 'no-store');
  const meta = await sharp(Buffer.from(await img.arrayBuffer())).metadata();
  t.like(meta, { format: 'jpeg', width: 112, height: 112 });
  t.is((await fetch(`${d.url}/v1/collections/crops/persons/obama/faces/${f.id}/image`)).status, 401);
  t.is(
    (await call(d, 'GET', `/v1/collections/crops/persons/obama/faces/00000000-0000-4000-8000-000000000000/image`)).json
      .error.code,
    'face_not_found',
  );

  t.is((await call(d, 'PATCH', '/v1/collections/crops', { save_face_crops: false })).status, 200);
  const later = await post(d, '/v1/collections/crops/persons/obama/faces', form({ images: [face(OBAMA[1]!)] }));
  t.false(later.json.faces[0].has_crop);
  const none = await call(d, 'GET', `/v1/collections/crops/persons/obama/faces/${later.json.faces[0].id}/image`);
  t.is(none.status, 404);
  t.is(none.json.error.code, 'face_image_not_found');
  // The earlier crop is kept: nothing is deleted or backfilled by the patch.
  t.is(
    (await fetch(`${d.url}/v1/collections/crops/persons/obama/faces/${f.id}/image`, { headers: d.auth })).status,
    200,
  );
});

test('external_trusted: the supplied vector is stored and searchable; contract and shape errors', async (t) => {
  const c = (await create({ id: 'trusted', name: 'T' })).json.collection;
  const emb = await post(d, '/v1/embeddings', form({ image: face(OBAMA[0]!) }));
  const vector: number[] = emb.json.faces[0].embedding;
  const base = { embedding_mode: 'external_trusted', embedding_contract_id: c.embedding_contract_id };
  const doubled = vector.map((v) => v * 2);
  const r = await register('trusted', {
    id: 'obama',
    ...base,
    external_embeddings: JSON.stringify([vector, doubled]),
    images: [face(OBAMA[0]!), face(OBAMA[1]!)],
  });
  t.is(r.res.status, 201, JSON.stringify(r.json));
  t.like(r.json.faces[0], { embedding_source: 'external_trusted', embedding_contract_id: c.embedding_contract_id });
  t.deepEqual(
    r.json.rejected_images.map((x: { index: number; reason: string }) => [x.index, x.reason]),
    [[1, 'invalid_external_embedding']],
  );
  const s = await post(d, '/v1/collections/trusted/search', form({ image: face(OBAMA[0]!) }));
  t.is(s.json.matches[0].person.id, 'obama');
  t.true(s.json.matches[0].similarity > 0.999);

  const errs: [Record<string, string>, number, string][] = [
    [
      { embedding_mode: 'external_trusted', embedding_contract_id: c.embedding_contract_id },
      400,
      'missing_external_embeddings',
    ],
    [
      { embedding_mode: 'external_trusted', external_embeddings: JSON.stringify([vector]) },
      400,
      'missing_embedding_contract_id',
    ],
    [{ ...base, external_embeddings: '{"a":1}' }, 400, 'invalid_external_embeddings'],
    [{ ...base, external_embeddings: JSON.stringify([vector, vector]) }, 400, 'external_embedding_count_mismatch'],
    [
      { ...base, embedding_contract_id: 'ifsemb-v2-sha256:00', external_embeddings: JSON.stringify([vector]) },
      409,
      'embedding_contract_mismatch',
    ],
    [{ external_embeddings: JSON.stringify([vector]) }, 400, 'unexpected_external_embedding'],
  ];
  for (const [fields, status, code] of errs) {
    const e = await register('trusted', { id: 'x', ...fields, images: [face(BIDEN[0]!)] });
    t.is(e.res.status, status, code);
    t.is(e.json.error.code, code);
  }
});

test('/v1/system reports collection stats and index state', async (t) => {
  t.is((await create({ id: 'sys', name: 'S', search: { profile: 'int8_x736_v1', load_policy: 'eager' } })).status, 201);
  t.is((await register('sys', { id: 'o', images: [face(OBAMA[0]!)] })).res.status, 201);
  const sys = await call(d, 'GET', '/v1/system');
  t.true(sys.json.stats.collection_count >= 1);
  t.true(sys.json.stats.face_count >= 1);
  const entry = sys.json.search.collections.find((c: { collection_id: string }) => c.collection_id === 'sys');
  t.like(entry, { state: 'ready', profile: 'int8_x736_v1', live_rows: 1, applied_revision: 1, capacity_rows: 100000 });
  t.true(sys.json.search.profiles.includes('fp16_v1'));
});
