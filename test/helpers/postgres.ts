import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './shared.js';
import { removeDir } from './tempDir.js';

/**
 * A throw-away PostgreSQL cluster, started the way users run Debian's `postgresql` package: initdb and
 * pg_ctl from /usr/lib/postgresql/<major>/bin (VIGIL_PG_BIN overrides), as a non-root user (PostgreSQL
 * refuses root; as root the helper runs them as `nobody` through runuser), on a loopback port, with its
 * data in a temp dir removed by stop(). Password authentication (scram) over TCP, as a real fleet would:
 * initdb --auth=scram-sha-256 writes every pg_hba.conf line (local and host) with scram-sha-256, so a
 * client without the right password is refused.
 */
export interface PgCluster {
  port: number;
  /** postgres://vigil:<password>@127.0.0.1:<port>/<database> */
  url: string;
  password: string;
  /** postgres://vigil@127.0.0.1:<port>/<database>: the form the docs prescribe (the password comes from elsewhere). */
  urlWithoutPassword(database: string): string;
  /** A fresh database on the cluster (one per test keeps tests independent). */
  createDatabase(name: string): string;
  /** pg_ctl stop -m fast / start: a database restart as an operator does one. */
  restart(): void;
  stopServer(): void;
  startServer(): void;
  stop(): void;
}

function pgBin(): string {
  if (process.env.VIGIL_PG_BIN) return process.env.VIGIL_PG_BIN;
  for (const v of ['17', '16', '15']) {
    const d = `/usr/lib/postgresql/${v}/bin`;
    if (existsSync(join(d, 'initdb'))) return d;
  }
  throw new Error(
    'PostgreSQL server binaries not found: apt-get install postgresql (scripts/install-system-deps.sh with VIGIL_TEST_DEPS=1), or set VIGIL_PG_BIN',
  );
}

export const pgAvailable = (): boolean => {
  try {
    pgBin();
    return true;
  } catch {
    return false;
  }
};

/**
 * A throw-away cluster on a loopback port. `superuser` is the role initdb makes (and `url` logs in as):
 * `vigil` for the suites, `postgres` for the doc-tests, whose page makes its own `vigil` role.
 */
export async function startPostgres(o: { superuser?: string } = {}): Promise<PgCluster> {
  const superuser = o.superuser ?? 'vigil';
  const bin = pgBin();
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'vigil-pg-'));
  const data = join(dir, 'data');
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const pwfile = join(dir, 'pw');
  // The cluster belongs to the unprivileged user; the temp dir must be reachable by it.
  chmodSync(dir, 0o755);
  execFileSync('sh', ['-c', `umask 077; printf '%s' "$1" > "$2"`, 'sh', password, pwfile]);
  if (root) {
    chownSync(dir, 65534, 65534);
    chownSync(pwfile, 65534, 65534);
  }
  const run = (cmd: string, args: string[]) => {
    const argv = root
      ? (['runuser', ['-u', 'nobody', '--', join(bin, cmd), ...args]] as const)
      : ([join(bin, cmd), args] as const);
    const r = spawnSync(argv[0], [...argv[1]], { encoding: 'utf8', cwd: dir });
    if (r.status !== 0) throw new Error(`${cmd} failed (${r.status}): ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  let port: number;
  const opts = () =>
    `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${dir} -c fsync=on -c max_connections=200 -c shared_buffers=64MB`;
  const startServer = () => {
    run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-o', opts(), '-w', '-t', '60', 'start']);
  };
  const stopServer = () => {
    run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
  };
  // Until the first start succeeded nothing runs on the dir: a failure removes it.
  try {
    run('initdb', [
      '-D',
      data,
      '-U',
      superuser,
      '--auth=scram-sha-256',
      `--pwfile=${pwfile}`,
      '-E',
      'UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ]);
    port = await freePort(); // after initdb, which takes seconds: the port is taken right before the start
    startServer();
  } catch (e) {
    removeDir(dir);
    throw e;
  }
  const psql = (sql: string) => {
    const r = spawnSync(
      'psql',
      [
        '-X',
        '-q',
        '-v',
        'ON_ERROR_STOP=1',
        '-h',
        '127.0.0.1',
        '-p',
        String(port),
        '-U',
        superuser,
        '-d',
        'postgres',
        '-c',
        sql,
      ],
      { encoding: 'utf8', env: { ...process.env, PGPASSWORD: password } },
    );
    if (r.status !== 0) throw new Error(`psql failed: ${r.stderr}`);
  };
  const url = (db: string) => `postgres://${superuser}:${password}@127.0.0.1:${port}/${db}`;
  const urlWithoutPassword = (db: string) => `postgres://${superuser}@127.0.0.1:${port}/${db}`;
  let stopped = false;
  return {
    port,
    password,
    url: url('postgres'),
    urlWithoutPassword,
    createDatabase(name) {
      psql(`CREATE DATABASE "${name}"`);
      return url(name);
    },
    restart() {
      stopServer();
      startServer();
    },
    stopServer,
    startServer,
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        stopServer();
      } catch {
        // already stopped
      }
      removeDir(dir); // after pg_ctl stop -w: the server no longer writes there
    },
  };
}

/** The `[store]` section of a box on `url`, plus extra `key = value` lines (fleet tests follow every 0.5 s). */
export function pgStoreToml(url: string, extra = ''): string {
  return `[store]\nbackend = "postgres"\nurl = ${JSON.stringify(url)}\n${extra}`;
}

/** The fleet tests' store section: a follower pass every 0.5 s so propagation is quick to observe. */
export const fleetStoreToml = (url: string, extra = ''): string =>
  pgStoreToml(url, `follow_interval_seconds = 0.5\n${extra}`);
