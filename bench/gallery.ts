/**
 * Gallery bench against a real daemon (a child process running the built dist/, like systemd does):
 * bulk import rate through POST /v1/collections/{id}/import (NDJSON, base64 float32 embeddings, and a
 * smaller JSON-numbers run), idle RSS with the gallery loaded next to the RSS of the same daemon with an
 * empty collection (the models), and restart timings (from the vector snapshot, then from SQLite with the
 * file removed): process start -> port open -> first
 * exact search (a real photo: detection + embedding + scan) completed.
 *
 * Usage: npx tsx bench/gallery.ts [--faces 100000] [--profile fp32_v1] [--batch 2000] [--json-faces 20000] [--fresh-vectors]
 *          [--keep DIR] [--restarts 1]
 *   --keep DIR    the daemon's data dir lives in DIR and is kept; when DIR already holds an imported gallery
 *                 the import is skipped and only the restarts run (iterate on start-up without re-importing)
 *   --restarts N  restarts from the snapshot measured (each reported; the SQLite restart runs once after them)
 * Needs `npm run build` and the models in ../shared/models. Writes bench/results/gallery-<faces>.json.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { modelsDirWith } from '../test/helpers/daemon.js';
import { processCpuSeconds } from './procStat.js';
import { FACES } from '../test/helpers/shared.js';
import { prng } from '../test/helpers/vectors.js';
import { fileTempDir } from '../test/helpers/tempDir.js';

const { values } = parseArgs({
  options: {
    faces: { type: 'string', default: '100000' },
    profile: { type: 'string', default: 'fp32_v1' },
    batch: { type: 'string', default: '2000' },
    'json-faces': { type: 'string', default: '20000' },
    'fresh-vectors': { type: 'boolean', default: false },
    keep: { type: 'string' },
    restarts: { type: 'string', default: '1' },
    'skip-sqlite': { type: 'boolean', default: false },
  },
});
const N = Number(values.faces),
  BATCH = Number(values.batch),
  JSON_FACES = Number(values['json-faces']);
const DIM = 512;
const KEY = 'vigil-bench-key-0123456789';
const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const auth = { Authorization: `Bearer ${KEY}` };
const log = (s: string) => process.stdout.write(`${s}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (v: number) => Math.round(v * 10) / 10;

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) / 1024;
}

function start(config: string): {
  child: ChildProcess;
  listening: Promise<{ url: string; ms: number }>;
  t0: number;
  marks: Record<string, number>;
} {
  const marks: Record<string, number> = {};
  const t0 = performance.now();
  // BENCH_DAEMON_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"): node flags for the daemon (profiling a start).
  const nodeArgs = (process.env.BENCH_DAEMON_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // BENCH_DIST: another build's dist/ (an A/B of two commits on the same kept data dir).
  const child = spawn(
    process.execPath,
    [...nodeArgs, join(process.env.BENCH_DIST ?? join(REPO, 'dist'), 'cli/main.js'), 'serve', '--config', config],
    { env: { ...process.env, VIGIL_API_KEY: KEY, UV_THREADPOOL_SIZE: '16' }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const listening = new Promise<{ url: string; ms: number }>((res, rej) => {
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) {
        try {
          const rec = JSON.parse(l) as { msg?: string; url?: string };
          if (rec.msg) marks[rec.msg] ??= performance.now() - t0;
          if (rec.msg === 'listening' && rec.url) res({ url: rec.url, ms: performance.now() - t0 });
        } catch {
          /* not JSON */
        }
      }
    });
    child.once('exit', (code) => rej(new Error(`daemon exited ${code}`)));
  });
  return { child, listening, t0, marks };
}

async function ready(url: string): Promise<void> {
  for (;;) {
    if ((await fetch(`${url}/v1/health`).catch(() => null))?.status === 200) return;
    await sleep(20);
  }
}

const stop = async (c: ChildProcess) => {
  c.kill('SIGTERM');
  await new Promise((r) => c.once('exit', r));
};

