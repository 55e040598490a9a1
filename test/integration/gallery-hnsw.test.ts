import test from 'ava';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { runGalleryImport } from '../../src/cli/gallery.js';
import { unitVectors } from '../helpers/vectors.js';
import { startChild } from '../helpers/daemonProcess.js';
import { join } from 'node:path';
import {
  call,
  face,
  form,
  labels,
  modelsDirWith,
  post,
  startTestDaemon,
  TEST_KEY,
  type TestDaemon,
} from '../helpers/daemon.js';
import { b64, ndjson, postImport as importLines } from '../helpers/importRequest.js';
import { tempDir } from '../helpers/tempDir.js';

const PHOTOS = Object.entries(labels.identities).flatMap(([person, photos]) =>
  photos.map((photo) => ({ person, photo })),
);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const contractOf = async (d: TestDaemon, id: string) =>
  (await call(d, 'GET', `/v1/collections/${id}`)).json.collection.embedding_contract_id as string;

async function waitGraph(
  d: TestDaemon,
  id: string,
  pred: (g: Record<string, any>, status: Record<string, any>) => boolean,
  ms = 60_000,
): Promise<Record<string, any>> {
  const until = Date.now() + ms;
  for (;;) {
    const status = (await call(d, 'GET', `/v1/collections/${id}`)).json.collection.search_index.status as Record<
      string,
      any
    >;
    if (pred(status.graph, status)) return status;
    if (Date.now() > until) throw new Error(`graph of ${id} never reached the state: ${JSON.stringify(status)}`);
    await sleep(100);
  }
}

