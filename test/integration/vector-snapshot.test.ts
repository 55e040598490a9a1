import test from 'ava';
import { copyFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { unitVectors } from '../helpers/vectors.js';
import { tempDir } from '../helpers/tempDir.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const b64 = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');

async function importPersons(d: TestDaemon, id: string, from: number, count: number) {
  const contract = (await call(d, 'GET', `/v1/collections/${id}`)).json.collection.embedding_contract_id as string;
  const vectors = unitVectors(count * 2, 1000 + from);
  const body =
    Array.from({ length: count }, (_, i) =>
      JSON.stringify({ id: `p${from + i}`, embeddings: [b64(vectors[2 * i]!), b64(vectors[2 * i + 1]!)] }),
    ).join('\n') + '\n';
  const res = await fetch(
    `${d.url}/v1/collections/${id}/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=100`,
    { method: 'POST', headers: { ...d.auth, 'content-type': 'application/x-ndjson' }, body },
  );
  const lines = (await res.text())
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  if (lines.at(-1)?.type !== 'done') throw new Error(JSON.stringify(lines.at(-1)));
  return vectors;
}

const snapshotState = async (d: TestDaemon, id: string) =>
  ((await call(d, 'GET', '/v1/system')).json.search.collections as Record<string, any>[]).find(
    (c) => c.collection_id === id,
  )!;

/** The best person of each query with its similarity and matched face (the identify path of monitors, on the collection index). */
function answers(d: TestDaemon, id: string, queries: Float32Array[]) {
  return d.runtime
    .inference!.search.identify(d.runtime.collections.getBound(id), queries, -1)
    .map((m) => m && { id: m.person.id, similarity: m.similarity, face: m.matched_face_id });
}

test('restart reads the vector snapshot at the committed revision; a stale file falls back to SQLite; damaged rows are caught and rebuilt', async (t) => {
  const dir = tempDir(t, 'vigil-snapshot-');
  const snap = join(dir, 'data', 'search-indexes', 'g.vectors');
  let d = await startTestDaemon({ dir });
  let queries: Float32Array[];
  let before: ReturnType<typeof answers>;
  try {
    t.is(
      (await call(d, 'POST', '/v1/collections', { id: 'g', name: 'g', search: { load_policy: 'eager' } })).status,
      201,
    );
    queries = (await importPersons(d, 'g', 0, 300)).filter((_, i) => i % 37 === 0);
    before = answers(d, 'g', queries);
    t.is(before[0]!.id, 'p0');
  } finally {
    await d.close();
  }
  t.true(existsSync(snap), 'shutdown writes the snapshot');

  d = await startTestDaemon({ dir });
  try {
    const s = await snapshotState(d, 'g');
    t.like(s, { state: 'ready', live_rows: 600, snapshot: { loaded_from: 'snapshot' } });
    t.deepEqual(answers(d, 'g', queries), before, 'the same answers as before the restart');
    for (let i = 0; i < 100 && (await snapshotState(d, 'g')).snapshot.verified === null; i++) await sleep(50);
    t.is((await snapshotState(d, 'g')).snapshot.verified, true, 'the rows checksum passes');
    copyFileSync(snap, `${snap}.old`);
    await importPersons(d, 'g', 300, 10);
  } finally {
    await d.close();
  }

  // The file of an older revision (as after a crash before the shutdown write): SQLite is used, with the reason.
  copyFileSync(`${snap}.old`, snap);
  d = await startTestDaemon({ dir });
  try {
    const s = await snapshotState(d, 'g');
    t.like(s, { state: 'ready', live_rows: 620, snapshot: { loaded_from: 'sqlite' } });
    t.regex(s.snapshot.problem, /revision/);
    t.deepEqual(answers(d, 'g', queries), before);
    for (let i = 0; i < 100 && (await snapshotState(d, 'g')).snapshot.revision === null; i++) await sleep(50);
    t.not((await snapshotState(d, 'g')).snapshot.revision, null, 'a fresh snapshot is written after the SQLite build');
  } finally {
    await d.close();
  }

  // A flipped byte among the rows: the index serves from the file at first, the checksum worker catches it, SQLite rebuilds it.
  const bytes = readFileSync(snap);
  bytes[bytes.length - 100] = bytes[bytes.length - 100]! ^ 0x40;
  writeFileSync(snap, bytes);
  d = await startTestDaemon({ dir });
  try {
    let s = await snapshotState(d, 'g');
    for (let i = 0; i < 200 && s.snapshot.loaded_from !== 'sqlite'; i++) {
      await sleep(50);
      s = await snapshotState(d, 'g');
    }
    t.like(s, { state: 'ready', live_rows: 620, snapshot: { loaded_from: 'sqlite' } });
    t.regex(s.snapshot.problem, /checksum/);
    t.deepEqual(answers(d, 'g', queries), before);
  } finally {
    await d.close();
  }
});
