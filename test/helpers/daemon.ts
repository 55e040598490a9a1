import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FACES, MODELS_MIRROR, REPO as REPO_ROOT, Sink } from './shared.js';
import { loadConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/cli/serve.js';
import { installPack } from '../../src/models/installer.js';
import { pgStoreToml, startPostgres, type PgCluster } from './postgres.js';
import { fileTempDir, removeDir } from './tempDir.js';

export { FACES, MODELS_MIRROR, REPO, SHARED, encodeBmp24 } from './shared.js';
export const face = (rel: string): Buffer => readFileSync(join(FACES, rel));
export const labels = JSON.parse(readFileSync(join(FACES, 'labels.json'), 'utf8')) as {
  identities: Record<string, string[]>;
  groups: Record<string, { faces: number; left_to_right?: string[] }>;
  singletons_for_negatives: string[];
};

/** A pack's measured default match threshold from the bundled manifest (what the daemon falls back to). */
export function packThreshold(packId: string): number {
  const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'models/manifest.json'), 'utf8')) as {
    packs: Record<string, { recommended_threshold?: { similarity: number } }>;
  };
  return manifest.packs[packId]?.recommended_threshold?.similarity ?? 0.4;
}
/** The default pack's threshold: compare's and new collections' default in a daemon with no default_threshold set. */
export const DEFAULT_THRESHOLD = packThreshold('edge_s');

const installed = new Map<string, Promise<string>>();

/** Installs a model pack from the shared mirror into a temp models dir, once per test process (removed at its exit). */
export function modelsDirWith(packId = 'edge_s'): Promise<string> {
  let p = installed.get(packId);
  if (!p) {
    const dir = fileTempDir('vigil-models-');
    p = installPack({
      packId,
      modelsDir: dir,
      mirror: MODELS_MIRROR,
      acceptLicense: true,
      io: { stdout: new Sink(), stderr: new Sink() } as never,
    }).then(() => dir);
    installed.set(packId, p);
  }
  return p;
}

export const TEST_KEY = 'vigil-test-key-0123456789';

/**
 * VIGIL_TEST_STORE=postgres runs a suite's daemons in fleet mode: one throw-away PostgreSQL cluster per
 * test process (stopped at exit), a fresh database per daemon. The *-postgres.test.ts files set it.
 */
let cluster: Promise<PgCluster> | null = null;
let clusterDbs = 0;
const dbOfDir = new Map<string, string>();
async function storeToml(dir: string): Promise<string> {
  if (process.env.VIGIL_TEST_STORE !== 'postgres') return '';
  if (!cluster) {
    cluster = startPostgres();
    void cluster.then((c) => process.once('exit', () => c.stop()));
  }
  // A daemon restarted on the same data dir finds the same database (as a real box would).
  let url = dbOfDir.get(dir);
  if (!url) dbOfDir.set(dir, (url = (await cluster).createDatabase(`suite_${process.pid}_${++clusterDbs}`)));
  return `\n${pgStoreToml(url)}`;
}

/** The `[server]` table of a test box: loopback on a free port, its data and models dirs, the log level. */
export function serverLines(o: { dataDir: string; modelsDir: string; logLevel?: string }): string[] {
  return [
    '[server]',
    'host = "127.0.0.1"',
    'port = 0',
    `data_dir = ${JSON.stringify(o.dataDir)}`,
    `models_dir = ${JSON.stringify(o.modelsDir)}`,
    `log_level = "${o.logLevel ?? 'silent'}"`,
  ];
}

export interface TestDaemon extends Daemon {
  key: string;
  auth: Record<string, string>;
}

/**
 * A real daemon on 127.0.0.1:<random> with its own data dir; `server` lines go into [server], `toml` is appended.
 * Without `dir` the daemon gets a temp dir that close() removes once the daemon has stopped; a test that
 * reads the dir after close() or starts a daemon on it again passes its own `dir` (tempDir(t, …)).
 */
export async function startTestDaemon(
  opts: { toml?: string; pack?: string; waitReady?: boolean; modelsDir?: string; dir?: string; server?: string[] } = {},
): Promise<TestDaemon> {
  const owned = opts.dir === undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'vigil-test-'));
  const modelsDir = opts.modelsDir ?? (await modelsDirWith(opts.pack ?? 'edge_s'));
  const file = join(dir, 'server.toml');
  writeFileSync(
    file,
    [
      ...serverLines({ dataDir: join(dir, 'data'), modelsDir }),
      ...(opts.server ?? []),
      opts.toml ?? '',
      await storeToml(dir),
    ].join('\n'),
  );
  let daemon: Daemon;
  try {
    daemon = await startDaemon(loadConfig(file, { VIGIL_API_KEY: TEST_KEY }));
  } catch (e) {
    if (owned) removeDir(dir);
    throw e;
  }
  if (owned) {
    // One close for every caller (a finally and an after hook may both call it): the dir goes once the daemon is down.
    const close = daemon.close;
    let closing: Promise<void> | undefined;
    daemon.close = () => (closing ??= close().finally(() => removeDir(dir)));
  }
  if (opts.waitReady !== false) {
    try {
      await daemon.ready;
    } catch (e) {
      await daemon.close();
      throw e;
    }
  }
  return Object.assign(daemon, { key: TEST_KEY, auth: { Authorization: `Bearer ${TEST_KEY}` } });
}

/** multipart/form-data from named parts (Buffers become files). */
export function form(parts: Record<string, Buffer | string | (Buffer | string)[]>): FormData {
  const fd = new FormData();
  for (const [name, value] of Object.entries(parts)) {
    for (const v of Array.isArray(value) ? value : [value]) {
      if (typeof v === 'string') fd.append(name, v);
      else fd.append(name, new Blob([v]), `${name}.bin`);
    }
  }
  return fd;
}

export async function post(
  d: TestDaemon,
  path: string,
  body: FormData | string,
  headers: Record<string, string> = d.auth,
) {
  const res = await fetch(d.url + path, { method: 'POST', body, headers });
  return { res, json: (await res.json()) as Record<string, any> };
}

/** JSON request with the daemon's auth; returns the status and the parsed body (null for 204). */
export async function call(
  d: TestDaemon,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = d.auth,
) {
  const res = await fetch(d.url + path, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { res, status: res.status, json: (text ? JSON.parse(text) : null) as Record<string, any> };
}
