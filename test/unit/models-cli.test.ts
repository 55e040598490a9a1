import test from 'ava';
import { MODELS_MIRROR, Sink } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { resolveModelsDir, runModelsCommand } from '../../src/cli/models.js';

const MIRROR = MODELS_MIRROR;

async function run(argv: string[]) {
  const io = { stdout: new Sink(), stderr: new Sink(), stdin: Object.assign(Readable.from([]), { isTTY: false }) };
  // An empty env keeps VIGIL_MODELS_DIR / VIGIL_MODEL_MIRROR from the developer's shell out of the test.
  const code = await runModelsCommand(argv, io, { env: {} });
  return { code, stdout: io.stdout.text, stderr: io.stderr.text };
}

test('install from a mirror returns 0, reinstall reports cached, verify and list agree', async (t) => {
  const dir = tempDir(t, 'vigil-models-cli-');
  const first = await run(['install', 'edge_s', '--accept-license', '--from', MIRROR, '--models-dir', dir]);
  t.is(first.code, 0, first.stderr);
  t.regex(first.stdout, /det_500m\.onnx: downloaded from mirror /);
  t.regex(first.stdout, /installed pack edge_s in /);
  t.regex(first.stderr, /commercial use: no/);

  const again = await run(['install', 'edge_s', '--accept-license', '--from', MIRROR, '--models-dir', dir]);
  t.is(again.code, 0);
  t.regex(again.stdout, /det_500m\.onnx: cached\nfaceplugin_fr_feature\.onnx: cached/);

  const verify = await run(['verify', '--models-dir', dir]);
  t.is(verify.code, 0, verify.stderr);
  t.regex(verify.stdout, /^edge_s: ok/m);

  const list = await run(['list', '--models-dir', dir]);
  t.is(list.code, 0);
  t.regex(list.stdout, /^edge_s \*\s+installed\s/m);
  t.regex(list.stdout, /^edge_open\s+not installed\s/m);
});

test('verify reports a corrupted pack with exit code 2', async (t) => {
  const dir = tempDir(t, 'vigil-models-cli-');
  t.is((await run(['install', 'edge_open', '--accept-license', '--from', MIRROR, '--models-dir', dir])).code, 0);
  const fh = await open(join(dir, 'edge_open', 'face_detection_yunet_2026may.onnx'), 'r+');
  await fh.write(Buffer.from([0x42]), 0, 1, 5000);
  await fh.close();
  const verify = await run(['verify', 'edge_open', '--models-dir', dir]);
  t.is(verify.code, 2);
  t.regex(verify.stderr, /^vigil models: error: model_invalid: .*face_detection_yunet_2026may\.onnx/m);
});

test('errors print "vigil models: error: <code>: <message>" and return 2', async (t) => {
  const dir = tempDir(t, 'vigil-models-cli-');
  const unknown = await run(['install', 'no_such_pack', '--accept-license', '--from', MIRROR, '--models-dir', dir]);
  t.is(unknown.code, 2);
  t.regex(unknown.stderr, /^vigil models: error: model_pack_unknown: unknown model pack "no_such_pack"/m);

  const refused = await run(['install', 'edge_s', '--from', MIRROR, '--models-dir', dir]);
  t.is(refused.code, 2);
  t.regex(refused.stderr, /vigil models: error: license_not_accepted: /);

  const nothing = await run(['verify', '--models-dir', dir]);
  t.is(nothing.code, 2);
  t.regex(nothing.stderr, /error: model_not_installed: /);

  for (const argv of [
    [],
    ['frobnicate'],
    ['list', '--force'],
    ['install'],
    ['info', 'edge_s', 'extra'],
    ['list', '--bogus'],
  ]) {
    const usage = await run(argv);
    t.is(usage.code, 2, argv.join(' '));
    t.regex(usage.stderr, /^vigil models: error: usage_error: /, argv.join(' '));
  }
});

test('--help and info print to stdout', async (t) => {
  const help = await run(['--help']);
  t.is(help.code, 0);
  t.regex(help.stdout, /Usage: vigil models/);
  const info = await run(['info', 'edge_open', '--models-dir', tempDir(t, 'vigil-models-cli-')]);
  t.is(info.code, 0, info.stderr);
  t.regex(
    info.stdout,
    /face_detection_yunet_2026may\.onnx \[detector\]\n\s+sha256:\s+ebafce4e3c118d6554634be5c27ab333b4c047a9a8c3faf1d7cf93101c22f0f0/,
  );
  t.regex(info.stdout, /status: not installed/);
});

test('models dir resolution: flag, then VIGIL_MODELS_DIR, then the caller default, then /var/lib/vigil/models', (t) => {
  t.is(resolveModelsDir('/a', { env: { VIGIL_MODELS_DIR: '/b' }, defaultModelsDir: '/c' }), '/a');
  t.is(resolveModelsDir(undefined, { env: { VIGIL_MODELS_DIR: '/b' }, defaultModelsDir: '/c' }), '/b');
  t.is(resolveModelsDir(undefined, { env: {}, defaultModelsDir: '/c' }), '/c');
  t.is(resolveModelsDir(undefined, { env: {} }), '/var/lib/vigil/models');
});