/** Clustered unit vectors, as bench/search.ts (5 faces per person around an identity direction). */
function* persons(n: number, seed: number, asJson: boolean): Generator<string> {
  const rand = prng(seed);
  const unit = (base: Float32Array | null, noise: number) => {
    const v = new Float32Array(DIM);
    let s = 0;
    for (let j = 0; j < DIM; j++) {
      v[j] = (base ? base[j]! : 0) + noise * (rand() - 0.5);
      s += v[j]! * v[j]!;
    }
    for (let j = 0; j < DIM; j++) v[j]! /= Math.sqrt(s);
    return v;
  };
  // By default the client cycles through 4096 persons' vectors made before the clock starts (ids stay
  // unique): this 2-core box runs client and daemon, and a client making 512 random values per face
  // would take CPU from the daemon being measured. --fresh-vectors makes every vector anew.
  const pool: string[] = [];
  if (!asJson && !values['fresh-vectors']) {
    for (let p = 0; p < 4096; p++) {
      const id = unit(null, 1);
      pool.push(JSON.stringify(Array.from({ length: 5 }, () => Buffer.from(unit(id, 0.15).buffer).toString('base64'))));
    }
  }
  for (let p = 0; p * 5 < n; p++) {
    if (pool.length && (p + 1) * 5 <= n) {
      yield `{"id":"p${p}","embeddings":${pool[p % pool.length]}}\n`;
      continue;
    }
    const id = unit(null, 1);
    const embeddings = [];
    for (let f = 0; f < 5 && p * 5 + f < n; f++) {
      const v = unit(id, 0.15);
      embeddings.push(asJson ? Array.from(v) : Buffer.from(v.buffer).toString('base64'));
    }
    yield `${JSON.stringify({ id: `${asJson ? 'j' : 'p'}${p}`, embeddings })}\n`;
  }
}

/** Persons per request, as `vigil gallery import` sends them (a body must arrive within request_timeout_seconds + 5 s). */
const REQUEST_PERSONS = 20_000;

async function importInto(
  url: string,
  collection: string,
  contract: string,
  n: number,
  asJson: boolean,
  daemonPid: number,
) {
  const gen = persons(n, asJson ? 2 : 1, asJson);
  const first = gen.next(); // makes the pool before the clock starts
  let pending: string | null = first.done ? null : first.value;
  let ended = !!first.done;
  const t = performance.now();
  const cpu0 = processCpuSeconds(daemonPid),
    clientCpu0 = process.cpuUsage();
  let faces = 0;
  while (!ended) {
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        let chunk = pending ?? '';
        if (pending) sent++;
        pending = null;
        for (let i = 0; i < 200 && sent < REQUEST_PERSONS; i++) {
          const next = gen.next();
          if (next.done) {
            ended = true;
            break;
          }
          chunk += next.value;
          sent++;
        }
        if (chunk) controller.enqueue(new TextEncoder().encode(chunk));
        if (ended || sent >= REQUEST_PERSONS) controller.close();
      },
    });
    const res = await fetch(
      `${url}/v1/collections/${collection}/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=${BATCH}`,
      {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/x-ndjson' },
        body,
        duplex: 'half',
      } as RequestInit,
    );
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; faces: number });
    const last = lines.at(-1)!;
    if (last.type !== 'done') throw new Error(`import failed: ${JSON.stringify(last)}`);
    faces += last.faces;
  }
  const s = (performance.now() - t) / 1000;
  // CPU per 1000 faces (daemon: all its threads; client: this process) is robust to the load of a shared box, unlike the rate.
  const daemonCpu = processCpuSeconds(daemonPid) - cpu0,
    clientCpu = process.cpuUsage(clientCpu0);
  return {
    faces,
    seconds: r1(s * 10) / 10,
    faces_per_second: Math.round(faces / s),
    persons_per_request: REQUEST_PERSONS,
    daemon_cpu_ms_per_1000_faces: r1((daemonCpu * 1e6) / faces),
    client_cpu_ms_per_1000_faces: r1((clientCpu.user + clientCpu.system) / faces),
    loadavg_1m_after: loadavg()[0]!,
  };
}

let startupResets = 0;

