/**
 * Fleet benchmark: two real daemons (in this process, as in the tests) on one throw-away PostgreSQL
 * cluster (Debian's postgresql, loopback, test/helpers/postgres.ts), and one SQLite daemon as the anchor.
 *   - propagation: a one-person write acknowledged on box A (gallery import, batch of one: one transaction)
 *     until box B's follower has applied it to its replica and index (searchable), p50/p99/max over --writes
 *   - write throughput of the store path, each backend, measured in the same run: --writes sequential
 *     one-person imports (one transaction each, ack after the index update), and bulk import faces/s
 *     (batches of 1000)
 *   - image registration (detection + embedding + write), each backend, --registrations sequential
 *   - cold start: a new box joining a gallery of --gallery faces (time until its follower has copied the
 *     gallery and the eager index is built, i.e. first search possible)
 * Usage: npx tsx bench/fleet.ts [--writes 200] [--registrations 20] [--gallery 100000]
 *   -> prints JSON, writes bench/results/fleet.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, fetch as undiciFetch } from 'undici';
import { call, face, form, post, REPO, startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { unitVectors } from '../test/helpers/vectors.js';

const { values } = parseArgs({
  options: {
    writes: { type: 'string', default: '200' },
    registrations: { type: 'string', default: '20' },
    gallery: { type: 'string', default: '100000' },
  },
});
const WRITES = Number(values.writes),
  REGS = Number(values.registrations),
  GALLERY = Number(values.gallery);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 100) / 100;
};
const b64 = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');

// Client keep-alive shorter than the server's 5 s: a big upload on a socket the server is closing is a reset.
const agent = new Agent({ keepAliveTimeout: 1000 });

async function importLines(d: TestDaemon, cid: string, contract: string, lines: string[], batch: number) {
  // A fresh connection per upload: never a kept-alive socket the server may be closing.
  const own = new Agent();
  const res = await undiciFetch(
    `${d.url}/v1/collections/${cid}/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=${batch}`,
    {
      method: 'POST',
      headers: { ...d.auth, 'content-type': 'application/x-ndjson' },
      body: lines.join('\n'),
      dispatcher: own,
    },
  );
  const last = (await res.text()).trim().split('\n').at(-1)!;
  await own.close();
  if (!last.includes('"done"')) throw new Error(last);
}

async function collection(d: TestDaemon, id: string, capacity = 1_000_000) {
  const r = await call(d, 'POST', '/v1/collections', {
    id,
    name: id,
    search: { load_policy: 'eager', capacity_rows: capacity },
  });
  if (r.status !== 201) throw new Error(JSON.stringify(r.json));
  return r.json.collection.embedding_contract_id as string;
}

/** Sequential one-person writes (one transaction each) and bulk import on one daemon. */
async function writePath(d: TestDaemon, tag: string) {
  const contract = await collection(d, `w_${tag}`);
  const vs = unitVectors(WRITES, 21);
  const t0 = performance.now();
  for (let i = 0; i < WRITES; i++)
    await importLines(d, `w_${tag}`, contract, [JSON.stringify({ id: `p${i}`, embeddings: [b64(vs[i]!)] })], 1);
  const single = WRITES / ((performance.now() - t0) / 1000);
  const bulkN = 10_000;
  const bulk = unitVectors(bulkN, 22).map((v, i) => JSON.stringify({ id: `b${i}`, embeddings: [b64(v)] }));
  const t1 = performance.now();
  // One request per 1000-person batch: a request is bounded by [server] request_timeout_seconds.
  for (let i = 0; i < bulkN; i += 1000) await importLines(d, `w_${tag}`, contract, bulk.slice(i, i + 1000), 1000);
  const bulkRate = bulkN / ((performance.now() - t1) / 1000);
  const files = [
    'identities/obama/1.jpg',
    'identities/obama/2.jpg',
    'identities/biden/1.jpg',
    'identities/biden/2.jpg',
    'identities/rob_lowe/1.jpg',
  ];
  const t2 = performance.now();
  for (let i = 0; i < REGS; i++) {
    const r = await post(
      d,
      `/v1/collections/w_${tag}/persons`,
      form({ id: `r${i}`, images: [face(files[i % files.length]!)] }),
    );
    if (r.res.status !== 201) throw new Error(JSON.stringify(r.json));
  }
  const regs = REGS / ((performance.now() - t2) / 1000);
  return {
    single_writes_per_second: Math.round(single * 10) / 10,
    bulk_faces_per_second: Math.round(bulkRate),
    image_registrations_per_second: Math.round(regs * 100) / 100,
  };
}

