import test from 'ava';
import { MODELS_MIRROR, Sink } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';
import { open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ApiError } from '../../src/contract/errors.js';
import { loadCatalog } from '../../src/models/catalog.js';
import { loadInstalledPack } from '../../src/models/installed.js';
import { installPack, listPacks, packInfo, verifyPack, type InstallOptions } from '../../src/models/installer.js';

const MIRROR = MODELS_MIRROR;

const quietIo = () => ({
  stdout: new Sink(),
  stderr: new Sink(),
  stdin: Object.assign(Readable.from([]), { isTTY: false }),
});

function install(modelsDir: string, packId: string, extra: Partial<InstallOptions> = {}) {
  return installPack({ packId, modelsDir, mirror: MIRROR, acceptLicense: true, env: {}, io: quietIo(), ...extra });
}

/** Flips one byte in place, the kind of damage a bad disk or a partial copy leaves. */
async function corruptOneByte(path: string, offset = 1000): Promise<void> {
  const fh = await open(path, 'r+');
  try {
    const buf = Buffer.alloc(1);
    await fh.read(buf, 0, 1, offset);
    buf[0] = buf[0]! ^ 0xff;
    await fh.write(buf, 0, 1, offset);
  } finally {
    await fh.close();
  }
}

async function rejectsWith(t: { fail(m: string): void }, promise: Promise<unknown>, code: string): Promise<ApiError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiError && err.code === code) return err;
    throw err;
  }
  t.fail(`expected ${code}`);
  throw new Error('unreachable');
}

test('installs edge_s and edge_open from a mirror directory and writes pack.json', async (t) => {
  const modelsDir = tempDir(t, 'vigil-models-unit-');
  const catalog = await loadCatalog();
  for (const packId of ['edge_s', 'edge_open']) {
    const result = await install(modelsDir, packId);
    t.deepEqual(
      result.files.map((f) => f.status),
      ['downloaded', 'downloaded'],
    );
    const packJson = JSON.parse(await readFile(join(modelsDir, packId, 'pack.json'), 'utf8'));
    const pack = catalog.packs[packId]!;
    t.is(packJson.pack_id, packId);
    t.deepEqual(packJson.detector, pack.detector);
    t.deepEqual(packJson.recognizer, pack.recognizer);
    t.false(Number.isNaN(Date.parse(packJson.installed_at)));
    for (const name of [pack.detector.file, pack.recognizer.file]) {
      t.deepEqual(packJson.files[name], { sha256: catalog.files[name]!.sha256, size: catalog.files[name]!.size });
    }
    // No temp files are left behind.
    t.deepEqual(
      (await readdir(join(modelsDir, packId))).sort(),
      [pack.detector.file, pack.recognizer.file, 'pack.json'].sort(),
    );
  }
  const edgeS = JSON.parse(await readFile(join(modelsDir, 'edge_s', 'pack.json'), 'utf8'));
  t.is(edgeS.license.id, 'insightface-noncommercial', 'the most restrictive licence governs the pack');
  t.false(edgeS.license.commercial_use);
  const edgeOpen = JSON.parse(await readFile(join(modelsDir, 'edge_open', 'pack.json'), 'utf8'));
  t.true(edgeOpen.license.commercial_use);
});

test('reinstalling is idempotent: verified files are reported cached and not rewritten', async (t) => {
  const modelsDir = tempDir(t, 'vigil-models-unit-');
  await install(modelsDir, 'edge_s');
  const detPath = join(modelsDir, 'edge_s', 'det_500m.onnx');
  const before = await stat(detPath);
  const again = await install(modelsDir, 'edge_s');
  t.deepEqual(
    again.files.map((f) => f.status),
    ['cached', 'cached'],
  );
  t.is((await stat(detPath)).ino, before.ino);
  const forced = await install(modelsDir, 'edge_s', { force: true });
  t.deepEqual(
    forced.files.map((f) => f.status),
    ['replaced', 'replaced'],
  );
});

test('verifyPack and loadInstalledPack detect one corrupted byte; reinstall repairs it', async (t) => {
  const modelsDir = tempDir(t, 'vigil-models-unit-');
  await install(modelsDir, 'edge_open');
  const ok = await verifyPack({ packId: 'edge_open', modelsDir });
  t.is(ok.files.length, 2);

  await corruptOneByte(join(modelsDir, 'edge_open', 'faceplugin_fr_feature.onnx'));
  const err = await rejectsWith(t, verifyPack({ packId: 'edge_open', modelsDir }), 'model_invalid');
  t.regex(err.message, /faceplugin_fr_feature\.onnx: sha256 is [0-9a-f]{64}/);
  await rejectsWith(t, loadInstalledPack(modelsDir, 'edge_open'), 'model_invalid');
  t.deepEqual(
    (await listPacks({ modelsDir })).map((p) => [p.id, p.status]),
    [
      ['edge_s', 'not installed'],
      ['edge_open', 'corrupt'],
      ['buffalo_s', 'not installed'],
      ['buffalo_l', 'not installed'],
    ],
  );

  const repaired = await install(modelsDir, 'edge_open');
  t.deepEqual(
    repaired.files.map((f) => f.status),
    ['cached', 'replaced'],
  );
  await t.notThrowsAsync(verifyPack({ packId: 'edge_open', modelsDir }));
});

