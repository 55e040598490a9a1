import test from 'ava';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { call, startTestDaemon, TEST_KEY, type TestDaemon } from '../helpers/daemon.js';
import { startDaemonProcess } from '../helpers/daemonProcess.js';
import { tempDir } from '../helpers/tempDir.js';
import { unitVectors } from '../helpers/vectors.js';

/**
 * Deleting a large collection: answered at once, its rows deleted in the background in short batches (resumed
 * after a crash), and the file and its WAL shrink afterwards (incremental vacuum, TRUNCATE checkpoint).
 */
const TOML = '[collections]\nbackground_delete_min_rows = 1000';
const PERSONS = 12_000;
const b64 = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Creates `id` and imports `persons` persons of one face each over HTTP. */
async function fill(base: string, id: string, persons: number): Promise<void> {
  const headers = { Authorization: `Bearer ${TEST_KEY}` };
  const created = await fetch(`${base}/v1/collections`, {
    method: 'POST',
    headers: { ...headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({ id, name: id, search: { capacity_rows: persons } }),
  });
  if (created.status !== 201) throw new Error(`create ${id}: ${created.status} ${await created.text()}`);
  const contract = ((await created.json()) as { collection: { embedding_contract_id: string } }).collection
    .embedding_contract_id;
  const body = unitVectors(persons, 5)
    .map((v, i) => JSON.stringify({ id: `p${i}`, embeddings: [b64(v)] }))
    .join('\n');
  const res = await fetch(
    `${base}/v1/collections/${id}/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=4000`,
    { method: 'POST', headers: { ...headers, 'Content-Type': 'application/x-ndjson' }, body: `${body}\n` },
  );
  const lines = (await res.text()).trim().split('\n');
  if (!lines.at(-1)?.includes('"done"')) throw new Error(`import ${id}: ${lines.at(-1)}`);
}

const rowsOf = (db: Database.Database, id: string) =>
  (
    db
      .prepare(
        'SELECT (SELECT count(*) FROM face_samples WHERE collection_id = ?) + (SELECT count(*) FROM persons WHERE collection_id = ?) AS n',
      )
      .get(id, id) as { n: number }
  ).n;

async function metric(d: TestDaemon, name: string): Promise<number> {
  const text = await (await fetch(`${d.url}/metrics`, { headers: d.auth })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`no ${name} in /metrics`);
  return Number(line.split(' ')[1]);
}

test('a large collection delete answers before its rows are gone; then the file and the WAL shrink', async (t) => {
  const dir = tempDir(t, 'vigil-purge-');
  const d = await startTestDaemon({ dir, toml: TOML });
  try {
    await fill(d.url, 'big', PERSONS);
    await fill(d.url, 'keep', 50);
    const full = await metric(d, 'vigil_database_bytes');
    t.true(full > PERSONS * 2048, `${full} bytes for ${PERSONS} faces`);

    t.is((await call(d, 'DELETE', '/v1/collections/big?force=true')).status, 204);
    // The answer came first: the rows are still there, the collection is not.
    t.true(rowsOf(d.runtime.db.db, 'big') > 0, 'rows left for the background purge');
    t.is((await call(d, 'GET', '/v1/collections/big')).status, 404);
    t.deepEqual(
      (await call(d, 'GET', '/v1/collections')).json.collections.map((c: { id: string }) => c.id),
      ['keep'],
    );
    t.like((await call(d, 'GET', '/v1/system')).json.stats, { person_count: 50, face_count: 50 });

    for (let i = 0; i < 600 && d.runtime.purges!.pending().length > 0; i++) await sleep(100);
    t.deepEqual(d.runtime.purges!.pending(), []);
    t.is(rowsOf(d.runtime.db.db, 'big'), 0);
    await d.runtime.db.space.idle();
    for (let i = 0; i < 100 && (await metric(d, 'vigil_database_wal_bytes')) > 0; i++) await sleep(100);
    const after = {
      file: await metric(d, 'vigil_database_bytes'),
      wal: await metric(d, 'vigil_database_wal_bytes'),
      free: await metric(d, 'vigil_database_freelist_bytes'),
    };
    t.true(after.file < full / 3, `the file shrank: ${full} -> ${after.file}`);
    t.is(after.wal, 0, 'the WAL is empty again');
    t.true(after.free < 2 * 1024 * 1024, `${after.free} free bytes left`);

    // The id is free again; the other collection kept everything.
    t.is((await call(d, 'POST', '/v1/collections', { id: 'big', name: 'again' })).status, 201);
    t.is((await call(d, 'GET', '/v1/collections/big')).json.collection.face_count, 0);
    t.is((await call(d, 'GET', '/v1/collections/keep')).json.collection.face_count, 50);
  } finally {
    await d.close();
  }
});

test('a daemon killed while it deletes a collection in the background finishes the delete after its restart', async (t) => {
  const proc = await startDaemonProcess({ toml: TOML, logLevel: 'info' });
  const headers = { Authorization: `Bearer ${TEST_KEY}` };
  await fill(proc.url, 'big', PERSONS);
  const res = await fetch(`${proc.url}/v1/collections/big?force=true`, { method: 'DELETE', headers });
  t.is(res.status, 204);
  await proc.kill();
  const path = join(proc.dataDir, 'vigil.db');
  let raw = new Database(path, { readonly: true });
  const left = rowsOf(raw, 'big');
  const recorded = raw.prepare('SELECT collection_id FROM collection_purges').all();
  raw.close();
  t.true(left > 0, 'killed mid-way');
  t.deepEqual(recorded, [{ collection_id: 'big' }]);

  await proc.start();
  let pending: unknown[] = [{}];
  for (let i = 0; i < 600 && pending.length > 0; i++) {
    const sys = (await (await fetch(`${proc.url}/v1/system`, { headers })).json()) as {
      database: { purges_pending: unknown[] };
    };
    pending = sys.database.purges_pending;
    if (pending.length) await sleep(100);
  }
  t.deepEqual(pending, []);
  t.true(proc.output().includes('the rows of a deleted collection are gone'));
  await proc.stop();
  raw = new Database(path, { readonly: true });
  t.is(rowsOf(raw, 'big'), 0);
  t.is((raw.prepare('SELECT count(*) AS n FROM collection_purges').get() as { n: number }).n, 0);
  raw.close();
});
