/**
 * Workspace store benchmark, SQLite (one box) beside PostgreSQL (fleet mode), in the same run, on a
 * throw-away PostgreSQL cluster on loopback (test/helpers/postgres.ts):
 *   - key check (authenticate) latency: SQLite indexed lookup; PostgreSQL with the verified-key cache
 *     (LISTEN connected, the hot path) and without it (every check one indexed query)
 *   - run create + finish (reserve under the workspace row lock, store items, bill) per second, sequential
 *   - N parallel creates against one workspace (the row lock serialises them): creates/s
 * Usage: npx tsx bench/workspace-store.ts [--checks 5000] [--runs 300] -> prints JSON, writes bench/results/workspace-store.json
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PgRunStore } from '../src/scrapers/pgRunStore.js';
import type { RunRepository } from '../src/scrapers/runRepository.js';
import { RunStore } from '../src/scrapers/runStore.js';
import { openDatabase } from '../src/store/database.js';
import { migratePostgres, openPool } from '../src/store/postgres.js';
import { PgWorkspaceStore } from '../src/workspaces/pgWorkspaceStore.js';
import type { WorkspaceRepository } from '../src/workspaces/repository.js';
import { UsageMeter } from '../src/workspaces/usageMeter.js';
import { WorkspaceStore } from '../src/workspaces/workspaceStore.js';
import { REPO } from '../test/helpers/daemon.js';
import { startPostgres } from '../test/helpers/postgres.js';

const { values } = parseArgs({
  options: { checks: { type: 'string', default: '5000' }, runs: { type: 'string', default: '300' } },
});
const CHECKS = Number(values.checks),
  RUNS = Number(values.runs);
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 1000) / 1000;
};

async function checks(
  store: WorkspaceRepository,
  token: string,
): Promise<{ p50_ms: number; p99_ms: number; per_s: number }> {
  const ms: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < CHECKS; i++) {
    const s = performance.now();
    if (!(await store.authenticate(token))) throw new Error('key refused');
    ms.push(performance.now() - s);
  }
  return { p50_ms: pct(ms, 50), p99_ms: pct(ms, 99), per_s: Math.round(CHECKS / ((performance.now() - t0) / 1000)) };
}

async function runs(
  store: RunRepository,
  ws: string,
): Promise<{ sequential_per_s: number; parallel_creates_per_s: number }> {
  const items = Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, item: { i } }));
  let t0 = performance.now();
  for (let i = 0; i < RUNS; i++) {
    const r = await store.create({ workspaceId: ws, kind: 'forum', request: {}, wanted: 10, maxActive: 1_000_000 });
    await store.finish(r.id, { status: 'succeeded', items, result: {}, error: null });
  }
  const sequential = RUNS / ((performance.now() - t0) / 1000);
  t0 = performance.now();
  await Promise.all(
    Array.from({ length: RUNS }, () =>
      store.create({ workspaceId: ws, kind: 'forum', request: {}, wanted: 1, maxActive: 1_000_000 }),
    ),
  );
  const parallel = RUNS / ((performance.now() - t0) / 1000);
  return { sequential_per_s: Math.round(sequential), parallel_creates_per_s: Math.round(parallel) };
}

const cluster = await startPostgres();
try {
  const db = openDatabase(mkdtempSync(join(tmpdir(), 'vigil-bench-ws-')));
  const sqliteWs = new WorkspaceStore(db.db);
  await sqliteWs.create({ id: 'bench', name: 'bench' });
  const sqliteToken = (await sqliteWs.createKey('bench')).token;
  const sqlite = {
    key_check: await checks(sqliteWs, sqliteToken),
    runs: await runs(new RunStore(db.db, new UsageMeter(db.db, 1e9)), 'bench'),
  };
  db.close();

  const url = cluster.createDatabase('bench_ws');
  const pgOptions = { url, poolSize: 8, applicationName: 'bench' };
  const pool = openPool(pgOptions);
  await migratePostgres(pool);
  const cached = new PgWorkspaceStore(pool, pgOptions, null);
  cached.listen();
  while (!cached.listening) await new Promise((r) => setTimeout(r, 20));
  await cached.create({ id: 'bench', name: 'bench' });
  const token = (await cached.createKey('bench')).token;
  const uncached = new PgWorkspaceStore(pool, null, null); // no listener: the cache is never trusted
  const postgres = {
    key_check_cached: await checks(cached, token),
    key_check_uncached: await checks(uncached, token),
    runs: await runs(new PgRunStore(pool, 'bench', 1e9), 'bench'),
  };
  await cached.close();
  await pool.end();
  const result = { checks: CHECKS, runs: RUNS, items_per_run: 10, sqlite, postgres };
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(join(REPO, 'bench/results/workspace-store.json'), JSON.stringify(result, null, 2));
} finally {
  cluster.stop();
}
