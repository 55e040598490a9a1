import test, { type ExecutionContext } from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  documentationPages,
  judgePage,
  pageScript,
  readPage,
  type BlockResult,
  type DocPage,
} from '../../scripts/doctest.js';
import { face, form, modelsDirWith, TEST_KEY } from '../helpers/daemon.js';
import { startMosquitto, type Broker } from '../helpers/mosquitto.js';
import { startPostgres, type PgCluster } from '../helpers/postgres.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { freePort, REPO, SHARED } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';
import { startReceiver, type Receiver } from '../helpers/webhookReceiver.js';

/**
 * Doc-tests: every ```sh block of README.md and docs/**.md runs, page by page, in one bash per page, on a
 * box of its own: a real daemon started from the checkout by the unit's steps (test/docs/bin/systemctl) with
 * a copy of config/server.example.toml, the real models and the fixtures, a test camera, `vigil` on the PATH
 * (bin/vigil), and what the page's `setup` marker asks for (a broker, a receiver, PostgreSQL). A block fails
 * the page on a non-zero exit, an undefined variable, a missing expected output line or an unexpected API
 * error. The markers: scripts/doctest.ts; how to write a page for it: docs/development/tests.md.
 */
const BIN = join(REPO, 'test/docs/bin');
const PAGE_SECONDS = 150;

let pages: DocPage[] = [];
let parseError: Error | null = null;
try {
  pages = documentationPages(REPO).map((file) => readPage(REPO, file));
} catch (e) {
  parseError = e as Error;
}

let camera: RtspServer;
let modelsDir: string;
let broker: Promise<Broker> | undefined;
let receiver: Promise<Receiver> | undefined;
let postgres: Promise<PgCluster> | undefined;
const started = Date.now();
let daemonCpu = 0;

test.before(async () => {
  // The camera shows a photo of Obama the pages do not enrol (they enrol 1.jpg and 2.jpg), then an empty scene.
  const frames = await renderScenario(
    [
      { image: face('identities/obama/3.jpg'), seconds: 3 },
      { image: null, seconds: 2 },
    ],
    { width: 640, height: 360, fps: 10 },
  );
  [camera, modelsDir] = await Promise.all([startRtspServer({ frames, fps: 10 }), modelsDirWith('edge_s')]);
});
/** CPU seconds of a running process so far (utime + stime), or 0. */
function processCpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}
let cameraCpu = 0;

test.after.always(async () => {
  cameraCpu = processCpuSeconds(camera?.child.pid);
  await camera?.stop();
  await (await broker)?.stop();
  await (await receiver)?.close();
  (await postgres)?.stop();
});

test('every page has valid doc-test markers, and each skipped block says why', (t) => {
  if (parseError) return t.fail(parseError.message);
  const skipped = pages.flatMap((p) => p.blocks.filter((b) => b.skip).map((b) => `${p.file}:${b.line} ${b.skip}`));
  const run = pages.reduce((n, p) => n + p.blocks.filter((b) => !b.skip).length, 0);
  t.log(`${run} blocks run, ${skipped.length} skipped:\n${skipped.join('\n')}`);
  t.true(run > 0);
});

/** The box's config: config/server.example.toml as a site copies it, with `section.key` lines set for this box. */
function boxConfig(example: string, values: Record<string, string | number>): string {
  let text = example;
  for (const [path, value] of Object.entries(values)) {
    const [section, key] = path.split('.') as [string, string];
    const start = text.indexOf(`\n[${section}]\n`);
    const end = text.indexOf('\n[', start + 1);
    const body = text.slice(start, end < 0 ? undefined : end);
    const line = new RegExp(`^${key} = .*$`, 'm');
    if (start < 0 || !line.test(body)) throw new Error(`config/server.example.toml has no [${section}] ${key} line`);
    text =
      text.slice(0, start) + body.replace(line, `${key} = ${JSON.stringify(value)}`) + text.slice(start + body.length);
  }
  return text;
}

interface Box {
  env: NodeJS.ProcessEnv;
  home: string;
  root: string;
  base: string;
}

