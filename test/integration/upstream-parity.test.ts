import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildCommit } from '../../src/contract/version.js';
import { call, face, form, post, REPO, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

// Behaviours upstream's own server tests (InsightFace Server 0.3.x, server/tests/api) assert over HTTP.
let d: TestDaemon;
test.before(async () => {
  d = await startTestDaemon();
});
test.after.always(async () => {
  await d?.close();
});

const pkgVersion = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;

test('a wrong key and a missing key get the same upstream 401 message', async (t) => {
  for (const headers of [{}, { Authorization: 'Bearer not-the-key-0123456789' }] as Record<string, string>[]) {
    const r = await call(d, 'GET', '/v1/system', undefined, headers);
    t.is(r.status, 401);
    t.deepEqual(r.json.error, { code: 'unauthorized', message: 'A valid Bearer API key is required.', details: {} });
  }
});

test('an undecodable image is exactly {code: invalid_image, message: "The image could not be decoded.", details: {}}', async (t) => {
  const r = await post(
    d,
    '/v1/detect',
    form({ image: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('not-an-image')]) }),
  );
  t.is(r.res.status, 422);
  t.deepEqual(r.json.error, { code: 'invalid_image', message: 'The image could not be decoded.', details: {} });
});

test('an unknown collection is a structured 404 with upstream quoting and empty details', async (t) => {
  const r = await call(d, 'GET', '/v1/collections/missing');
  t.is(r.status, 404);
  t.deepEqual(r.json.error, {
    code: 'collection_not_found',
    message: "Collection 'missing' was not found.",
    details: {},
  });
  t.is((await call(d, 'POST', '/v1/collections', { id: 'nf', name: 'nf' })).status, 201);
  const p = await call(d, 'GET', '/v1/collections/nf/persons/nobody');
  t.deepEqual(p.json.error, { code: 'person_not_found', message: "Person 'nobody' was not found.", details: {} });
});

test("versions: the API contract version upstream clients gate on (0.3.1), Vigil's own version beside it", async (t) => {
  const h = await call(d, 'GET', '/v1/health');
  t.is(h.json.version, '0.3.1');
  t.is(h.json.vigil_version, pkgVersion);
  const s = await call(d, 'GET', '/v1/system');
  t.is(s.json.server_version, '0.3.1');
  t.is(s.json.vigil_version, pkgVersion);
  t.is(s.json.vigil_commit, buildCommit(), 'the git commit the build came from, beside the version');
  const o = await call(d, 'GET', '/openapi.json');
  t.is(o.json.info.version, '0.3.1');
});

test('/v1/system: every safe_config and runtime key upstream reports, and safe_config.detection is the detection profile', async (t) => {
  const s = (await call(d, 'GET', '/v1/system')).json;
  for (const k of [
    'max_image_bytes',
    'max_image_pixels',
    'max_registration_images',
    'max_request_bytes',
    'request_timeout_seconds',
    'inference_max_concurrency',
    'save_face_crops',
    'default_similarity_threshold',
    'default_search_profile',
    'default_search_capacity_rows',
    'max_search_capacity_rows',
    'default_max_faces_per_person',
    'default_search_load_policy',
    'search_backend',
    'search_device_id',
    'search_topk_mode',
    'detector_input_sizes',
    'detection',
    'max_detected_faces',
    'rtsp_max_streams',
    'rtsp_preview_fps',
    'web_ui_disabled',
    'config_file',
  ]) {
    t.true(k in s.safe_config, `safe_config.${k}`);
  }
  t.deepEqual(Object.keys(s.safe_config.detection).sort(), [
    'input_sizes',
    'nms_threshold',
    'single_face_selection',
    'threshold',
  ]);
  for (const k of [
    'mode',
    'os',
    'architecture',
    'cpu',
    'onnx_runtime_version',
    'available_execution_providers',
    'execution_provider',
    'detector_input_sizes',
    'recognizer_session_providers',
    'strict_provider_audit',
    'cuda_runtime_version',
    'cuda_image_version',
    'cudnn_version',
    'gpus',
    'models',
    'detector_session_providers',
    'detector_resolution_session_count',
    'detector_resolution_session_providers',
    'detector_static_shape_sessions',
    'detection_profile',
    'inference_concurrency',
  ]) {
    t.true(k in s.runtime, `runtime.${k}`);
  }
});