test('gallery import: contract id, line checks, capacity and per-person limits are all-or-nothing per batch', async (t) => {
  const d = await startTestDaemon();
  try {
    t.is(
      (
        await call(d, 'POST', '/v1/collections', {
          id: 'g',
          name: 'G',
          search: { capacity_rows: 10, max_faces_per_person: 2 },
        })
      ).status,
      201,
    );
    const contract = await contractOf(d, 'g');
    const v = unitVectors(12, 1);
    const q = (extra = '') => `embedding_contract_id=${encodeURIComponent(contract)}${extra}`;

    let r = await importLines(d, 'g', ndjson([{ id: 'a', embeddings: [b64(v[0]!)] }]), '');
    t.is(r.status, 400);
    t.is(r.json?.error.code, 'missing_embedding_contract_id');
    r = await importLines(
      d,
      'g',
      ndjson([{ id: 'a', embeddings: [b64(v[0]!)] }]),
      'embedding_contract_id=ifsemb-v2-sha256:00',
    );
    t.is(r.status, 409);
    t.is(r.json?.error.code, 'embedding_contract_mismatch');
    t.is(r.json?.error.details.expected_embedding_contract_id, contract);
    t.is((await call(d, 'POST', '/v1/collections/missing/import?' + q(), {})).status, 404);

    // A bad vector (norm 2) in the first batch: 400, nothing stored.
    r = await importLines(
      d,
      'g',
      ndjson([
        { id: 'a', embeddings: [Array.from(v[0]!)] },
        { id: 'b', embeddings: [Array.from(v[1]!, (x) => x * 2)] },
      ]),
      q(),
    );
    t.is(r.status, 400);
    t.is(r.json?.error.code, 'invalid_import_line');
    t.is(r.json?.error.details.line, 2);
    t.is((await call(d, 'GET', '/v1/collections/g')).json.collection.person_count, 0);

    // Per-person limit and capacity: 409, nothing stored.
    r = await importLines(d, 'g', ndjson([{ id: 'a', embeddings: [b64(v[0]!), b64(v[1]!), b64(v[2]!)] }]), q());
    t.is(r.json?.error.code, 'person_face_limit_exceeded');
    r = await importLines(
      d,
      'g',
      ndjson(Array.from({ length: 6 }, (_, i) => ({ id: `p${i}`, embeddings: [b64(v[2 * i]!), b64(v[2 * i + 1]!)] }))),
      q(),
    );
    t.is(r.status, 409);
    t.is(r.json?.error.code, 'collection_capacity_exceeded');
    t.is((await call(d, 'GET', '/v1/collections/g')).json.collection.face_count, 0);

    // Batches of 2: the first two batches commit, the third (a duplicate person) fails and leaves nothing.
    const persons = [0, 1, 2, 3].map((i) => ({
      id: `p${i}`,
      name: `P ${i}`,
      external_id: `x${i}`,
      metadata: { i },
      embeddings: [b64(v[2 * i]!), Array.from(v[2 * i + 1]!)],
    }));
    r = await importLines(
      d,
      'g',
      ndjson([...persons, { id: 'p4', embeddings: [b64(v[8]!)] }, { id: 'p0', embeddings: [b64(v[9]!)] }]),
      q('&batch_size=2'),
    );
    t.is(r.status, 200);
    t.deepEqual(
      r.lines.map((l) => l.type),
      ['progress', 'progress', 'error'],
    );
    t.like(r.lines[1], { batches: 2, persons: 4, faces: 8 });
    t.like(r.lines[2], { error: { code: 'person_exists' }, committed: { persons: 4, faces: 8 } });
    const c = (await call(d, 'GET', '/v1/collections/g')).json.collection;
    t.like(c, { person_count: 4, face_count: 8 });
    t.false((await call(d, 'GET', '/v1/collections/g/persons/p4')).status === 200, 'the failed batch left nothing');
    const p2 = (await call(d, 'GET', '/v1/collections/g/persons/p2')).json.person;
    t.like(p2, { name: 'P 2', external_id: 'x2', metadata: { i: 2 }, face_count: 2 });
    const faces = (await call(d, 'GET', '/v1/collections/g/persons/p2/faces')).json.faces as Record<string, any>[];
    t.true(
      faces.every(
        (f) =>
          f.embedding_source === 'external_trusted' && f.embedding_contract_id === contract && f.has_crop === false,
      ),
    );
    // Imported rows are searchable at once: a fixture photo finds nothing above threshold, but limit/threshold 0 returns them.
    const s = await post(
      d,
      '/v1/collections/g/search',
      form({ image: face(PHOTOS[0]!.photo), limit: '10', threshold: '0' }),
    );
    t.is(s.res.status, 200);
    t.true((s.json.matches as unknown[]).length >= 1);

    // The CLI streams a file to the same endpoint and reads the contract id from the collection.
    const file = join(tempDir(t, 'vigil-gallery-'), 'g.ndjson');
    writeFileSync(
      file,
      ndjson([
        { id: 'cli1', embeddings: [b64(v[10]!)] },
        { id: 'cli2', embeddings: [b64(v[11]!)] },
      ]),
    );
    const printed: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        printed.push(String(chunk));
        done();
      },
    });
    // One person per request: the CLI splits a file into several requests and sums them up.
    t.is(
      await runGalleryImport(
        { url: d.url, key: d.key, collection: 'g', file, contractId: null, batchSize: 1, requestPersons: 1 },
        sink,
      ),
      0,
    );
    t.like(JSON.parse(printed.at(-1)!), { type: 'done', persons: 2, faces: 2 });
    t.true(JSON.parse(printed.at(-1)!).requests >= 2);
    t.is((await call(d, 'GET', '/v1/collections/g')).json.collection.person_count, 6);
    t.is(
      await runGalleryImport({ url: d.url, key: d.key, collection: 'g', file, contractId: null, batchSize: 1 }, sink),
      1,
      'the same persons again: person_exists',
    );
  } finally {
    await d.close();
  }
});

