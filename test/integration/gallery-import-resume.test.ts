import test from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runGalleryImport } from '../../src/cli/gallery.js';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { b64, ndjson, postImport } from '../helpers/importRequest.js';
import { Sink } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';
import { unitVectors } from '../helpers/vectors.js';

/**
 * A bulk import cut off mid-way (the client gone after some batches committed) is re-run with
 * on_conflict=skip: persons already there with the file's faces are skipped and counted, the rest is
 * imported, and a person that differs from the file is reported with a typed problem, never overwritten.
 */
let d: TestDaemon;
test.before(async () => {
  d = await startTestDaemon();
});
test.after.always(async () => {
  await d?.close();
});

const PERSONS = 40;
const vectors = unitVectors(PERSONS * 2, 36);
const persons = Array.from({ length: PERSONS }, (_, i) => ({
  id: `p${String(i).padStart(3, '0')}`,
  name: `Person ${i}`,
  external_id: `ext-${i}`,
  embeddings: [b64(vectors[2 * i]!), b64(vectors[2 * i + 1]!)],
}));
/** The collection's import with its own contract and `query`. */
async function importFile(collection: string, body: string, query: string) {
  const contract = (await call(d, 'GET', `/v1/collections/${collection}`)).json.collection.embedding_contract_id;
  return postImport(d, collection, body, `embedding_contract_id=${encodeURIComponent(contract)}&${query}`);
}

/** Streams `lines` and drops the connection once `stopAfter` persons are acknowledged (a killed client). */
async function importCutOff(collection: string, lines: string[], stopAfter: number): Promise<number> {
  const contract = (await call(d, 'GET', `/v1/collections/${collection}`)).json.collection.embedding_contract_id;
  const abort = new AbortController();
  const enc = new TextEncoder();
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      // Everything up to the cut, then the stream stalls as a client that was killed mid-way.
      if (sent < stopAfter) controller.enqueue(enc.encode(lines[sent++]! + '\n'));
      else await new Promise((r) => setTimeout(r, 60_000));
    },
  });
  const res = await fetch(
    `${d.url}/v1/collections/${collection}/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=5`,
    {
      method: 'POST',
      headers: { ...d.auth, 'content-type': 'application/x-ndjson' },
      body,
      duplex: 'half',
      signal: abort.signal,
    } as RequestInit,
  );
  let committed = 0;
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  while (committed < stopAfter) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    for (const l of buf.split('\n').slice(0, -1)) committed = Math.max(committed, JSON.parse(l).persons ?? 0);
    buf = buf.slice(buf.lastIndexOf('\n') + 1);
  }
  abort.abort();
  await reader.cancel().catch(() => undefined);
  return committed;
}

test.serial(
  'an import cut off mid-way resumes with on_conflict=skip: existing persons skipped and counted, the rest imported, safe to re-run',
  async (t) => {
    t.is((await call(d, 'POST', '/v1/collections', { id: 'resume', name: 'resume' })).status, 201);
    const lines = persons.map((p) => JSON.stringify(p));
    const committed = await importCutOff('resume', lines, 15);
    t.is(committed, 15);
    const count = async () => (await call(d, 'GET', '/v1/collections/resume')).json.collection.person_count as number;
    t.is(await count(), 15);

    // Re-running the file as it is stops at once on line 1's person (the behaviour this mode exists for).
    const again = await importFile('resume', ndjson(persons), 'batch_size=10');
    t.is(again.status, 409);
    t.is(again.json!.error.code, 'person_exists');

    const resumed = await importFile('resume', ndjson(persons), 'batch_size=10&on_conflict=skip');
    t.is(resumed.status, 200);
    const done = resumed.lines.at(-1)!;
    t.is(done.type, 'done', JSON.stringify(resumed.lines));
    t.like(done, { persons: PERSONS - 15, skipped: 15, conflicts: 0, faces: (PERSONS - 15) * 2 });
    t.is(await count(), PERSONS);

    // Safe to re-run: nothing left to add, everything skipped.
    const twice = await importFile('resume', ndjson(persons), 'on_conflict=skip');
    t.like(twice.lines.at(-1), { type: 'done', persons: 0, faces: 0, skipped: PERSONS, conflicts: 0 });
    t.is(await count(), PERSONS);
    const p = (await call(d, 'GET', '/v1/collections/resume/persons/p020')).json.person;
    t.is(p.face_count, 2);
    t.is(p.name, 'Person 20');
  },
);

test.serial(
  'on_conflict=skip reports a person that differs from the file (other faces, a taken external_id) with a typed problem and leaves it as it is',
  async (t) => {
    t.is((await call(d, 'POST', '/v1/collections', { id: 'differs', name: 'differs' })).status, 201);
    const first = persons.slice(0, 4);
    t.like((await importFile('differs', ndjson(first), 'batch_size=2')).lines.at(-1), { type: 'done', persons: 4 });
    const other = unitVectors(1, 99)[0]!;
    const file = [
      first[0], // the same: skipped
      { ...first[1], embeddings: [first[1]!.embeddings[0], b64(other)] }, // other faces: a conflict
      { ...persons[10], external_id: first[2]!.external_id }, // a new id whose external_id p002 has: a conflict
      persons[11], // new: imported
    ];
    const r = await importFile('differs', ndjson(file), 'batch_size=2&on_conflict=skip');
    t.is(r.status, 200);
    const conflicts = r.lines.filter((l) => l.type === 'conflict');
    t.deepEqual(
      conflicts.map((c) => [c.person_id, c.error.code, c.error.details.reason]),
      [
        ['p001', 'import_person_conflict', 'faces_differ'],
        ['p010', 'import_person_conflict', 'external_id_taken'],
      ],
    );
    t.like(r.lines.at(-1), { type: 'done', persons: 1, faces: 2, skipped: 1, conflicts: 2 });
    // p001 keeps its own faces; p010 was not created; p011 was.
    const p1 = (await call(d, 'GET', '/v1/collections/differs/persons/p001')).json.person;
    t.is(p1.face_count, 2);
    t.is((await call(d, 'GET', '/v1/collections/differs/persons/p010')).status, 404);
    t.is((await call(d, 'GET', '/v1/collections/differs/persons/p011')).status, 200);

    // The CLI passes the mode on, sums the counts, and exits 1 when a person could not be imported as in the file.
    const dir = tempDir(t, 'vigil-import-resume-');
    const path = join(dir, 'file.ndjson');
    writeFileSync(path, ndjson(file));
    const out = new Sink();
    const args = { url: d.url, key: d.key, collection: 'differs', file: path, contractId: null, batchSize: 2 };
    t.is(await runGalleryImport({ ...args, onConflict: 'skip' }, out as never), 1);
    const last = JSON.parse(out.text.trim().split('\n').at(-1)!);
    t.like(last, { type: 'done', persons: 0, skipped: 2, conflicts: 2 });
    writeFileSync(path, ndjson(first));
    const clean = new Sink();
    t.is(await runGalleryImport({ ...args, onConflict: 'skip' }, clean as never), 0);
    t.like(JSON.parse(clean.text.trim().split('\n').at(-1)!), { type: 'done', persons: 0, skipped: 4, conflicts: 0 });
  },
);