test('/openapi.json types and bounds multipart and query fields as upstream; source.type is not required', async (t) => {
  const o = (await call(d, 'GET', '/openapi.json')).json;
  const form = (path: string) =>
    o.components.schemas[o.paths[path].post.requestBody.content['multipart/form-data'].schema.$ref.split('/').pop()]
      .properties;
  const search = form('/v1/collections/{collection_id}/search');
  t.like(search.limit, { type: 'integer', minimum: 1, maximum: 100, default: 5 });
  t.deepEqual(search.threshold.anyOf, [{ type: 'number', minimum: 0, maximum: 1 }, { type: 'null' }]);
  t.deepEqual(form('/v1/detect').max_faces.anyOf, [{ type: 'integer', minimum: 1, maximum: 100 }, { type: 'null' }]);
  t.deepEqual(form('/v1/compare').threshold.anyOf, [{ type: 'number', minimum: 0, maximum: 1 }, { type: 'null' }]);
  const limit = o.paths['/v1/collections'].get.parameters.find((p: { name: string }) => p.name === 'limit');
  t.like(limit.schema, { type: 'integer', minimum: 1, maximum: 100, default: 50 });
  t.deepEqual(o.components.schemas['MonitorSource-Input'].required, ['url']);
  // Query and form values still arrive as text and are coerced.
  t.is((await call(d, 'GET', '/v1/collections?limit=2')).status, 200);
  t.is((await call(d, 'GET', '/v1/collections?limit=abc')).status, 400);
  t.is((await call(d, 'GET', '/v1/collections?limit=101')).status, 400);
});

test('external_trusted: a malformed list or a count mismatch is 400 before the contract id is compared', async (t) => {
  t.is((await call(d, 'POST', '/v1/collections', { id: 'ext', name: 'ext' })).status, 201);
  const base = {
    embedding_mode: 'external_trusted',
    embedding_contract_id: 'ifsemb-v2-sha256:wrong',
    images: face('identities/obama/1.jpg'),
  };
  const malformed = await post(d, '/v1/collections/ext/persons', form({ ...base, external_embeddings: '{not json' }));
  t.is(malformed.res.status, 400);
  t.is(malformed.json.error.code, 'invalid_external_embeddings');
  const count = await post(d, '/v1/collections/ext/persons', form({ ...base, external_embeddings: '[[0.1],[0.2]]' }));
  t.is(count.res.status, 400);
  t.is(count.json.error.code, 'external_embedding_count_mismatch');
  const mismatch = await post(d, '/v1/collections/ext/persons', form({ ...base, external_embeddings: '[[0.1]]' }));
  t.is(mismatch.res.status, 409);
  t.is(mismatch.json.error.code, 'embedding_contract_mismatch');
});

test('rejected_images: images that could not be loaded come first, entries carry no extra detail', async (t) => {
  const c = (await call(d, 'POST', '/v1/collections', { id: 'order', name: 'order' })).json.collection;
  const noFace = readFileSync(join(REPO, '../shared/fixtures/faces/noface/landscape.jpg'));
  const garbage = Buffer.from('garbage bytes, not an image');
  const r = await post(
    d,
    '/v1/collections/order/persons',
    form({ images: [noFace, garbage, face('identities/obama/1.jpg')] }),
  );
  t.is(r.res.status, 201, JSON.stringify(r.json));
  t.deepEqual(
    r.json.rejected_images.map((x: { index: number; reason: string }) => [x.index, x.reason]),
    [
      [1, 'invalid_image'],
      [0, 'face_not_found'],
    ],
  );
  // A trusted vector of the wrong dimension is rejected per image with exactly {index, filename, reason}.
  const ext = await post(
    d,
    '/v1/collections/order/persons',
    form({
      images: [face('identities/obama/2.jpg'), face('identities/obama/3.jpg')],
      embedding_mode: 'external_trusted',
      embedding_contract_id: c.embedding_contract_id,
      external_embeddings: JSON.stringify([
        [1, 2, 3],
        Array.from({ length: c.embedding_dimension }, (_, i) => (i === 0 ? 1 : 0)),
      ]),
    }),
  );
  t.is(ext.res.status, 201, JSON.stringify(ext.json));
  t.deepEqual(Object.keys(ext.json.rejected_images[0]).sort(), ['filename', 'index', 'reason']);
  t.is(ext.json.rejected_images[0].reason, 'invalid_external_embedding');
  // Nothing loadable at all: upstream's message.
  const none = await post(d, '/v1/collections/order/persons', form({ images: [garbage] }));
  t.is(none.res.status, 422);
  t.is(none.json.error.message, 'None of the uploaded images were valid.');
});

test("capacity: upstream's text and details", async (t) => {
  t.is(
    (await call(d, 'POST', '/v1/collections', { id: 'cap', name: 'cap', search: { capacity_rows: 1 } })).status,
    201,
  );
  t.is(
    (await post(d, '/v1/collections/cap/persons', form({ images: face('identities/obama/1.jpg') }))).res.status,
    201,
  );
  const r = await post(d, '/v1/collections/cap/persons', form({ images: face('identities/obama/2.jpg') }));
  t.is(r.res.status, 409);
  t.deepEqual(r.json.error, {
    code: 'collection_capacity_exceeded',
    message: 'The Collection has reached its configured search capacity.',
    details: { capacity_rows: 1, requested_rows: 2 },
  });
});

