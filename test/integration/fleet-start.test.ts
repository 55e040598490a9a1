import test, { type ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { EXIT } from '../../src/cli/exitCodes.js';
import { modelsDirWith, REPO, serverLines, TEST_KEY } from '../helpers/daemon.js';
import { startChild } from '../helpers/daemonProcess.js';
import { pgStoreToml, startPostgres, type PgCluster } from '../helpers/postgres.js';
import { eventually, freePort } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * A fleet box's start against a PostgreSQL that requires a password (scram-sha-256), as `vigil serve` runs
 * under systemd: the password from `[store] password_file` or VIGIL_STORE_PASSWORD with a URL that has
 * none (the only form the docs allow), and each way the database can refuse the box: one `[store]` line on
 * stderr and exit 16, which the unit does not restart; an unreachable database is degraded, not fatal.
 */
const MAIN = join(REPO, 'src/cli/main.ts');
let cluster: PgCluster;
let models: string;
let dbs = 0;
test.before(async () => {
  cluster = await startPostgres();
  models = await modelsDirWith('edge_s');
});
test.after.always(() => {
  cluster?.stop();
});

/** A fresh database on the cluster, named by its URL without the password. */
function database(): string {
  const name = `start_${process.pid}_${++dbs}`;
  cluster.createDatabase(name);
  return cluster.urlWithoutPassword(name);
}

/** A box's server.toml in a temp dir: port 0, the shared models, and the given `[store]` section. */
function boxConfig(t: ExecutionContext, store: string): { file: string; dir: string } {
  const dir = tempDir(t, 'vigil-fleet-start-');
  const file = join(dir, 'server.toml');
  writeFileSync(
    file,
    [...serverLines({ dataDir: join(dir, 'data'), modelsDir: models, logLevel: 'info' }), store].join('\n'),
  );
  return { file, dir };
}

function passwordFile(dir: string, content: string): string {
  const file = join(dir, 'pg-password');
  writeFileSync(file, content, { mode: 0o600 });
  return file;
}

/** `vigil serve` that is expected to stop by itself. */
function serveFails(file: string, env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'serve', '--config', file], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 60_000,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, VIGIL_API_KEY: TEST_KEY, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `vigil serve` that is expected to run: its health once `ok` holds, and what it wrote on stderr. */
async function serveRuns(
  file: string,
  env: NodeJS.ProcessEnv,
  ok: (health: { fleet?: { database?: string } }) => boolean,
): Promise<{ health: { status: string; fleet?: { database?: string } }; stderr: string }> {
  const { child, url } = startChild(file, env);
  let stderr = '';
  child.stderr!.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  try {
    const base = await url.catch((e: Error) => {
      throw new Error(`${e.message}: ${stderr}`);
    });
    const health = await eventually(
      () =>
        fetch(`${base}/v1/health`).then((r) => r.json() as Promise<{ status: string; fleet?: { database?: string } }>),
      ok,
      600,
    );
    return { health, stderr };
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
  }
}

const connected = (h: { fleet?: { database?: string } }) => h.fleet?.database === 'connected';

test.serial('the test cluster requires a password (scram-sha-256): a client without one is refused', async (t) => {
  const c = new pg.Client({ connectionString: cluster.urlWithoutPassword('postgres') });
  c.on('error', () => undefined);
  await t.throwsAsync(c.connect());
  await c.end().catch(() => undefined);
});

test.serial(
  '[store] password_file with a URL without password: the box connects (a trailing newline is not part of it)',
  async (t) => {
    const url = database();
    const { file, dir } = boxConfig(t, '');
    const pw = passwordFile(dir, `${cluster.password}\n`);
    writeFileSync(file, `\n${pgStoreToml(url, `password_file = ${JSON.stringify(pw)}\n`)}`, { flag: 'a' });
    const { health, stderr } = await serveRuns(file, {}, connected);
    t.is(health.fleet?.database, 'connected', stderr);
  },
);

test.serial('VIGIL_STORE_PASSWORD with a URL without password: the box connects', async (t) => {
  const { file } = boxConfig(t, pgStoreToml(database()));
  const { health, stderr } = await serveRuns(file, { VIGIL_STORE_PASSWORD: cluster.password }, connected);
  t.is(health.fleet?.database, 'connected', stderr);
});

test.serial(
  'the database refusing the box (wrong password, no password, missing database, unreadable password_file) is one [store] line and exit 16, before listening',
  (t) => {
    const url = database();
    const missing = cluster.urlWithoutPassword(`nosuchdb_${process.pid}`);
    const cases: [string, string, NodeJS.ProcessEnv, RegExp][] = [
      [
        'wrong password',
        pgStoreToml(url),
        { VIGIL_STORE_PASSWORD: 'not-the-password' },
        /password authentication failed/,
      ],
      ['no password anywhere', pgStoreToml(url), {}, /no password/],
      [
        'missing database',
        pgStoreToml(missing),
        { VIGIL_STORE_PASSWORD: cluster.password },
        /database .*does not exist/,
      ],
      [
        'unreadable password_file',
        pgStoreToml(url, 'password_file = "/nonexistent/pg-password"\n'),
        {},
        /password_file \/nonexistent\/pg-password cannot be read/,
      ],
    ];
    for (const [what, store, env, re] of cases) {
      const r = serveFails(boxConfig(t, store).file, env);
      t.is(r.code, EXIT.storeMisconfigured, `${what}: ${r.stderr}`);
      t.is(r.stderr.trim().split('\n').length, 1, `${what}: ${r.stderr}`);
      t.regex(r.stderr, /^vigil: error: store_misconfigured: \[store\] /, what);
      t.regex(r.stderr, re, what);
      t.notRegex(r.stderr, /^\s+at /m, `${what}: no stack`);
      t.notRegex(r.stdout, /"listening"/, `${what}: never listened`);
      t.false(r.stderr.includes(cluster.password), `${what}: the password is never printed`);
    }
  },
);

test.serial(
  'an unreachable database on a fresh box: it starts degraded (the follower retries) and says so in one [store] line on stderr',
  async (t) => {
    const port = await freePort();
    const { file } = boxConfig(t, pgStoreToml(`postgres://vigil@127.0.0.1:${port}/vigil`));
    const { health, stderr } = await serveRuns(
      file,
      { VIGIL_STORE_PASSWORD: 'whatever' },
      (h) => h.fleet?.database === 'disconnected',
    );
    t.is(health.fleet?.database, 'disconnected');
    t.regex(
      stderr,
      new RegExp(
        `^vigil: warning: store_unavailable: \\[store\\] PostgreSQL at 127\\.0\\.0\\.1:${port} is unreachable`,
        'm',
      ),
    );
    t.is(stderr.trim().split('\n').length, 1, stderr);
  },
);