test('hnsw collection: identical to exact on the fixture faces, exact while building, deletes never returned, restart maps the file, a stale file is rebuilt', async (t) => {
  const dir = tempDir(t, 'vigil-hnsw-');
  let d = await startTestDaemon({ dir, toml: '[collections]\ndefault_load_policy = "eager"' });
  /** Rows the graph holds beyond its build (a build during the import, then the late add): the same after a restart. */
  let addedSince = 1;
  try {
    t.is((await call(d, 'POST', '/v1/collections', { id: 'ex', name: 'Exact' })).status, 201);
    const created = await call(d, 'POST', '/v1/collections', {
      id: 'hn',
      name: 'HNSW',
      search: { index: 'hnsw', hnsw: { connectivity: 8, expansion_search: 128 } },
    });
    t.is(created.status, 201);
    t.like(created.json.collection.search_index, {
      type: 'hnsw',
      hnsw: { connectivity: 8, expansion_add: 256, expansion_search: 128 },
    });

    // The fixture faces' embeddings (server-side), imported into both collections plus synthetic distractors.
    const fixtures: { person: string; photo: string; embedding: number[] }[] = [];
    for (const p of PHOTOS) {
      const e = await post(d, '/v1/embeddings', form({ image: face(p.photo) }));
      if (e.res.status === 200 && e.json.faces[0]?.embedding)
        fixtures.push({ ...p, embedding: e.json.faces[0].embedding as number[] });
    }
    const byPerson = new Map<string, number[][]>();
    for (const f of fixtures.filter((_, i) => i % 2 === 0))
      byPerson.set(f.person, [...(byPerson.get(f.person) ?? []), f.embedding]);
    const distractors = unitVectors(3000, 7).map((v, i) => ({ id: `z${i}`, embeddings: [b64(v)] }));
    const lines = ndjson([...[...byPerson].map(([id, embeddings]) => ({ id, embeddings })), ...distractors]);
    for (const id of ['ex', 'hn']) {
      const r = await importLines(
        d,
        id,
        lines,
        `embedding_contract_id=${encodeURIComponent(await contractOf(d, id))}&batch_size=500`,
      );
      t.is(r.lines.at(-1)?.type, 'done', `${id}: ${JSON.stringify(r.json ?? r.lines.at(-1))}`);
    }
    // The graph may have been built while the import was still committing: rows added after its build go into
    // the graph too (added_rows_since), so it covers the collection once both add up.
    const total = 3000 + [...byPerson.values()].flat().length;
    const ready = await waitGraph(
      d,
      'hn',
      (g) => g.state === 'ready' && !g.rebuilding && g.rows + g.added_rows_since === total,
    );
    t.is(ready.serving, 'hnsw');
    // The default hnsw_memory: the mapped file serves at once, the huge-page copy takes over once read.
    const copied = await waitGraph(d, 'hn', (g) => g.memory === 'huge_pages');
    t.is(typeof copied.graph.huge_pages, 'boolean');
    t.is(copied.graph.memory_error, undefined);
    t.is((await call(d, 'GET', '/v1/collections/ex')).json.collection.search_index.status.serving, 'exact');

    const search = async (id: string, photo: string) =>
      (await post(d, `/v1/collections/${id}/search`, form({ image: face(photo), limit: '5', threshold: '0.2' }))).json
        .matches as Record<string, any>[];
    const strip = (ms: Record<string, any>[]) => ms.map((m) => [m.person.id, m.similarity]);
    for (const f of fixtures)
      t.deepEqual(strip(await search('hn', f.photo)), strip(await search('ex', f.photo)), f.photo);

    // Deletes are filtered although the graph still holds the rows.
    const victim = [...byPerson.keys()][0]!;
    t.is((await call(d, 'DELETE', `/v1/collections/hn/persons/${victim}`)).status, 204);
    const after = (await call(d, 'GET', '/v1/collections/hn')).json.collection.search_index.status;
    t.like(after, { serving: 'hnsw', graph: { deleted_rows_since: byPerson.get(victim)!.length } });
    for (const f of fixtures.filter((x) => x.person === victim))
      t.false((await search('hn', f.photo)).some((m) => m.person.id === victim));

    // An add after the build is found through the exact delta.
    const extra = fixtures.find((f) => f.person !== victim)!;
    const add = await importLines(
      d,
      'hn',
      ndjson([{ id: 'late', embeddings: [extra.embedding] }]),
      `embedding_contract_id=${encodeURIComponent(await contractOf(d, 'hn'))}`,
    );
    t.is(add.lines.at(-1)?.type, 'done');
    t.is((await search('hn', extra.photo))[0]?.person.id, 'late');
    // One more than the rows the graph had to take in after its build (none when it was built after the import).
    addedSince = ready.graph.added_rows_since + 1;
    t.like((await call(d, 'GET', '/v1/collections/hn')).json.collection.search_index.status, {
      serving: 'hnsw',
      graph: { added_rows_since: addedSince },
    });
  } finally {
    await d.close();
  }

  // Restart: the persisted graph is mapped, not rebuilt.
  const sidecar = join(dir, 'data', 'search-indexes', 'hn.hnsw.json');
  const builtAt = (JSON.parse(readFileSync(sidecar, 'utf8')) as { built_at: string }).built_at;
  d = await startTestDaemon({ dir, toml: '[collections]\ndefault_load_policy = "eager"' });
  try {
    const s = (await call(d, 'GET', '/v1/collections/hn')).json.collection.search_index.status;
    t.like(s, { serving: 'hnsw', graph: { state: 'ready', built_at: builtAt, added_rows_since: addedSince } });
    t.is(s.graph.file_problem, undefined);
  } finally {
    await d.close();
  }

  // A file that claims a later revision than the database (a restored backup) is not used: exact, then rebuilt.
  const meta = JSON.parse(readFileSync(sidecar, 'utf8')) as { revision: number };
  writeFileSync(sidecar, JSON.stringify({ ...meta, revision: meta.revision + 1000 }));
  d = await startTestDaemon({ dir, toml: '[collections]\ndefault_load_policy = "eager"' });
  try {
    const first = (await call(d, 'GET', '/v1/collections/hn')).json.collection.search_index.status;
    // Either still building with the reason, or (eager collections load while the models warm up) already rebuilt.
    if (first.graph.built_at === builtAt || first.graph.state !== 'ready')
      t.regex(first.graph.file_problem ?? '', /covers revision/);
    const rebuilt = await waitGraph(d, 'hn', (g) => g.state === 'ready' && g.built_at !== builtAt);
    t.is(rebuilt.serving, 'hnsw');
    t.is(rebuilt.graph.added_rows_since, 0);
    // Switching the collection to exact drops the graph and its files.
    const patched = await call(d, 'PATCH', '/v1/collections/hn', { search: { index: 'exact' } });
    t.is(patched.json.collection.search_index.type, 'exact');
    t.is(patched.json.collection.search_index.status.serving, 'exact');
    t.throws(() => readFileSync(sidecar));
  } finally {
    await d.close();
  }
});