test("limit errors carry upstream's texts (request_too_large, image_too_large by bytes and by pixels)", async (t) => {
  const small = await startTestDaemon({
    server: ['max_request_bytes = 1000000', 'max_image_bytes = 200000', 'max_image_pixels = 1000000'],
  });
  try {
    const body = await call(small, 'POST', '/v1/collections', { id: 'x', name: 'x'.repeat(1_200_000) });
    t.is(body.status, 413);
    t.is(body.json.error.message, 'The request body is too large.');
    const bytes = await post(small, '/v1/detect', form({ image: face('identities/obama/1.jpg') })); // 280 KB
    t.is(bytes.res.status, 413);
    t.is(bytes.json.error.message, 'The image exceeds the byte limit.');
    const sharp = (await import('sharp')).default;
    const bomb = await sharp({ create: { width: 2000, height: 1000, channels: 3, background: '#808080' } })
      .png()
      .toBuffer();
    const pixels = await post(small, '/v1/detect', form({ image: bomb }));
    t.is(pixels.res.status, 413);
    t.is(pixels.json.error.message, 'The image pixel limit was exceeded.');
  } finally {
    await small.close();
  }
});

test('search with tied similarities sorts by similarity, then person id, and only then cuts to limit', async (t) => {
  const c = (await call(d, 'POST', '/v1/collections', { id: 'ties', name: 'ties' })).json.collection;
  const image = face('identities/obama/1.jpg');
  const embedding = (await post(d, '/v1/embeddings', form({ image }))).json.faces[0].embedding as number[];
  // Seven persons with the very same vector, registered in an order that is not their id order.
  for (const id of ['p1', 'p3', 'p5', 'p6', 'p7', 'p2', 'p4']) {
    const r = await post(
      d,
      '/v1/collections/ties/persons',
      form({
        id,
        images: image,
        embedding_mode: 'external_trusted',
        embedding_contract_id: c.embedding_contract_id,
        external_embeddings: JSON.stringify([embedding]),
      }),
    );
    t.is(r.res.status, 201, JSON.stringify(r.json));
  }
  const r = await post(d, '/v1/collections/ties/search', form({ image, limit: '5' }));
  t.is(r.res.status, 200);
  const sims = new Set(r.json.matches.map((m: { similarity: number }) => m.similarity));
  t.is(sims.size, 1, 'the seven similarities are one tie');
  t.deepEqual(
    r.json.matches.map((m: { person: { id: string } }) => m.person.id),
    ['p1', 'p2', 'p3', 'p4', 'p5'],
  );
});

test('an unknown monitor is 404 with the same quoting and empty details as every upstream not-found', async (t) => {
  const r = await call(d, 'GET', '/v1/monitors/nope');
  t.is(r.status, 404);
  t.deepEqual(r.json.error, { code: 'monitor_not_found', message: "Monitor 'nope' was not found.", details: {} });
});

test("search_capacity_too_large and collection_exists carry upstream's texts and details", async (t) => {
  const big = await call(d, 'POST', '/v1/collections', {
    id: 'too-large',
    name: 'Too large',
    search: { capacity_rows: 10_000_001 },
  });
  t.is(big.status, 400);
  t.deepEqual(big.json.error, {
    code: 'search_capacity_too_large',
    message: "capacity_rows exceeds this deployment's configured maximum.",
    details: { max_capacity_rows: 10_000_000 },
  });
  t.is((await call(d, 'POST', '/v1/collections', { id: 'bounded', name: 'Bounded' })).status, 201);
  const patch = await call(d, 'PATCH', '/v1/collections/bounded', { search: { capacity_rows: 10_000_001 } });
  t.is(patch.status, 400);
  t.deepEqual(patch.json.error, big.json.error);
  const again = await call(d, 'POST', '/v1/collections', { id: 'bounded', name: 'Duplicate' });
  t.is(again.status, 409);
  t.deepEqual(again.json.error, { code: 'collection_exists', message: 'The collection already exists.', details: {} });
});

test('bytes that are no image at all are "could not be decoded" (as Pillow answers them); a known other format is unsupported', async (t) => {
  for (const bytes of [Buffer.from('not-an-image'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a])]) {
    const r = await post(d, '/v1/detect', form({ image: bytes }));
    t.is(r.res.status, 422);
    t.deepEqual(r.json.error, { code: 'invalid_image', message: 'The image could not be decoded.', details: {} });
  }
  const gif = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
  const r = await post(d, '/v1/detect', form({ image: gif }));
  t.is(r.res.status, 422);
  t.is(r.json.error.message, 'Only JPEG, PNG, WebP, and BMP images are supported.');
});

test('a face compared with itself is exactly 1.0', async (t) => {
  const image = face('identities/obama/1.jpg');
  const r = await post(d, '/v1/compare', form({ source: image, target: image }));
  t.is(r.res.status, 200);
  t.is(r.json.similarity, 1);
});

test("/openapi.json documents the enable endpoint's 415 json_required and 403 origin_not_allowed", async (t) => {
  const o = (await call(d, 'GET', '/openapi.json')).json;
  const responses = o.paths['/v1/addons/liveness/enable'].post.responses;
  for (const status of ['403', '415'])
    t.deepEqual(
      responses[status]?.content?.['application/json']?.schema,
      { $ref: '#/components/schemas/ErrorEnvelope' },
      status,
    );
});