async function openBox(t: ExecutionContext, page: DocPage): Promise<Box> {
  const root = tempDir(t, 'vigil-doctest-');
  // `home` is laid out like a checkout (var/api-key, config/dev.toml, ../shared): pages run there.
  const home = join(root, 'home');
  mkdirSync(join(home, 'var'), { recursive: true });
  mkdirSync(join(home, 'config'));
  symlinkSync(SHARED, join(root, 'shared'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config = join(home, 'config/dev.toml');
  const example = readFileSync(join(REPO, 'config/server.example.toml'), 'utf8');
  // graph_optimization: a fixed level, not "auto"'s timing of two at every start (about 5 s of each box's start).
  const server = { 'server.host': '127.0.0.1', 'server.port': port, 'server.data_dir': join(root, 'data') };
  const models = { 'server.models_dir': modelsDir, 'inference.graph_optimization': 'extended' };
  writeFileSync(config, boxConfig(example, { ...server, ...models }));
  writeFileSync(join(home, 'var/api-key'), TEST_KEY);
  const envFile = join(root, 'vigil.env');
  writeFileSync(envFile, `VIGIL_API_KEY=${TEST_KEY}\n`, { mode: 0o600 });
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VIGIL_')));
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    PATH: `${BIN}:${join(REPO, 'bin')}:${process.env.PATH}`,
    HOME: home,
    BASE: base,
    CAMERA_URL: camera.url(),
    VIGIL_CONFIG: config,
    ENV_FILE: envFile,
    VIGIL_DOCTEST_BOX: root,
  };
  for (const name of new Set(page.setup)) {
    if (name === 'mqtt') env.MQTT_URL = (await (broker ??= startMosquitto())).url;
    if (name === 'receiver') {
      const r = await (receiver ??= startReceiver());
      env.RECEIVER = `${r.url}/hooks/vigil`;
    }
    if (name === 'postgres') {
      // Its superuser is `postgres`, as on a database server; the page makes the `vigil` role and database.
      const pg = await (postgres ??= startPostgres({ superuser: 'postgres' }));
      Object.assign(env, {
        PGHOST: '127.0.0.1',
        PGPORT: String(pg.port),
        PGUSER: 'postgres',
        PGPASSWORD: pg.password,
        STORE_URL: `postgres://vigil@127.0.0.1:${pg.port}/vigil`,
      });
    }
  }
  const box = { env, home, root, base };
  t.teardown(() => {
    shell(box, 'systemctl stop vigil');
  });
  const start = shell(box, 'systemctl start vigil');
  if (start.status !== 0) throw new Error(`the daemon did not start:\n${start.output}\n${daemonLog(box, 40)}`);
  if (page.setup.includes('staff') || page.setup.includes('door')) await enrolStaff(box);
  if (page.setup.includes('door')) await addDoor(box);
  return box;
}

function shell(box: Box, command: string): { status: number | null; output: string } {
  const r = spawnSync('bash', ['-c', command], { cwd: box.home, env: box.env, encoding: 'utf8', timeout: 150_000 });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

const daemonLog = (box: Box, lines: number) =>
  `--- the daemon's log (last ${lines} lines)\n${shell(box, `journalctl -u vigil -n ${lines}`).output}`;

async function api(box: Box, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${box.base}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${TEST_KEY}`,
      ...(body instanceof FormData ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
  });
  const json = (await res.json()) as unknown;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** getting-started.md steps 3 and 4. */
async function enrolStaff(box: Box): Promise<void> {
  await api(box, 'POST', '/v1/collections', { id: 'staff', name: 'Staff' });
  const images = ['identities/obama/1.jpg', 'identities/obama/2.jpg'].map(face);
  await api(box, 'POST', '/v1/collections/staff/persons', form({ id: 'obama', name: 'Barack Obama', images }));
}

/** getting-started.md step 6, then the camera's first person_enter. */
async function addDoor(box: Box): Promise<void> {
  await api(box, 'POST', '/v1/monitors', {
    id: 'door',
    name: 'Front door',
    collection_id: 'staff',
    source: { url: box.env.CAMERA_URL },
    inference_fps: 5,
    preview_enabled: true,
  });
  for (let i = 0; i < 600; i++) {
    const page = (await api(box, 'GET', '/v1/events?monitor_id=door&type=person_enter')) as { events: unknown[] };
    if (page.events.length) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the door camera saw no person_enter within 60 s');
}

/** The page's blocks in one bash, in its own process group (killed with whatever it left running). */
async function runScript(box: Box, page: DocPage): Promise<{ output: string; code: number | null }> {
  const script = join(box.root, 'page.sh');
  writeFileSync(script, pageScript(page));
  const child = spawn('bash', [script], {
    cwd: box.home,
    env: box.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr.on('data', (b: Buffer) => (output += b.toString()));
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      /* already gone */
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, PAGE_SECONDS * 1000);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  killGroup();
  return { output, code: timedOut ? null : code };
}

function report(page: DocPage, failed: BlockResult, box: Box): string {
  const tail = failed.output.split('\n').slice(-40).join('\n');
  return [
    `${page.file}:${failed.block.line}: ${failed.failure}`,
    '--- the block',
    failed.block.code,
    '--- its output (last 40 lines)',
    tail,
    daemonLog(box, 20),
  ].join('\n');
}

for (const page of pages.filter((p) => p.blocks.some((b) => !b.skip))) {
  test.serial(`${page.file}: every shell block runs as written`, async (t) => {
    t.timeout((PAGE_SECONDS + 120) * 1000);
    const t0 = Date.now();
    const box = await openBox(t, page);
    const t1 = Date.now();
    const { output, code } = await runScript(box, page);
    shell(box, 'systemctl stop vigil');
    const cpu = daemonCpuSeconds(box);
    daemonCpu += cpu;
    const results = judgePage(page, output, code);
    const failed = results.find((r) => r.failure);
    const skipped = page.blocks.filter((b) => b.skip).length;
    t.log(
      `${results.length} blocks run, ${skipped} skipped; box ${((t1 - t0) / 1000).toFixed(1)} s, page ${((Date.now() - t1) / 1000).toFixed(1)} s, daemon CPU ${cpu.toFixed(1)} s`,
    );
    // VIGIL_DOCTEST_VERBOSE=1 shows every block's output (for writing expected output).
    if (process.env.VIGIL_DOCTEST_VERBOSE === '1')
      for (const r of results) t.log(`${page.file}:${r.block.line}\n${r.output}`);
    if (failed) t.fail(report(page, failed, box));
    else t.is(results.length, page.blocks.length - skipped);
  });
}

/** CPU seconds of every daemon the page's box ran (test/docs/bin/systemctl notes them at each stop). */
function daemonCpuSeconds(box: Box): number {
  const file = join(box.root, 'vigil.cpu');
  if (!existsSync(file)) return 0;
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .reduce((sum, line) => sum + Number(line), 0);
}

test.after.always('the doc-test run took', () => {
  // Wall time depends on what else the machine runs; the CPU seconds (daemons, camera, this process) do not.
  const own = process.cpuUsage();
  const cpu = daemonCpu + cameraCpu + (own.user + own.system) / 1e6;
  const parts = `daemons ${daemonCpu.toFixed(0)} s, camera ${cameraCpu.toFixed(0)} s`;
  console.log(`doc-tests: ${((Date.now() - started) / 1000).toFixed(0)} s, CPU ${cpu.toFixed(0)} s (${parts})`);
});
