import test from 'ava';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import sharp from 'sharp';
import { TEST_KEY } from '../helpers/daemon.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemonProcess.js';
import { waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { freePort, REPO } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * The shell side of issue 40 items 3 and 4: `vigil config get|set|unset` on a running daemon (told by
 * SIGHUP, applied live or reported as needing a restart) and on a stopped box (the file only), and
 * `vigil monitors` / `vigil collections` through the running daemon's API.
 */
let d: DaemonProcess;
let rtsp: RtspServer;
let file: string;

test.before(async () => {
  const frames = await renderScenario([{ image: null, seconds: 1 }], { width: 320, height: 240, fps: 10 });
  [rtsp, d] = await Promise.all([
    startRtspServer({ frames, fps: 10 }),
    startDaemonProcess({ toml: '# retention of the site\n[events]\nmax_age_days = 30 # days\n', logLevel: 'info' }),
  ]);
  file = join(dirname(d.dataDir), 'server.toml');
});
test.after.always(async () => {
  await d?.stop();
  await rtsp?.stop();
});

/** `vigil ARGS` as a child process (the daemon keeps serving meanwhile). */
function vigil(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'src/cli/main.ts'), ...args], {
      cwd: REPO,
      env: { ...process.env, VIGIL_CONFIG: file, VIGIL_API_KEY: TEST_KEY, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '',
      stderr = '';
    c.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    c.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    c.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** The daemon's port is not in its file (it started on port 0): --url names it. */
const viaDaemon = (args: string[], env: NodeJS.ProcessEnv = {}) => vigil([...args, '--url', d.url], env);

const api = async (path: string, init: RequestInit = {}) =>
  (await (await fetch(d.url + path, { ...init, headers: d.auth })).json()) as Record<string, any>;

test.serial('vigil config set on a running daemon: saved, SIGHUP, applied live', async (t) => {
  const r = await vigil(['config', 'set', 'events.max_age_days', '5']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /^events\.max_age_days: saved and applied by the running daemon \(pid \d+\)$/m);
  await waitFor('retention of 5 days', async () =>
    (await api('/v1/events/status')).history.retention.max_age_days === 5 ? true : undefined,
  );
  const text = readFileSync(file, 'utf8');
  t.true(text.includes('# retention of the site'));
  t.regex(text, /max_age_days = 5 # days/);
  t.regex(d.output(), /"via":"reload"[^\n]*"applied":\["events\.max_age_days"\][^\n]*settings changed/);
  const get = await vigil(['config', 'get', 'events.max_age_days']);
  t.is(get.stdout, 'events.max_age_days = 5  (file, live)\n');
  // In the audit log as a CLI change, like the same PATCH over the API would be.
  const audit = await api('/v1/audit?action=patch_settings_v1_settings_patch');
  t.like(audit.entries[0], { source: 'cli', actor_type: 'cli', detail: { keys: ['events.max_age_days'] } });
});

test.serial('vigil config set of a restart-only key says so; the daemon shows it pending', async (t) => {
  const r = await vigil(['config', 'set', 'detection.input_sizes', '[[96,96],[640,640]]']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /detection\.input_sizes: saved; restart required/);
  const pending = await waitFor('pending', async () => {
    const s = (await api('/v1/settings')).settings.find((e: any) => e.key === 'detection.input_sizes');
    return s.restart_pending ? s : undefined;
  });
  t.deepEqual(pending.configured_value, [
    [96, 96],
    [640, 640],
  ]);
  const json = await vigil(['config', 'set', 'detection.input_sizes', '[[96,96],[640,640]]', '--json']);
  t.like(JSON.parse(json.stdout), { changed: false });
  const unset = await vigil(['config', 'unset', 'detection.input_sizes']);
  t.is(unset.code, 0, unset.stderr);
  t.false(readFileSync(file, 'utf8').includes('input_sizes'));
});

test.serial('vigil config set refuses an invalid or protected value and leaves the file alone', async (t) => {
  const before = readFileSync(file, 'utf8');
  const bad = await vigil(['config', 'set', 'events.max_age_days', '-1']);
  t.is(bad.code, 1);
  t.regex(bad.stderr, /^vigil: error: settings_invalid: events\.max_age_days: /m);
  const secret = await vigil(['config', 'set', 'mqtt.password', 'hunter2']);
  t.regex(secret.stderr, /setting_not_editable: mqtt\.password cannot be changed here/);
  const typo = await vigil(['config', 'set', 'mqtt.ulr', 'mqtt://x:1883']);
  t.regex(typo.stderr, /setting_unknown: There is no setting "mqtt\.ulr" \(did you mean "mqtt\.url"\?\)/);
  const usage = await vigil(['config', 'set', 'mqtt.url']);
  t.is(usage.code, 2);
  t.is(readFileSync(file, 'utf8'), before);
});

test.serial('a hand edit that does not validate is refused at SIGHUP and the daemon keeps its settings', async (t) => {
  const good = readFileSync(file, 'utf8');
  t.teardown(() => writeFileSync(file, good));
  writeFileSync(file, good.replace(/max_age_days = \d+/, 'max_age_days = "a week"'));
  const pid = Number(readFileSync(join(d.dataDir, 'vigil.lock.pid'), 'utf8'));
  process.kill(pid, 'SIGHUP');
  await waitFor('the refusal in the log', async () =>
    /the config file was not applied: it does not validate/.test(d.output()) ? true : undefined,
  );
  t.is((await api('/v1/events/status')).history.retention.max_age_days, 5, 'the running value is kept');
  t.is((await fetch(`${d.url}/v1/health`)).status, 200);
});

test.serial('vigil config set on a stopped box writes the file only', async (t) => {
  const dir = tempDir(t, 'vigil-config-cli-');
  const stopped = join(dir, 'server.toml');
  mkdirSync(join(dir, 'data'));
  writeFileSync(stopped, `[server]\ndata_dir = ${JSON.stringify(join(dir, 'data'))}\n`);
  const r = await vigil(['config', 'set', 'mqtt.enabled', 'on'], { VIGIL_CONFIG: stopped });
  t.is(r.code, 0, r.stderr);
  t.is(r.stdout, 'mqtt.enabled: saved; the service is not running and uses it when it starts\n');
  t.regex(readFileSync(stopped, 'utf8'), /\[mqtt\]\nenabled = true/);
  t.false(existsSync(join(dir, 'data', 'vigil.lock')), 'looking for a daemon creates nothing');
});

test.serial('vigil collections and vigil monitors through the running daemon', async (t) => {
  const created = await viaDaemon(['collections', 'create', 'cams', '--name', 'Cameras', '--save-face-crops']);
  t.is(created.code, 0, created.stderr);
  t.regex(created.stdout, /^created cams \(threshold [\d.]+, face crops saved\)$/m);
  t.regex((await viaDaemon(['collections', 'list'])).stdout, /^cams\tCameras\t0 persons\t0 faces\tthreshold /m);
  const added = await viaDaemon([
    'monitors',
    'add',
    'door',
    '--source',
    rtsp.url(),
    '--collection',
    'cams',
    '--test',
    '--timeout',
    '20',
  ]);
  t.is(added.code, 0, added.stderr);
  t.regex(added.stdout, /^ok: rtsp:\/\/127\.0\.0\.1:\d+\/stream: decoded a 320x240 frame/m);
  t.regex(added.stdout, /^added door \(rtsp:\/\/127\.0\.0\.1:\d+\/stream, collection cams, enabled\)$/m);
  t.regex(
    (await viaDaemon(['monitors', 'list'])).stdout,
    /^door\tenabled\t\w+\tcams\trtsp:\/\/127\.0\.0\.1:\d+\/stream\tdoor$/m,
  );
  const snapshot = join(tempDir(t, 'vigil-snap-'), 'door.jpg');
  const tested = await viaDaemon(['monitors', 'test', 'door', '--snapshot', snapshot, '--timeout', '20']);
  t.is(tested.code, 0, tested.stderr);
  t.is((await sharp(readFileSync(snapshot)).metadata()).width, 320);
  const port = await freePort();
  const refused = await viaDaemon(['monitors', 'test', '--source', `rtsp://127.0.0.1:${port}/x`]);
  t.is(refused.code, 1);
  t.regex(refused.stdout, /^failed at probe: connection_refused: /m);
  t.regex((await viaDaemon(['monitors', 'pipelines'])).stdout, /^\* software\tavailable\t/m);
  const removed = await viaDaemon(['monitors', 'remove', 'door']);
  t.is(removed.stdout, 'removed door\n');
  t.is((await viaDaemon(['monitors', 'list'])).stdout, 'no monitors\n');
  const gone = await viaDaemon(['monitors', 'remove', 'door']);
  t.is(gone.code, 1);
  t.regex(gone.stderr, /monitor_not_found/);
});

test.serial('vigil monitors without a key or without a daemon says what is missing', async (t) => {
  const noKey = await viaDaemon(['monitors', 'list'], { VIGIL_API_KEY: '' });
  t.is(noKey.code, 1);
  t.regex(noKey.stderr, /VIGIL_API_KEY/);
  const port = await freePort();
  const down = await vigil(['collections', 'list', '--url', `http://127.0.0.1:${port}`]);
  t.is(down.code, 1);
  t.regex(down.stderr, /daemon_unreachable: The Vigil daemon at http:\/\/127\.0\.0\.1:\d+ could not be reached/);
});