/** Searches as soon as the port is open, retrying while the models load (503): the first search served. */
async function firstSearch(url: string, collection: string): Promise<void> {
  for (;;) {
    try {
      await search(url, collection);
      return;
    } catch (e) {
      // 503 while the models load; a reset connection while the port has just opened (seen once at 1M:
      // the request raced the start-up) is retried too, and counted.
      if (/fetch failed/.test((e as Error).message)) startupResets++;
      else if (!/search 503/.test((e as Error).message)) throw e;
      await sleep(20);
    }
  }
}

async function search(url: string, collection: string) {
  const fd = new FormData();
  fd.append('image', new Blob([readFileSync(join(FACES, 'identities/obama/1.jpg'))]), 'q.jpg');
  const t = performance.now();
  const res = await fetch(`${url}/v1/collections/${collection}/search`, { method: 'POST', headers: auth, body: fd });
  if (res.status !== 200) throw new Error(`search ${res.status}: ${await res.text()}`);
  await res.json();
  return performance.now() - t;
}

const dir = values.keep ? resolve(values.keep) : fileTempDir('vigil-bench-gallery-');
mkdirSync(dir, { recursive: true });
const config = join(dir, 'server.toml');
const kept =
  values.keep && existsSync(join(dir, 'imported.json'))
    ? (JSON.parse(readFileSync(join(dir, 'imported.json'), 'utf8')) as Record<string, unknown>)
    : null;