test('hnsw: searches are exact while the first graph is built', async (t) => {
  const d = await startTestDaemon({ toml: '[collections]\nindex_build_threads = 1' });
  try {
    t.is(
      (
        await call(d, 'POST', '/v1/collections', {
          id: 'big',
          name: 'Big',
          search: { index: 'hnsw', capacity_rows: 100000 },
        })
      ).status,
      201,
    );
    const vs = unitVectors(20000, 3);
    const r = await importLines(
      d,
      'big',
      ndjson(vs.map((v, i) => ({ id: `p${i}`, embeddings: [b64(v)] }))),
      `embedding_contract_id=${encodeURIComponent(await contractOf(d, 'big'))}&batch_size=20000`,
    );
    t.is(r.lines.at(-1)?.type, 'done');
    // The graph of the empty collection is stale at once; its replacement over 20000 rows is being built.
    const s = await waitGraph(
      d,
      'big',
      (g) => (g.state === 'building' || g.rebuilding) && g.progress?.total_rows === 20000,
      30_000,
    );
    t.is(s.serving, 'exact');
    const sys = (await call(d, 'GET', '/v1/system')).json.search.collections.find(
      (c: { collection_id: string }) => c.collection_id === 'big',
    );
    t.like(sys, { index_type: 'hnsw', index_status: { serving: 'exact' } });
  } finally {
    await d.close();
  }
});

test('a bulk import into an HNSW collection builds the graph once, after the import settled', async (t) => {
  const d = await startTestDaemon({ toml: '[collections]\ndefault_load_policy = "eager"\nindex_build_threads = 1' });
  try {
    const created = await call(d, 'POST', '/v1/collections', {
      id: 'imp',
      name: 'Import',
      search: { index: 'hnsw', capacity_rows: 100000, hnsw: { connectivity: 8 } },
    });
    t.is(created.status, 201);
    const contract = encodeURIComponent(await contractOf(d, 'imp'));
    // Three requests, as `vigil gallery import` splits a big file (the 5k / 40k / 100k, scaled down).
    const vs = unitVectors(12000, 11);
    let at = 0;
    for (const n of [1000, 3000, 8000]) {
      const persons = vs.slice(at, at + n).map((v, i) => ({ id: `p${at + i}`, embeddings: [b64(v)] }));
      at += n;
      const r = await importLines(d, 'imp', ndjson(persons), `embedding_contract_id=${contract}&batch_size=1000`);
      t.is(r.lines.at(-1)?.type, 'done');
    }
    const s = await waitGraph(d, 'imp', (g) => g.state === 'ready' && !g.rebuilding && g.rows === 12000, 120_000);
    t.is(s.serving, 'hnsw');
    t.is(s.graph.added_rows_since, 0);
    t.is(s.graph.builds_started, 1, 'one graph build for the whole import');
  } finally {
    await d.close();
  }
});