const pg = await startPostgres();
const result: Record<string, unknown> = {
  writes: WRITES,
  registrations: REGS,
  gallery: GALLERY,
  cpus: (await import('node:os')).cpus().length,
};
try {
  // Anchor: the embedded SQLite box, same process, same run.
  const solo = await startTestDaemon();
  try {
    result.sqlite = await writePath(solo, 'sqlite');
  } finally {
    await solo.close();
  }

  const url = pg.createDatabase('bench_fleet');
  const toml = `[store]\nbackend = "postgres"\nurl = ${JSON.stringify(url)}\n`;
  const a = await startTestDaemon({ toml, server: ['box_id = "a"'] });
  const b = await startTestDaemon({ toml, server: ['box_id = "b"'] });
  try {
    result.postgres = await writePath(a, 'pg');

    // Propagation A -> B: ack on A until B's follower has applied the write (replica + index).
    const contract = await collection(a, 'prop');
    const followerB = b.runtime.fleet!.follower;
    const vs = unitVectors(WRITES, 23);
    while (!b.runtime.collections.find('prop')) await new Promise((r) => setTimeout(r, 5));
    const lat: number[] = [],
      fromStart: number[] = [],
      ackLat: number[] = [];
    for (let i = 0; i < WRITES; i++) {
      const want = i + 1;
      let appliedAt = 0;
      const applied = new Promise<void>((resolve) => {
        followerB.onApplied = (id) => {
          if (id === 'prop' && (b.runtime.collections.find('prop')?.face_count ?? 0) >= want) {
            appliedAt = performance.now();
            resolve();
          }
        };
      });
      const startAt = performance.now();
      await importLines(a, 'prop', contract, [JSON.stringify({ id: `q${i}`, embeddings: [b64(vs[i]!)] })], 1);
      const ackAt = performance.now();
      await applied;
      // Applied before A's ack returned (B raced ahead of the HTTP response) counts as 0.
      lat.push(Math.max(0, appliedAt - ackAt));
      fromStart.push(appliedAt - startAt);
      ackLat.push(ackAt - startAt);
    }
    followerB.onApplied = null;
    result.propagation_ms = {
      after_ack_on_a: { p50: pct(lat, 50), p99: pct(lat, 99), max: pct(lat, 100) },
      from_request_start_on_a: { p50: pct(fromStart, 50), p99: pct(fromStart, 99), max: pct(fromStart, 100) },
      a_request_latency: { p50: pct(ackLat, 50), p99: pct(ackLat, 99) },
      n: lat.length,
    };

    // Cold start: a gallery of GALLERY faces, then a new box joins.
    const gc = await collection(a, 'big', GALLERY + 10);
    const vecs = unitVectors(GALLERY, 24);
    const t0 = performance.now();
    for (let i = 0; i < GALLERY; i += 2000) {
      const lines = vecs.slice(i, i + 2000).map((v, j) => JSON.stringify({ id: `g${i + j}`, embeddings: [b64(v)] }));
      try {
        await importLines(a, 'big', gc, lines, 2000);
      } catch (e) {
        const state = await call(a, 'GET', '/v1/collections/big');
        const probe = await undiciFetch(
          `${a.url}/v1/collections/big/import?embedding_contract_id=${encodeURIComponent(gc)}`,
          {
            method: 'POST',
            headers: { ...a.auth, 'content-type': 'application/x-ndjson' },
            body: 'x',
            dispatcher: agent,
          },
        );
        console.error('probe', probe.status, await probe.text());
        console.error(
          `gallery load: request at ${i} failed (${String((e as Error).cause ?? e)}); collection now ${JSON.stringify({ status: state.status, faces: state.json.collection?.face_count })}`,
        );
        throw e;
      }
    }
    result.gallery_load = { faces: GALLERY, seconds: Math.round((performance.now() - t0) / 100) / 10 };
    const t1 = performance.now();
    const c = await startTestDaemon({ toml, server: ['box_id = "c"'] });
    try {
      const r = await post(c, '/v1/collections/big/search', form({ image: face('identities/obama/3.jpg') }));
      if (r.res.status !== 200) throw new Error(JSON.stringify(r.json));
      result.cold_start_seconds = {
        to_first_search: Math.round((performance.now() - t1) / 100) / 10,
        faces: GALLERY,
        note: 'includes model load + warm-up of the new daemon',
      };
    } finally {
      await c.close();
    }
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
} finally {
  pg.stop();
}
console.log(JSON.stringify(result, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/fleet.json'), JSON.stringify(result, null, 2));
process.exit(0);