test('loadInstalledPack returns verified specs with absolute paths', async (t) => {
  const modelsDir = tempDir(t, 'vigil-models-unit-');
  await install(modelsDir, 'edge_s');
  const pack = await loadInstalledPack(modelsDir, 'edge_s');
  t.is(pack.id, 'edge_s');
  t.is(pack.dir, join(modelsDir, 'edge_s'));
  t.is(pack.detector.kind, 'scrfd');
  t.is(pack.detector.path, join(modelsDir, 'edge_s', 'det_500m.onnx'));
  t.is(pack.detector.sha256, '5e4447f50245bbd7966bd6c0fa52938c61474a04ec7def48753668a9d8b4ea3a');
  t.deepEqual(pack.recognizer.input_size, [112, 112]);
  t.is(pack.recognizer.channel_order, 'bgr');
  t.is(pack.recognizer.embedding_dimension, 512);
  t.is(pack.license.id, 'insightface-noncommercial');
  t.truthy(pack.installed_at);
});

test('loadInstalledPack: missing pack names the directory and the install command', async (t) => {
  const modelsDir = tempDir(t, 'vigil-models-unit-');
  const err = await rejectsWith(t, loadInstalledPack(modelsDir, 'edge_open'), 'model_not_installed');
  t.is(err.status, 503);
  t.true(err.message.includes(join(modelsDir, 'edge_open')));
  t.true(err.message.includes('vigil models install edge_open --accept-license --from <mirror>'));
  await rejectsWith(t, loadInstalledPack(modelsDir, 'no_such_pack'), 'model_pack_unknown');
});

test('loadInstalledPack: a deleted file or a pack.json that disagrees with the catalog is invalid', async (t) => {
  const modelsDir = tempDir(t, 'vigil-models-unit-');
  await install(modelsDir, 'edge_s');
  const packJsonPath = join(modelsDir, 'edge_s', 'pack.json');
  const packJson = JSON.parse(await readFile(packJsonPath, 'utf8'));
  packJson.recognizer.mean = 0;
  await writeFile(packJsonPath, JSON.stringify(packJson));
  const tampered = await rejectsWith(t, loadInstalledPack(modelsDir, 'edge_s'), 'model_invalid');
  t.regex(tampered.message, /pack\.json: recognizer differs from the catalog/);

  await install(modelsDir, 'edge_s');
  await rm(join(modelsDir, 'edge_s', 'det_500m.onnx'));
  const missing = await rejectsWith(t, loadInstalledPack(modelsDir, 'edge_s'), 'model_invalid');
  t.regex(missing.message, /det_500m\.onnx: missing/);
});

test('without --accept-license in a non-TTY nothing is created and license_not_accepted is thrown', async (t) => {
  const modelsDir = tempDir(t, 'vigil-models-unit-');
  const io = quietIo();
  const err = await rejectsWith(t, install(modelsDir, 'edge_s', { acceptLicense: false, io }), 'license_not_accepted');
  t.is(err.status, 403);
  t.deepEqual(await readdir(modelsDir), []);
  // The notices were still shown, so the user knows what to accept.
  t.true(io.stderr.text.includes('non-commercial research use only'));
  t.true(io.stderr.text.includes('commercial use: no'));
  t.true(io.stderr.text.includes('https://github.com/deepinsight/insightface#license'));
});

test('a mirror that is not a directory is model_source_unavailable; VIGIL_MODEL_MIRROR is honoured', async (t) => {
  const modelsDir = tempDir(t, 'vigil-models-unit-');
  await rejectsWith(t, install(modelsDir, 'edge_s', { mirror: join(modelsDir, 'nope') }), 'model_source_unavailable');
  const viaEnv = await installPack({
    packId: 'edge_open',
    modelsDir,
    acceptLicense: true,
    env: { VIGIL_MODEL_MIRROR: MIRROR },
    io: quietIo(),
  });
  t.true(viaEnv.files.every((f) => f.status === 'downloaded' && f.source?.startsWith(`mirror ${MIRROR}`)));
});

test('packInfo lists sources, checksums and licences; unknown packs are model_pack_unknown', async (t) => {
  const info = await packInfo({ packId: 'edge_s', env: {} });
  t.true(info.is_default);
  const det = info.files.find((f) => f.name === 'det_500m.onnx')!;
  t.deepEqual(det.roles, ['detector']);
  t.is(det.sha256, '5e4447f50245bbd7966bd6c0fa52938c61474a04ec7def48753668a9d8b4ea3a');
  t.is(det.sources.length, 2);
  const rec = info.files.find((f) => f.name === 'faceplugin_fr_feature.onnx')!;
  t.is(
    rec.sources[0],
    'npm faceplugin-face-recognition-js@0.0.1 (https://registry.npmjs.org/faceplugin-face-recognition-js/-/faceplugin-face-recognition-js-0.0.1.tgz) path package/model/fr_feature.onnx',
  );
  t.deepEqual(
    info.licenses.map((l) => l.id),
    ['insightface-noncommercial', 'faceplugin-mit'],
  );
  await rejectsWith(t, packInfo({ packId: 'nope' }), 'model_pack_unknown');
});

/** A fake terminal: stdin that types `answer`, and stdout/stderr that claim to be TTYs. */
function terminalIo(answer: string) {
  const stdout = Object.assign(new Sink(), { isTTY: true });
  const stderr = Object.assign(new Sink(), { isTTY: true });
  const stdin = Object.assign(Readable.from([answer]), { isTTY: true });
  return { stdout, stderr, stdin };
}

test('on a terminal the licence is confirmed interactively ([y/N], default no)', async (t) => {
  const modelsDir = tempDir(t, 'vigil-models-unit-');
  const no = terminalIo('\n');
  await rejectsWith(t, install(modelsDir, 'edge_open', { acceptLicense: false, io: no }), 'license_not_accepted');
  t.regex(no.stderr.text, /\[y\/N\]/);
  t.deepEqual(await readdir(modelsDir), []);

  const yes = terminalIo('y\n');
  const result = await install(modelsDir, 'edge_open', { acceptLicense: false, io: yes });
  t.is(result.files.length, 2);
});