test('gallery import: SIGKILL mid-import loses no acknowledged batch and keeps batches whole', async (t) => {
  const dir = tempDir(t, 'vigil-import-kill-');
  const config = join(dir, 'server.toml');
  writeFileSync(
    config,
    [
      '[server]',
      'host = "127.0.0.1"',
      'port = 0',
      `data_dir = ${JSON.stringify(join(dir, 'data'))}`,
      `models_dir = ${JSON.stringify(await modelsDirWith('edge_s'))}`,
      'log_level = "info"',
      '[collections]',
      'default_load_policy = "eager"',
    ].join('\n'),
  );
  const auth = { Authorization: `Bearer ${TEST_KEY}` };
  const exited = (c: ChildProcess) =>
    c.exitCode !== null || c.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((res) => c.once('exit', () => res()));
  const ready = async (base: string) => {
    for (let i = 0; i < 600; i++) {
      if ((await fetch(`${base}/v1/health`).catch(() => null))?.status === 200) return;
      await sleep(100);
    }
    throw new Error('not ready');
  };
  let { child, url } = startChild(config);
  let base = await url;
  await ready(base);
  t.is(
    (
      await fetch(`${base}/v1/collections`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'k', name: 'K', search: { capacity_rows: 1000000 } }),
      })
    ).status,
    201,
  );
  const contract = (
    (await (await fetch(`${base}/v1/collections/k`, { headers: auth })).json()) as {
      collection: { embedding_contract_id: string };
    }
  ).collection.embedding_contract_id;
  const vs = unitVectors(2000, 5);
  // A slow producer: 100 persons per batch, one batch every 20 ms, killed after some acknowledgements.
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (let i = 0; i < 100000; i++) {
        controller.enqueue(
          new TextEncoder().encode(JSON.stringify({ id: `p${i}`, embeddings: [b64(vs[i % vs.length]!)] }) + '\n'),
        );
        if (i % 100 === 99) await sleep(20);
      }
      controller.close();
    },
  });
  const res = await fetch(
    `${base}/v1/collections/k/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=100`,
    {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/x-ndjson' },
      body,
      duplex: 'half',
    } as RequestInit,
  );
  t.is(res.status, 200);
  let acknowledged = 0;
  const reader = res.body!.getReader();
  let text = '';
  try {
    while (acknowledged < 500) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      for (const l of text.split('\n').slice(0, -1)) {
        const m = JSON.parse(l) as { type: string; persons: number };
        if (m.type === 'progress') acknowledged = Math.max(acknowledged, m.persons);
      }
      text = text.slice(text.lastIndexOf('\n') + 1);
    }
  } catch {
    /* the connection dies with the process */
  }
  child.kill('SIGKILL');
  await exited(child);
  t.true(acknowledged >= 500);

  ({ child, url } = startChild(config));
  base = await url;
  try {
    await ready(base);
    const c = (
      (await (await fetch(`${base}/v1/collections/k`, { headers: auth })).json()) as {
        collection: { person_count: number; face_count: number };
      }
    ).collection;
    t.true(c.person_count >= acknowledged, `${c.person_count} >= ${acknowledged}`);
    t.is(c.person_count % 100, 0, 'batches are whole');
    t.is(c.face_count, c.person_count);
    const last = await fetch(`${base}/v1/collections/k/persons/p${acknowledged - 1}`, { headers: auth });
    t.is(last.status, 200);
  } finally {
    child.kill('SIGTERM');
    await exited(child);
  }
});