writeFileSync(
  config,
  [
    '[server]',
    'host = "127.0.0.1"',
    'port = 0',
    `data_dir = ${JSON.stringify(join(dir, 'data'))}`,
    `models_dir = ${JSON.stringify(await modelsDirWith('edge_s'))}`,
    'log_level = "info"',
    `max_request_bytes = ${64 * 2 ** 20}`,
  ].join('\n'),
);
try {
  log(
    `gallery bench: ${N} faces, profile ${values.profile}, batches of ${BATCH} persons; load ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  let d = start(config);
  let { url } = await d.listening;
  await ready(url);
  let imported: Record<string, unknown>;
  if (kept) {
    imported = kept;
    log(`kept data dir ${dir}: ${String(kept.total)} faces imported earlier, import skipped`);
  } else {
    const create = await fetch(`${url}/v1/collections`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'g',
        name: 'G',
        search: {
          profile: values.profile,
          capacity_rows: N + JSON_FACES,
          max_faces_per_person: 10,
          load_policy: 'eager',
        },
      }),
    });
    const contract = ((await create.json()) as { collection: { embedding_contract_id: string } }).collection
      .embedding_contract_id;
    await search(url, 'g');
    await sleep(2000);
    const rssModels = rssMiB(d.child.pid!);
    log(`daemon with models and an empty collection: RSS ${rssModels.toFixed(0)} MiB`);
    const b64 = await importInto(url, 'g', contract, N, false, d.child.pid!);
    log(
      `import (base64 float32): ${b64.faces} faces in ${b64.seconds} s = ${b64.faces_per_second} faces/s; daemon CPU ${b64.daemon_cpu_ms_per_1000_faces} ms, client CPU ${b64.client_cpu_ms_per_1000_faces} ms per 1000 faces; load ${b64.loadavg_1m_after.toFixed(1)}`,
    );
    const json = JSON_FACES > 0 ? await importInto(url, 'g', contract, JSON_FACES, true, d.child.pid!) : null;
    if (json) log(`import (JSON numbers): ${json.faces} faces in ${json.seconds} s = ${json.faces_per_second} faces/s`);
    imported = { total: N + (json?.faces ?? 0), b64, json, rssModels, loadavg_during_import: loadavg() };
    if (values.keep) writeFileSync(join(dir, 'imported.json'), JSON.stringify(imported));
  }
  const total = imported.total as number,
    b64 = imported.b64,
    json = imported.json as { faces: number } | null,
    rssModels = imported.rssModels as number;
  await search(url, 'g');
  await sleep(3000);
  const rssLoaded = rssMiB(d.child.pid!);
  await stop(d.child);

  /** Restart timings: port open, first search served (polled from port open), health ready, integrity check, RSS. */
  const restart = async () => {
    d = start(config);
    const listen = await d.listening;
    url = listen.url;
    await firstSearch(url, 'g');
    const firstSearchMs = performance.now() - d.t0;
    await ready(url);
    const readyMs = performance.now() - d.t0;
    const warm: number[] = [];
    for (let i = 0; i < 5; i++) warm.push(await search(url, 'g'));
    await sleep(3000);
    const rss = rssMiB(d.child.pid!);
    const marks = d.marks;
    await stop(d.child);
    return {
      port_open_ms: Math.round(listen.ms),
      first_search_done_ms: Math.round(firstSearchMs),
      health_ready_ms: Math.round(readyMs),
      integrity_check_done_ms: Math.round(marks['database integrity check passed'] ?? -1),
      indexes_loaded_ms: Math.round(marks['search indexes loaded'] ?? -1),
      models_ready_log_ms: Math.round(marks.ready ?? -1),
      warm_search_ms: warm.map(Math.round),
      rss_mib: r1(rss),
    };
  };
  const snapshotRuns = [];
  for (let i = 0; i < Math.max(1, Number(values.restarts)); i++) {
    const r = await restart();
    log(
      `restart from the snapshot #${i + 1}: port open ${r.port_open_ms} ms, indexes loaded ${r.indexes_loaded_ms} ms, models ready ${r.models_ready_log_ms} ms, first search done ${r.first_search_done_ms} ms; load ${loadavg()[0]!.toFixed(1)}`,
    );
    snapshotRuns.push({ ...r, loadavg_1m: loadavg()[0]! });
  }
  const fromSnapshot = snapshotRuns[0]!;
  // The same restart without the snapshot file: the index is built from SQLite (and the file written again).
  let fromSqlite: typeof fromSnapshot = fromSnapshot;
  if (!values['skip-sqlite']) {
    rmSync(join(dir, 'data', 'search-indexes', 'g.vectors'), { force: true });
    fromSqlite = { ...(await restart()), loadavg_1m: loadavg()[0]! };
  }
  const rssRestart = fromSnapshot.rss_mib;
  const bytesPer =
    { fp32_v1: 4, fp16_v1: 2, bf16_v1: 2, int8_x736_v1: 1, int8_x1000_v1: 1 }[values.profile as 'fp32_v1'] ?? 4;
  const rawMiB = (total * DIM * bytesPer) / 2 ** 20;
  const out = {
    bench: 'gallery',
    at: new Date().toISOString(),
    faces: total,
    profile: values.profile,
    batch_persons: BATCH,
    loadavg: loadavg(),
    import_base64: b64,
    import_json_numbers: json,
    rss_models_empty_mib: r1(rssModels),
    rss_after_import_mib: r1(rssLoaded),
    rss_after_restart_mib: r1(rssRestart),
    raw_vector_mib: r1(rawMiB),
    rss_ratio_after_restart: r1(((rssRestart - rssModels) / rawMiB) * 100) / 100,
    rss_ratio_after_sqlite_restart: r1(((fromSqlite.rss_mib - rssModels) / rawMiB) * 100) / 100,
    restart_from_snapshot: fromSnapshot,
    restart_from_snapshot_runs: snapshotRuns,
    restart_from_sqlite: values['skip-sqlite'] ? null : fromSqlite,
    kept_data_dir: values.keep ?? null,
  };
  for (const [name, r] of [
    ['snapshot', fromSnapshot],
    ['SQLite', fromSqlite],
  ] as const) {
    log(
      `restart (${name}): port open ${r.port_open_ms} ms, first search done ${r.first_search_done_ms} ms, health ready ${r.health_ready_ms} ms, indexes loaded ${r.indexes_loaded_ms} ms, quick_check done ${r.integrity_check_done_ms} ms (warm ${r.warm_search_ms.join('/')} ms), RSS ${r.rss_mib} MiB, connection resets while starting ${startupResets}`,
    );
  }
  log(
    `RSS: models ${out.rss_models_empty_mib} MiB, after import ${out.rss_after_import_mib} MiB, after restart ${out.rss_after_restart_mib} MiB; raw vectors ${out.raw_vector_mib} MiB -> (RSS - models) / raw = ${out.rss_ratio_after_restart}`,
  );
  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(join(REPO, `bench/results/gallery-${N}.json`), JSON.stringify(out, null, 2));
} finally {
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}
