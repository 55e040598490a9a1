import test from 'ava';
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runAddonsCommand } from '../../src/cli/addons.js';
import { runModelsCommand } from '../../src/cli/models.js';
import { loadCatalog } from '../../src/models/catalog.js';
import { installPack } from '../../src/models/installer.js';
import { call, face, form, MODELS_MIRROR, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { Sink } from '../helpers/shared.js';
import { fileTempDir, tempDir } from '../helpers/tempDir.js';

const quiet = () => ({ stdout: new Sink(), stderr: new Sink(), stdin: process.stdin }) as never;

async function packOnly(): Promise<string> {
  const dir = fileTempDir('vigil-mgmt-models-');
  await installPack({ packId: 'edge_s', modelsDir: dir, mirror: MODELS_MIRROR, acceptLicense: true, io: quiet() });
  return dir;
}

const SITE = (mirror: string) => `# Site config: keep this comment
[inference]
liveness_mode = "observe" # tuned for the lobby
default_threshold = 0.45

[addons]
mirror = ${JSON.stringify(mirror)}
`;

async function enable(d: TestDaemon, headers: Record<string, string> = {}) {
  return fetch(`${d.url}/v1/addons/liveness/enable`, {
    method: 'POST',
    headers: { ...d.auth, 'content-type': 'application/json', ...headers },
    body: '{}',
  });
}

const status = async (d: TestDaemon) => (await call(d, 'GET', '/v1/addons/liveness')).json;

test('status, the enable job shared by duplicate POSTs, comments kept, and liveness active after a restart', async (t) => {
  const models = await packOnly();
  const dir = tempDir(t, 'vigil-mgmt-');
  const d = await startTestDaemon({ modelsDir: models, dir, toml: SITE(MODELS_MIRROR) });
  const configFile = join(dir, 'server.toml');
  try {
    t.like(await status(d), {
      enabled: false,
      installed: false,
      configured_enabled: false,
      restart_required: false,
      can_enable: true,
      unavailable_code: null,
      unavailable_reason: null,
      state: 'idle',
      error: null,
      model_path: join(models, 'addons/liveness'),
      config_file: configFile,
    });
    const before = readFileSync(configFile, 'utf8');
    const [a, b] = await Promise.all([enable(d, { Origin: d.url }), enable(d)]);
    t.is(a.status, 202);
    t.is(b.status, 202);
    const [ja, jb] = [(await a.json()) as any, (await b.json()) as any];
    t.is(ja.state, 'downloading');
    t.is(jb.state, 'downloading');
    t.is(ja.enabled, false);
    await d.runtime.liveness.settled();
    t.like(await status(d), {
      enabled: false,
      installed: true,
      configured_enabled: true,
      restart_required: true,
      state: 'ready',
      error: null,
    });
    const after = readFileSync(configFile, 'utf8');
    t.not(after, before);
    for (const kept of [
      '# Site config: keep this comment',
      'liveness_mode = "observe" # tuned for the lobby',
      'default_threshold = 0.45',
      `mirror = ${JSON.stringify(MODELS_MIRROR)}`,
    ])
      t.true(after.includes(kept), kept);
    t.regex(after, /addons = \[ ?"liveness" ?\]/);
    t.regex(after, /auto_download = \[ ?"liveness" ?\]/);
    // The running service is unchanged until it restarts.
    const det = await post(d, '/v1/detect', form({ image: face('liveness/live_T1.jpg') }));
    t.is(det.json.faces[0].liveness, undefined);
    // A second enable once everything is done is harmless.
    t.is((await enable(d)).status, 202);
    await d.runtime.liveness.settled();
    t.is(readFileSync(configFile, 'utf8'), after);
  } finally {
    await d.close();
  }
  const { loadConfig } = await import('../../src/config/load.js');
  const { startDaemon } = await import('../../src/cli/serve.js');
  const restarted = await startDaemon(loadConfig(configFile, { VIGIL_API_KEY: d.key }));
  try {
    await restarted.ready;
    const r = Object.assign(restarted, { key: d.key, auth: d.auth });
    t.like(await status(r), { enabled: true, configured_enabled: true, restart_required: false, installed: true });
    const det = await post(r, '/v1/detect', form({ image: face('liveness/live_T1.jpg') }));
    t.like(det.json.faces[0].liveness, { status: 'ok', is_live: true });
  } finally {
    await restarted.close();
  }
});

test('the enable request: 415 without JSON, 400 unless the body is exactly {}, 403 for foreign or null Origins, 401 without a key', async (t) => {
  const d = await startTestDaemon({
    modelsDir: await packOnly(),
    toml: SITE(MODELS_MIRROR),
    server: ['cors_origins = ["http://kiosk.lan:8080"]'],
  });
  try {
    const send = (body: string, headers: Record<string, string>) =>
      fetch(`${d.url}/v1/addons/liveness/enable`, { method: 'POST', headers: { ...d.auth, ...headers }, body });
    const text = await send('{}', { 'content-type': 'text/plain' });
    t.is(text.status, 415);
    t.is(((await text.json()) as any).error.code, 'json_required');
    for (const body of ['{"start":true}', '[]', 'null', '', '{']) {
      const r = await send(body, { 'content-type': 'application/json' });
      t.is(r.status, 400, body);
      t.is(((await r.json()) as any).error.code, 'invalid_addon_request');
    }
    for (const origin of ['http://evil.example', 'null', 'not a url']) {
      const r = await send('{}', { 'content-type': 'application/json', Origin: origin });
      t.is(r.status, 403, origin);
      t.is(((await r.json()) as any).error.code, 'origin_not_allowed');
    }
    const anon = await fetch(`${d.url}/v1/addons/liveness/enable`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    t.is(anon.status, 401);
    t.is((await call(d, 'GET', '/v1/addons/liveness', undefined, {})).status, 401);
    t.is((await send('{}', { 'content-type': 'application/json', Origin: 'http://kiosk.lan:8080' })).status, 202);
    await d.runtime.liveness.settled();
  } finally {
    await d.close();
  }
});

test('a failed download leaves the config unchanged and never shows the source URL or its credentials', async (t) => {
  const upstream: Server = createServer((_req, res) => {
    res.statusCode = 404;
    res.end('nope');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const port = (upstream.address() as { port: number }).port;
  const catalog = await loadCatalog();
  for (const m of catalog.addons.liveness!.models)
    catalog.files[m.file]!.sources = [{ type: 'url', url: `http://user:secret@127.0.0.1:${port}/${m.file}` }];
  const dir = tempDir(t, 'vigil-mgmt-');
  writeFileSync(join(dir, 'catalog.json'), JSON.stringify(catalog));
  const emptyMirror = tempDir(t, 'vigil-empty-mirror-');
  const d = await startTestDaemon({
    modelsDir: await packOnly(),
    dir,
    toml: SITE(emptyMirror),
    server: [`model_catalog = ${JSON.stringify(join(dir, 'catalog.json'))}`],
  });
  try {
    const before = readFileSync(join(dir, 'server.toml'), 'utf8');
    t.is((await enable(d)).status, 202);
    await d.runtime.liveness.settled();
    const s = await status(d);
    t.like(s, { state: 'error', installed: false, configured_enabled: false, can_enable: true });
    t.is(s.error.code, 'addon_download_failed');
    t.false(JSON.stringify(s).includes('secret'));
    t.false(JSON.stringify(s).includes(String(port)));
    t.is(readFileSync(join(dir, 'server.toml'), 'utf8'), before);
  } finally {
    await d.close();
    upstream.close();
  }
});

test("can_enable=false with the reason for a symlinked, read-only, single-file-mounted or invalid config, a corrupt model, and another process's job", async (t) => {
  const models = await packOnly();
  const dir = tempDir(t, 'vigil-mgmt-');
  const d = await startTestDaemon({ modelsDir: models, dir, toml: SITE(MODELS_MIRROR) });
  const file = join(dir, 'server.toml');
  const original = readFileSync(file, 'utf8');
  const expectUnavailable = async (code: string) => {
    t.like(await status(d), { can_enable: false, unavailable_code: code }, code);
    const r = await enable(d);
    t.is(r.status, 409, code);
    t.like(
      await r.json(),
      { error: { code: 'addon_management_unavailable', details: { unavailable_code: code } } },
      code,
    );
  };
  try {
    // A symlink: the service would replace the link, not the file it points to.
    const real = join(dir, 'real.toml');
    renameSync(file, real);
    symlinkSync(real, file);
    await expectUnavailable('config_file_not_regular');
    unlinkSync(file);
    renameSync(real, file);

    // The config's directory mounted read-only (as on an appliance with a read-only /etc).
    execFileSync('mount', ['--bind', '-o', 'ro', dir, dir]);
    try {
      await expectUnavailable('config_not_writable');
    } finally {
      execFileSync('umount', [dir]);
    }

    // A single-file bind mount (docker -v server.toml:…) cannot be replaced atomically.
    const source = join(tempDir(t, 'vigil-mount-'), 'server.toml');
    writeFileSync(source, original);
    execFileSync('mount', ['--bind', source, file]);
    try {
      await expectUnavailable('config_file_mount');
    } finally {
      execFileSync('umount', [file]);
    }

    writeFileSync(file, `${original}\n[inference.extra\n`);
    await expectUnavailable('addon_config_invalid');
    writeFileSync(file, original);

    // A corrupt model file is never overwritten.
    mkdirSync(join(models, 'addons/liveness'), { recursive: true });
    const corrupt = join(models, 'addons/liveness/2.7_80x80_MiniFASNetV2.onnx');
    writeFileSync(corrupt, 'not a model');
    await expectUnavailable('addon_model_invalid');
    t.is(readFileSync(corrupt, 'utf8'), 'not a model');
    unlinkSync(corrupt);

    // Another live process holds the management lock (the CLI's --enable-liveness, say).
    const lock = join(dir, '.liveness-management.lock');
    writeFileSync(lock, String(process.ppid));
    t.is((await enable(d)).status, 202);
    await d.runtime.liveness.settled();
    t.like(await status(d), { state: 'error', error: { code: 'addon_job_in_progress' }, configured_enabled: false });
    unlinkSync(lock);
    t.is(readFileSync(file, 'utf8'), original);
  } finally {
    await d.close();
  }
});

test('vigil models install --enable-liveness and [addons].auto_download; vigil addons install|verify liveness', async (t) => {
  const dir = tempDir(t, 'vigil-cli-');
  const config = join(dir, 'server.toml');
  writeFileSync(config, '# mine\n[inference]\nliveness_threshold = 0.7 # lenient\n');
  const models = join(dir, 'models');
  const io = quiet() as any;
  const code = await runModelsCommand(
    ['install', 'edge_s', '--accept-license', '--enable-liveness', '--from', MODELS_MIRROR, '--models-dir', models],
    io,
    { configFile: config },
  );
  t.is(code, 0, io.stderr.text);
  t.regex(io.stdout.text, /liveness addon verified/);
  t.regex(io.stdout.text, /restart/);
  const text = readFileSync(config, 'utf8');
  t.true(text.startsWith('# mine\n[inference]\nliveness_threshold = 0.7 # lenient\n'));
  t.regex(text, /addons = \[ ?"liveness" ?\]/);
  t.true(existsSync(join(models, 'addons/liveness/4_0_0_80x80_MiniFASNetV1SE.onnx')));

  const v = quiet() as any;
  t.is(await runAddonsCommand(['verify', 'liveness', '--models-dir', models], v), 0);
  t.regex(v.stdout.text, /liveness: ok/);

  // auto_download: a cached pack still gets the addon.
  const models2 = join(dir, 'models2');
  await installPack({ packId: 'edge_s', modelsDir: models2, mirror: MODELS_MIRROR, acceptLicense: true, io: quiet() });
  const auto = quiet() as any;
  t.is(
    await runModelsCommand(
      ['install', 'edge_s', '--accept-license', '--from', MODELS_MIRROR, '--models-dir', models2],
      auto,
      { autoDownload: ['liveness'] },
    ),
    0,
    auto.stderr.text,
  );
  t.regex(auto.stdout.text, /2\.7_80x80_MiniFASNetV2\.onnx: downloaded/);

  // verify never downloads; install refuses to overwrite a file that does not verify.
  const models3 = join(dir, 'models3');
  const missing = quiet() as any;
  t.is(await runAddonsCommand(['verify', 'liveness', '--models-dir', models3], missing), 2);
  t.regex(missing.stderr.text, /addon_model_missing/);
  mkdirSync(join(models3, 'addons/liveness'), { recursive: true });
  writeFileSync(join(models3, 'addons/liveness/2.7_80x80_MiniFASNetV2.onnx'), 'x');
  const refused = quiet() as any;
  t.is(await runAddonsCommand(['install', 'liveness', '--from', MODELS_MIRROR, '--models-dir', models3], refused), 2);
  t.regex(refused.stderr.text, /addon_model_invalid/);
  t.is(readFileSync(join(models3, 'addons/liveness/2.7_80x80_MiniFASNetV2.onnx'), 'utf8'), 'x');

  // --enable-liveness checks the config before downloading anything.
  const noConfig = quiet() as any;
  t.is(
    await runModelsCommand(
      [
        'install',
        'edge_s',
        '--accept-license',
        '--enable-liveness',
        '--from',
        MODELS_MIRROR,
        '--models-dir',
        join(dir, 'models4'),
      ],
      noConfig,
      { configFile: null },
    ),
    2,
  );
  t.regex(noConfig.stderr.text, /config_file_missing/);
  t.false(existsSync(join(dir, 'models4')));
});
