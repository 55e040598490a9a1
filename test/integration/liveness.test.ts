import test from 'ava';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { installLiveness } from '../../src/addons/livenessFiles.js';
import { loadCatalog } from '../../src/models/catalog.js';
import { installPack } from '../../src/models/installer.js';
import { call, face, form, MODELS_MIRROR, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { Sink } from '../helpers/shared.js';
import { createHash } from 'node:crypto';
import { fileTempDir, tempDir } from '../helpers/tempDir.js';

const LIVE = face('liveness/live_T1.jpg');
const SPOOFS = ['liveness/spoof_print_F1.jpg', 'liveness/spoof_screen_F2.jpg', 'liveness/spoof_rgb_fake.jpg'];
const PRINT = face(SPOOFS[0]!);
const OBAMA = face('identities/obama/1.jpg');
const quiet = { stdout: new Sink(), stderr: new Sink() } as never;

/** A models dir with the edge_s pack and, unless told otherwise, the liveness addon, from the shared mirror. */
async function modelsDir(withLiveness = true): Promise<string> {
  const dir = fileTempDir('vigil-live-models-');
  await installPack({ packId: 'edge_s', modelsDir: dir, mirror: MODELS_MIRROR, acceptLicense: true, io: quiet });
  if (withLiveness) await installLiveness({ modelsDir: dir, mirror: MODELS_MIRROR });
  return dir;
}

const livenessToml = (mode: string, scope: string, registration: boolean) =>
  `[inference]\naddons = ["liveness"]\nliveness_mode = "${mode}"\nliveness_compare_scope = "${scope}"\nliveness_on_registration = ${registration}\n`;

let normal: TestDaemon, observe: TestDaemon, targetOnly: TestDaemon;
let edge: Buffer;
const shared = modelsDir();

test.before(async () => {
  const dir = await shared;
  [normal, observe, targetOnly] = await Promise.all([
    startTestDaemon({ modelsDir: dir, toml: livenessToml('normal', 'both', true) }),
    startTestDaemon({ modelsDir: dir, toml: livenessToml('observe', 'source', true) }),
    startTestDaemon({ modelsDir: dir, toml: livenessToml('normal', 'target', false) }),
  ]);
  // A face cut by the image's left edge: the live photo from 35% into the face box.
  const { json } = await post(normal, '/v1/detect', form({ image: LIVE }));
  const box = json.faces[0].bbox.pixels;
  const img = sharp(LIVE).rotate();
  const meta = await sharp(await img.clone().toBuffer()).metadata();
  const left = Math.round(box.x + box.width * 0.35);
  edge = await img
    .extract({ left, top: 0, width: meta.width! - left, height: meta.height! })
    .jpeg()
    .toBuffer();
});
test.after.always(async () => {
  await Promise.all([normal, observe, targetOnly].map((d) => d?.close()));
});

test('detect: the four liveness photos come out as labelled at the default threshold (0.8)', async (t) => {
  const live = await post(normal, '/v1/detect', form({ image: LIVE }));
  t.is(live.res.status, 200);
  t.deepEqual(Object.keys(live.json.faces[0].liveness).sort(), ['is_live', 'live_score', 'status']);
  t.like(live.json.faces[0].liveness, { status: 'ok', is_live: true });
  t.true(live.json.faces[0].liveness.live_score >= 0.8);
  for (const f of SPOOFS) {
    const r = await post(normal, '/v1/detect', form({ image: face(f) }));
    t.is(r.res.status, 200, f);
    t.like(r.json.faces[0].liveness, { status: 'ok', is_live: false }, f);
    t.true(r.json.faces[0].liveness.live_score < 0.8, f);
  }
});

test('detect evaluates every face, and a face at the image edge is input_rejected with the guidance', async (t) => {
  const group = await post(normal, '/v1/detect', form({ image: face('groups/t1_friends.jpg') }));
  t.is(group.json.faces.length, 6);
  t.true(group.json.faces.every((f: any) => f.liveness && ['ok', 'input_rejected'].includes(f.liveness.status)));
  const r = await post(normal, '/v1/detect', form({ image: edge }));
  t.is(r.res.status, 200);
  t.deepEqual(r.json.faces[0].liveness, {
    status: 'input_rejected',
    is_live: null,
    live_score: null,
    reason:
      'Insufficient image area around the face for liveness detection. Move the face toward the center, step back from the camera, or use a less tightly cropped image.',
  });
});

test('normal mode: embeddings and search answer 422 with details.liveness; input_rejected uses the reason as message', async (t) => {
  const fake = await post(normal, '/v1/embeddings', form({ image: PRINT }));
  t.is(fake.res.status, 422);
  t.is(fake.json.error.code, 'liveness_fake');
  t.like(fake.json.error.details.liveness, { status: 'ok', is_live: false });
  const cut = await post(normal, '/v1/embeddings', form({ image: edge }));
  t.is(cut.json.error.code, 'liveness_input_rejected');
  t.is(cut.json.error.message, cut.json.error.details.liveness.reason);
  const live = await post(normal, '/v1/embeddings', form({ image: LIVE }));
  t.is(live.res.status, 200);
  t.like(live.json.faces[0].liveness, { is_live: true });
  t.is(live.json.faces[0].embedding.length, 512);

  t.is((await call(normal, 'POST', '/v1/collections', { id: 'gate', name: 'Gate' })).status, 201);
  t.is((await post(normal, '/v1/collections/gate/persons', form({ id: 'tee', images: LIVE }))).res.status, 201);
  const blocked = await post(normal, '/v1/collections/gate/search', form({ image: PRINT }));
  t.is(blocked.res.status, 422);
  t.is(blocked.json.error.code, 'liveness_fake');
  const found = await post(normal, '/v1/collections/gate/search', form({ image: LIVE }));
  t.is(found.json.matches[0].person.id, 'tee');
});

test('normal mode compare with scope both: either failing side is a 422 naming the side', async (t) => {
  const src = await post(normal, '/v1/compare', form({ source: PRINT, target: LIVE }));
  t.is(src.res.status, 422);
  t.like(src.json.error, { code: 'liveness_fake', details: { side: 'source' } });
  const tgt = await post(normal, '/v1/compare', form({ source: LIVE, target: edge }));
  t.like(tgt.json.error, { code: 'liveness_input_rejected', details: { side: 'target' } });
  const ok = await post(normal, '/v1/compare', form({ source: LIVE, target: LIVE }));
  t.is(ok.res.status, 200);
  t.like(ok.json.source_face.liveness, { is_live: true });
  t.like(ok.json.target_face.liveness, { is_live: true });
});

test('compare with both sides failing always answers the source and its verdict (as upstream, which checks it first)', async (t) => {
  const replies = await Promise.all(
    Array.from({ length: 32 }, () => post(normal, '/v1/compare', form({ source: PRINT, target: edge }))),
  );
  const seen = replies.map((r) => `${r.res.status} ${r.json.error?.code} ${r.json.error?.details?.side}`);
  t.deepEqual([...new Set(seen)], ['422 liveness_fake source'], seen.join(', '));
});

test('scope target only evaluates the target; scope source only the source (observe)', async (t) => {
  const srcSpoof = await post(targetOnly, '/v1/compare', form({ source: PRINT, target: LIVE }));
  t.is(srcSpoof.res.status, 200);
  t.is(srcSpoof.json.source_face.liveness, undefined);
  const tgtSpoof = await post(targetOnly, '/v1/compare', form({ source: LIVE, target: PRINT }));
  t.like(tgtSpoof.json.error, { code: 'liveness_fake', details: { side: 'target' } });

  const obs = await post(observe, '/v1/compare', form({ source: PRINT, target: PRINT }));
  t.is(obs.res.status, 200);
  t.like(obs.json.source_face.liveness, { status: 'ok', is_live: false });
  t.is(obs.json.target_face.liveness, undefined);
});

test('observe mode: embeddings and search carry on with the result on the face', async (t) => {
  const r = await post(observe, '/v1/embeddings', form({ image: PRINT }));
  t.is(r.res.status, 200);
  t.like(r.json.faces[0].liveness, { status: 'ok', is_live: false });
  t.is(r.json.faces[0].embedding.length, 512);
  const cut = await post(observe, '/v1/embeddings', form({ image: edge }));
  t.is(cut.res.status, 200);
  t.is(cut.json.faces[0].liveness.status, 'input_rejected');
  t.is((await call(observe, 'POST', '/v1/collections', { id: 'obs', name: 'Obs' })).status, 201);
  t.is((await post(observe, '/v1/collections/obs/persons', form({ id: 'tee', images: LIVE }))).res.status, 201);
  const s = await post(observe, '/v1/collections/obs/search', form({ image: PRINT }));
  t.is(s.res.status, 200);
  t.like(s.json.searched_face.liveness, { is_live: false });
});

test('registration in normal mode: per-image liveness reasons with the result; off and external_trusted do not bypass it', async (t) => {
  t.is((await call(normal, 'POST', '/v1/collections', { id: 'reg', name: 'Reg' })).status, 201);
  const r = await post(normal, '/v1/collections/reg/persons', form({ id: 'tee', images: [LIVE, PRINT, edge] }));
  t.is(r.res.status, 201);
  t.like(r.json.faces[0].liveness, { status: 'ok', is_live: true });
  t.is(r.json.rejected_images.length, 2);
  t.like(r.json.rejected_images[0], { index: 1, reason: 'liveness_fake', liveness: { is_live: false } });
  t.like(r.json.rejected_images[1], {
    index: 2,
    reason: 'liveness_input_rejected',
    liveness: { status: 'input_rejected' },
  });
  // The stored sample keeps its snapshot.
  const faces = await call(normal, 'GET', '/v1/collections/reg/persons/tee/faces');
  t.like(faces.json.faces[0].liveness, { is_live: true });

  const off = await post(normal, '/v1/collections/reg/persons', form({ id: 'x', review_mode: 'off', images: [PRINT] }));
  t.is(off.res.status, 422);
  t.is(off.json.error.code, 'registration_failed');
  t.like(off.json.error.details.rejected_images[0], { reason: 'liveness_fake', liveness: { is_live: false } });

  const contract = (await call(normal, 'GET', '/v1/collections/reg')).json.collection.embedding_contract_id;
  const vector = (await post(normal, '/v1/embeddings', form({ image: LIVE }))).json.faces[0].embedding;
  const trusted = await post(
    normal,
    '/v1/collections/reg/persons',
    form({
      id: 'y',
      images: [PRINT],
      embedding_mode: 'external_trusted',
      embedding_contract_id: contract,
      external_embeddings: JSON.stringify([vector]),
    }),
  );
  t.is(trusted.res.status, 422);
  t.is(trusted.json.error.details.rejected_images[0].reason, 'liveness_fake');
});

test('registration in observe mode stores the result on accepted samples; with liveness_on_registration=false it is skipped', async (t) => {
  t.is((await call(observe, 'POST', '/v1/collections', { id: 'reg', name: 'Reg' })).status, 201);
  const r = await post(observe, '/v1/collections/reg/persons', form({ id: 'p', images: [PRINT] }));
  t.is(r.res.status, 201);
  t.like(r.json.faces[0].liveness, { status: 'ok', is_live: false });

  t.is((await call(targetOnly, 'POST', '/v1/collections', { id: 'reg', name: 'Reg' })).status, 201);
  const skipped = await post(targetOnly, '/v1/collections/reg/persons', form({ id: 'p', images: [PRINT] }));
  t.is(skipped.res.status, 201);
  t.is(skipped.json.faces[0].liveness, undefined);
  t.deepEqual(skipped.json.rejected_images, []);
});

test('models and system list the active addon apart from the base files; the model digest does not change', async (t) => {
  const m = await call(normal, 'GET', '/v1/models');
  t.deepEqual(
    m.json.addons.map((a: any) => [a.model_id, a.task]),
    [
      ['liveness', 'liveness'],
      ['liveness', 'liveness'],
    ],
  );
  t.true(m.json.models.every((c: any) => c.task !== 'liveness'));
  const plain = await startTestDaemon({ modelsDir: await shared });
  try {
    const pm = await call(plain, 'GET', '/v1/models');
    t.is(pm.json.addons, undefined);
    t.is(pm.json.model_digest, m.json.model_digest);
    const d = await post(plain, '/v1/detect', form({ image: OBAMA }));
    t.is(d.json.faces[0].liveness, undefined);
  } finally {
    await plain.close();
  }
  const s = await call(normal, 'GET', '/v1/system');
  t.like(s.json.safe_config, {
    addons: ['liveness'],
    liveness_mode: 'normal',
    liveness_threshold: 0.8,
    liveness_compare_scope: 'both',
    liveness_on_registration: true,
  });
  t.is(s.json.model.addons.length, 2);
});

test('startup refuses an enabled addon that is missing or corrupt, naming the path and the install command', async (t) => {
  const missing = await modelsDir(false);
  const e1 = await t.throwsAsync(startTestDaemon({ modelsDir: missing, toml: livenessToml('normal', 'both', false) }));
  t.is((e1 as any).code, 'addon_model_missing');
  t.regex(e1!.message, new RegExp(`${missing}/addons/liveness`));
  t.regex(e1!.message, /vigil addons install liveness/);

  const corrupt = await modelsDir(true);
  const file = join(corrupt, 'addons/liveness/2.7_80x80_MiniFASNetV2.onnx');
  const bytes = readFileSync(file);
  bytes[1000] = bytes[1000]! ^ 0xff;
  writeFileSync(file, bytes);
  const e2 = await t.throwsAsync(startTestDaemon({ modelsDir: corrupt, toml: livenessToml('normal', 'both', false) }));
  t.is((e2 as any).code, 'addon_model_invalid');
});

test('a liveness model that breaks at run time gives 503 liveness_unavailable in both modes, never a verdict', async (t) => {
  // A real export with a block of weights overwritten by NaN: it loads and runs, and every output is NaN.
  // Normal mode breaks the first model (run inline by the inference worker), observe mode the second
  // (run in its peer thread on a 2+ core machine), so both paths are covered.
  const V2 = '2.7_80x80_MiniFASNetV2.onnx',
    V1SE = '4_0_0_80x80_MiniFASNetV1SE.onnx';
  for (const [mode, name] of [
    ['normal', V2],
    ['observe', V1SE],
  ] as const) {
    const dir = tempDir(t, 'vigil-broken-');
    const models = await modelsDir(false);
    const broken = Buffer.from(readFileSync(join(MODELS_MIRROR, name)));
    broken.fill(0xff, Math.floor(broken.length * 0.7), Math.floor(broken.length * 0.7) + 4096);
    const catalog = await loadCatalog();
    catalog.files[name] = {
      ...catalog.files[name]!,
      sha256: createHash('sha256').update(broken).digest('hex'),
      size: broken.length,
      sources: [],
    };
    mkdirSync(join(models, 'addons/liveness'), { recursive: true });
    writeFileSync(join(models, 'addons/liveness', name), broken);
    const other = name === V2 ? V1SE : V2;
    copyFileSync(join(MODELS_MIRROR, other), join(models, 'addons/liveness', other));
    const catalogFile = join(dir, 'catalog.json');
    writeFileSync(catalogFile, JSON.stringify(catalog));
    const d = await startTestDaemon({
      modelsDir: models,
      server: [`model_catalog = ${JSON.stringify(catalogFile)}`],
      toml: livenessToml(mode, 'both', true),
    });
    try {
      for (const [path, body] of [
        ['/v1/detect', form({ image: LIVE })],
        ['/v1/embeddings', form({ image: LIVE })],
        ['/v1/compare', form({ source: LIVE, target: LIVE })],
      ] as const) {
        const r = await post(d, path, body);
        t.is(r.res.status, 503, `${mode} ${path}`);
        t.is(r.json.error.code, 'liveness_unavailable');
      }
      t.is((await call(d, 'POST', '/v1/collections', { id: 'c', name: 'C' })).status, 201);
      const reg = await post(d, '/v1/collections/c/persons', form({ id: 'p', images: LIVE }));
      t.is(reg.json.error.code, 'liveness_unavailable');
      t.is((await call(d, 'GET', '/v1/collections/c')).json.collection.person_count, 0);
    } finally {
      await d.close();
    }
  }
});
