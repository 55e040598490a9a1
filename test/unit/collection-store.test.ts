import test from 'ava';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  CollectionStore,
  blobToEmbedding,
  embeddingToBlob,
  nowIso,
  type NewCollection,
  type NewFace,
} from '../../src/collections/collectionStore.js';
import { openDatabase, type OpenedDatabase } from '../../src/store/database.js';
import { fileTempDir } from '../helpers/tempDir.js';

const root = fileTempDir('vigil-cstore-test-');
const opened: OpenedDatabase[] = [];
test.after.always(() => {
  for (const o of opened) o.close();
});
let n = 0;
function fresh(): { store: CollectionStore; db: OpenedDatabase['db'] } {
  const o = openDatabase(join(root, `data-${n++}`));
  opened.push(o);
  return { store: new CollectionStore(o.db), db: o.db };
}

const T0 = '2020-01-02T03:04:05.678Z';
const DIM = 4;

function collection(id: string, over: Partial<NewCollection> = {}): NewCollection {
  return {
    id,
    name: `Collection ${id}`,
    description: 'test',
    default_threshold: 0.4,
    model_id: 'buffalo_l',
    model_digest: 'sha256:abc',
    embedding_dimension: DIM,
    preprocessing_version: 'arcface_112_v1',
    embedding_contract_id: 'contract-1',
    search_profile: 'fp32_v1',
    capacity_rows: 100,
    max_faces_per_person: 10,
    load_policy: 'eager',
    save_face_crops: false,
    metadata: { site: 'a' },
    created_at: T0,
    updated_at: T0,
    detection: {
      input_sizes: [
        [96, 96],
        [512, 512],
      ],
      threshold: 0.5,
      nms_threshold: 0.4,
      single_face_selection: 'largest',
    },
    ...over,
  };
}

const person = (id: string, over: { name?: string | null; external_id?: string | null } = {}) => ({
  id,
  name: over.name ?? null,
  external_id: over.external_id ?? null,
  metadata: {},
});

function newFace(id: string, personSeq: number, embedding: Float32Array = Float32Array.from([1, 0, 0, 0])): NewFace {
  return {
    id,
    personSeq,
    embedding,
    crop: null,
    createdAt: T0,
    face: {
      bounding_box: {
        pixels: { x: 1, y: 2, width: 30, height: 40 },
        normalized: { left: 0.01, top: 0.02, width: 0.3, height: 0.4 },
      },
      landmarks: [
        [1, 2],
        [3, 4],
        [5, 6],
        [7, 8],
        [9, 10],
      ],
      detection_score: 0.9,
      quality: { score: 0.8, sharpness: 0.7, brightness: 0.6, pose: 0.5 },
      model_id: 'buffalo_l',
      model_digest: 'sha256:abc',
      preprocessing_version: 'arcface_112_v1',
      embedding_source: 'server',
      embedding_contract_id: null,
    },
  };
}

/** better-sqlite3's SqliteError is not a native Error for ava's t.throws, so catch it by hand. */
function sqliteError(fn: () => unknown): { message?: string; code?: string } | null {
  try {
    fn();
  } catch (e) {
    return e as { message?: string; code?: string };
  }
  return null;
}

const counts = (store: CollectionStore, id: string) => {
  const c = store.getCollection(id);
  return c ? { persons: c.person_count, faces: c.face_count } : null;
};

test('migrations are idempotent: versions 1 and 2 recorded once across reopen', (t) => {
  const dir = join(root, `data-${n++}`);
  // Every numbered migration file (later issues add their own), each recorded once.
  const files = readdirSync(new URL('../../src/store/migrations/', import.meta.url)).filter((f) =>
    /^\d{4}_[a-z0-9_]+\.sql$/.test(f),
  );
  const first = openDatabase(dir);
  t.is(first.migrationCount, files.length);
  new CollectionStore(first.db).insertCollection(collection('keep'));
  first.close();
  const second = openDatabase(dir);
  opened.push(second);
  t.is(second.migrationCount, files.length);
  t.deepEqual(
    (
      second.db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as { name: string }[]
    ).slice(0, 2),
    [
      { version: 1, name: '0001_initial.sql' },
      { version: 2, name: '0002_collections.sql' },
    ],
  );
  const tables = (
    second.db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('collections', 'persons', 'face_samples') ORDER BY name",
      )
      .all() as { name: string }[]
  ).map((r) => r.name);
  t.deepEqual(tables, ['collections', 'face_samples', 'persons']);
  t.is(new CollectionStore(second.db).getCollection('keep')?.name, 'Collection keep', 'data survives reopening');
});

test('insertCollection round-trips every field and returns false for a duplicate id', (t) => {
  const { store } = fresh();
  t.true(store.insertCollection(collection('c1')));
  t.false(store.insertCollection(collection('c1', { name: 'other' })));
  const c = store.getCollection('c1');
  t.deepEqual(c, {
    id: 'c1',
    name: 'Collection c1',
    description: 'test',
    default_threshold: 0.4,
    model_id: 'buffalo_l',
    model_digest: 'sha256:abc',
    embedding_dimension: DIM,
    preprocessing_version: 'arcface_112_v1',
    embedding_contract_id: 'contract-1',
    search_profile: 'fp32_v1',
    capacity_rows: 100,
    max_faces_per_person: 10,
    load_policy: 'eager',
    search_revision: 0,
    save_face_crops: false,
    metadata: { site: 'a' },
    person_count: 0,
    face_count: 0,
    created_at: T0,
    updated_at: T0,
    detection: {
      input_sizes: [
        [96, 96],
        [512, 512],
      ],
      threshold: 0.5,
      nms_threshold: 0.4,
      single_face_selection: 'largest',
    },
    detection_revision: 1,
    search_index: { type: 'exact', hnsw: { connectivity: 16, expansion_add: 128, expansion_search: 64 } },
  });
  t.is(store.getCollection('missing'), null);
  t.true(
    store.insertCollection(
      collection('ch', {
        search_index: { type: 'hnsw', hnsw: { connectivity: 8, expansion_add: 64, expansion_search: 200 } },
      }),
    ),
  );
  t.deepEqual(store.getCollection('ch')?.search_index, {
    type: 'hnsw',
    hnsw: { connectivity: 8, expansion_add: 64, expansion_search: 200 },
  });
  t.regex(store.indexEpoch('ch') ?? '', /^[0-9a-f]{32}$/);
  t.not(store.indexEpoch('ch'), store.indexEpoch('c1'));
  store.deleteCollection('ch');
  t.true(store.insertCollection(collection('c0', { save_face_crops: true, search_profile: 'int8_x736_v1' })));
  t.is(store.getCollection('c0')?.save_face_crops, true);
  t.deepEqual(
    store.allCollections().map((x) => x.id),
    ['c0', 'c1'],
  );
  t.deepEqual(
    store.listCollections('c0', 10).map((x) => x.id),
    ['c1'],
  );
  t.deepEqual(
    store.listCollections(null, 1).map((x) => x.id),
    ['c0'],
  );
});

test('person_count and face_count follow inserts and deletes', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  store.insertCollection(collection('other'));
  const a = store.insertPerson('c', person('alice'), T0);
  const b = store.insertPerson('c', person('bob'), T0);
  store.insertPerson('other', person('alice'), T0);
  t.deepEqual(counts(store, 'c'), { persons: 2, faces: 0 });
  const f1 = store.insertFace('c', newFace('f1', a));
  store.insertFace('c', newFace('f2', a));
  store.insertFace('c', newFace('f3', b));
  t.deepEqual(counts(store, 'c'), { persons: 2, faces: 3 });
  t.deepEqual(counts(store, 'other'), { persons: 1, faces: 0 });
  t.is(store.getPerson('c', 'alice')?.person.face_count, 2);
  t.is(store.getPerson('c', 'bob')?.person.face_count, 1);
  t.true(store.deleteFace(f1));
  t.false(store.deleteFace(f1));
  t.deepEqual(counts(store, 'c'), { persons: 2, faces: 2 });
  t.is(store.getPerson('c', 'alice')?.person.face_count, 1);
  t.deepEqual(store.stats(), { collection_count: 2, person_count: 3, face_count: 2 });
});

test('deleting a person cascades to its faces and decrements face_count', (t) => {
  const { store, db } = fresh();
  store.insertCollection(collection('c'));
  const a = store.insertPerson('c', person('alice'), T0);
  const b = store.insertPerson('c', person('bob'), T0);
  const fa = [store.insertFace('c', newFace('fa1', a)), store.insertFace('c', newFace('fa2', a))];
  store.insertFace('c', newFace('fb1', b));
  t.deepEqual(store.deletePerson(a).sort(), fa.sort());
  t.is(store.getPerson('c', 'alice'), null);
  t.deepEqual(counts(store, 'c'), { persons: 1, faces: 1 });
  t.is((db.prepare('SELECT count(*) AS n FROM face_samples WHERE person_seq = ?').get(a) as { n: number }).n, 0);
  t.is(store.getPerson('c', 'bob')?.person.face_count, 1);
});

test('deleting a collection removes its persons and faces only', (t) => {
  const { store, db } = fresh();
  store.insertCollection(collection('c'));
  store.insertCollection(collection('keep'));
  const a = store.insertPerson('c', person('alice'), T0);
  store.insertFace('c', newFace('f1', a));
  const k = store.insertPerson('keep', person('kate'), T0);
  store.insertFace('keep', newFace('k1', k));
  t.true(store.deleteCollection('c'));
  t.false(store.deleteCollection('c'));
  t.is(store.getCollection('c'), null);
  const left = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  t.is(left('persons'), 1);
  t.is(left('face_samples'), 1);
  t.deepEqual(counts(store, 'keep'), { persons: 1, faces: 1 });
  t.deepEqual([...store.vectors('c')], []);
});

test('the capacity trigger aborts an insert beyond capacity_rows', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c', { capacity_rows: 2 }));
  const a = store.insertPerson('c', person('alice'), T0);
  store.insertFace('c', newFace('f1', a));
  store.insertFace('c', newFace('f2', a));
  const err = sqliteError(() => store.insertFace('c', newFace('f3', a)));
  t.regex(String(err?.message), /collection_capacity_exceeded/);
  t.deepEqual(counts(store, 'c'), { persons: 1, faces: 2 });
  t.is(store.getPerson('c', 'alice')?.person.face_count, 2);
  t.deepEqual(
    store.listFaces(a, null, 10).map((f) => f.id),
    ['f1', 'f2'],
  );
  // Deleting one frees a slot.
  store.deleteFace(store.getFace(a, 'f1')!.seq);
  store.insertFace('c', newFace('f3', a));
  t.deepEqual(counts(store, 'c'), { persons: 1, faces: 2 });
});

test('a transaction that hits the capacity trigger leaves nothing half-written', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c', { capacity_rows: 1 }));
  const a = store.insertPerson('c', person('alice'), T0);
  store.insertFace('c', newFace('f1', a));
  const err = sqliteError(() =>
    store.transaction(() => {
      const b = store.insertPerson('c', person('bob'), T0);
      store.bumpSearchRevision('c');
      store.insertFace('c', newFace('fb', b));
    }),
  );
  t.regex(String(err?.message), /collection_capacity_exceeded/);
  t.is(store.getPerson('c', 'bob'), null);
  const c = store.getCollection('c')!;
  t.is(c.person_count, 1);
  t.is(c.face_count, 1);
  t.is(c.search_revision, 0, 'the bump inside the transaction was rolled back');
  // The same with an application error thrown after the writes.
  t.throws(
    () =>
      store.transaction(() => {
        store.insertPerson('c', person('carol'), T0);
        throw new Error('boom');
      }),
    { message: 'boom' },
  );
  t.is(store.getPerson('c', 'carol'), null);
  t.is(store.getCollection('c')!.person_count, 1);
  // And a successful transaction commits and returns its value.
  t.is(
    store.transaction(() => store.insertPerson('c', person('dave'), T0) > 0),
    true,
  );
  t.is(store.getCollection('c')!.person_count, 2);
});

const IMPORT_BINDING = {
  embedding_dimension: DIM,
  model_id: 'buffalo_l',
  model_digest: "sha256:o'quote",
  preprocessing_version: 'arcface_112_v1',
  embedding_contract_id: 'contract-1',
};
const importPerson = (id: string, faces: number, external_id: string | null = null) => ({
  id,
  name: `N ${id}`,
  external_id,
  metadata: { k: id },
  embeddings: Array.from({ length: faces }, (_, i) => Float32Array.from([Math.cos(i), Math.sin(i), 0, 0])),
});
const faceRows = (db: OpenedDatabase['db'], personSeq: number) =>
  db
    .prepare(
      'SELECT seq, id, embedding, model_digest, embedding_source FROM face_samples WHERE person_seq = ? ORDER BY seq',
    )
    .all(personSeq) as { seq: number; id: string; embedding: Buffer; model_digest: string; embedding_source: string }[];

test('an import batch writes persons, faces and counters in bulk (multi-row statements, counters once) and the triggers count every other write as before', (t) => {
  const { store, db } = fresh();
  store.insertCollection(collection('c', { capacity_rows: 1000 }));
  store.insertCollection(collection('other'));
  // Sequence numbers already taken (and a gap from a delete) before the batch.
  const pre = store.insertPerson('c', person('pre'), T0);
  store.deleteFace(store.insertFace('c', newFace('gone', pre)));
  store.insertFace('c', newFace('kept', pre));
  let n = 0;
  const newId = () => `imp-${String(n++).padStart(4, '0')}`;
  // 150 persons x 3 faces: multi-row statements of 64 rows and single-row tails, for persons and for faces.
  const batch = Array.from({ length: 150 }, (_, i) => importPerson(`p${i}`, 3, i % 2 ? `x${i}` : null));
  const r = store.transaction(() => store.insertImportBatch({ id: 'c', ...IMPORT_BINDING }, batch, T0, newId));
  t.is(r.personSeqs.length, 150);
  t.is(r.faceSeqs.length, 450);
  t.is(r.searchRevision, 1);
  t.deepEqual(counts(store, 'c'), { persons: 151, faces: 451 });
  t.deepEqual(counts(store, 'other'), { persons: 0, faces: 0 });
  t.is(
    (db.prepare('SELECT count(*) AS n FROM import_counting').get() as { n: number }).n,
    0,
    'the trigger bypass is never committed',
  );
  for (const [i, p] of batch.entries()) {
    const stored = store.getPerson('c', p.id)!;
    t.is(stored.seq, r.personSeqs[i]!);
    t.is(stored.person.face_count, 3);
    t.is(stored.person.external_id, p.external_id);
    t.deepEqual(stored.person.metadata, { k: p.id });
    const rows = faceRows(db, stored.seq);
    t.deepEqual(
      rows.map((f) => f.seq),
      r.faceSeqs.slice(i * 3, i * 3 + 3),
      'each face has the sequence number returned for it',
    );
    t.deepEqual(
      rows.map((f) => f.id),
      [0, 1, 2].map((k) => `imp-${String(i * 3 + k).padStart(4, '0')}`),
    );
    rows.forEach((f, k) => t.deepEqual(blobToEmbedding(f.embedding), p.embeddings[k]));
    t.true(rows.every((f) => f.model_digest === "sha256:o'quote" && f.embedding_source === 'external_trusted'));
  }
  // Every other writer still counts through the triggers.
  const later = store.insertPerson('c', person('later'), T0);
  store.insertFace('c', newFace('l1', later));
  store.insertFace('other', newFace('o1', store.insertPerson('other', person('o'), T0)));
  t.deepEqual(counts(store, 'c'), { persons: 152, faces: 452 });
  t.deepEqual(counts(store, 'other'), { persons: 1, faces: 1 });
  t.is(store.getPerson('c', 'later')?.person.face_count, 1);
  store.deletePerson(r.personSeqs[0]!);
  t.deepEqual(counts(store, 'c'), { persons: 151, faces: 449 });
  const recount = db
    .prepare(
      "SELECT (SELECT count(*) FROM persons WHERE collection_id = 'c') AS persons, (SELECT count(*) FROM face_samples WHERE collection_id = 'c') AS faces",
    )
    .get();
  t.deepEqual(recount, counts(store, 'c'));
});

test('an import batch past capacity_rows is refused by its own counter check and leaves nothing written', (t) => {
  const { store, db } = fresh();
  store.insertCollection(collection('c', { capacity_rows: 10 }));
  store.insertFace('c', newFace('f1', store.insertPerson('c', person('alice'), T0)));
  let n = 0;
  const err = t.throws(() =>
    store.transaction(() =>
      store.insertImportBatch(
        { id: 'c', ...IMPORT_BINDING },
        [importPerson('a', 5), importPerson('b', 5)],
        T0,
        () => `i${n++}`,
      ),
    ),
  );
  t.is((err as { code?: string }).code, 'collection_capacity_exceeded');
  t.deepEqual(counts(store, 'c'), { persons: 1, faces: 1 });
  t.is(store.getPerson('c', 'a'), null);
  t.is((db.prepare('SELECT count(*) AS n FROM import_counting').get() as { n: number }).n, 0);
  // The triggers are back in force after the rolled-back batch; exactly the capacity fits.
  store.transaction(() =>
    store.insertImportBatch(
      { id: 'c', ...IMPORT_BINDING },
      [importPerson('a', 5), importPerson('b', 4)],
      T0,
      () => `j${n++}`,
    ),
  );
  t.deepEqual(counts(store, 'c'), { persons: 3, faces: 10 });
  t.regex(
    String(sqliteError(() => store.insertFace('c', newFace('f2', store.getPerson('c', 'alice')!.seq)))?.message),
    /collection_capacity_exceeded/,
  );
});

test('a bulk transaction commits with the automatic WAL checkpoint off and checkpoints the batch in a worker thread', async (t) => {
  const { store, db } = fresh();
  store.insertCollection(collection('c', { capacity_rows: 1000 }));
  const autoBefore = db.pragma('wal_autocheckpoint', { simple: true });
  let n = 0;
  store.bulkTransaction(() =>
    store.insertImportBatch(
      { id: 'c', ...IMPORT_BINDING },
      Array.from({ length: 100 }, (_, i) => importPerson(`p${i}`, 5)),
      T0,
      () => `b${n++}`,
    ),
  );
  t.is(db.pragma('wal_autocheckpoint', { simple: true }), autoBefore, 'the connection setting is back');
  await store.bulkReady();
  const cp = store.checkpointer!;
  t.is(cp.runs, 1);
  const last = cp.last as { busy: number; log: number; checkpointed: number };
  t.true(last.log > 0, JSON.stringify(last));
  t.is(last.checkpointed, last.log, 'the whole WAL reached the database file');
  t.deepEqual(counts(store, 'c'), { persons: 100, faces: 500 });
  // A second batch after the checkpoint: the WAL starts over (it holds only this batch's frames).
  store.bulkTransaction(() =>
    store.insertImportBatch({ id: 'c', ...IMPORT_BINDING }, [importPerson('q', 5)], T0, () => `b${n++}`),
  );
  await store.bulkReady();
  t.is(cp.runs, 2);
  t.true((cp.last as { log: number }).log < last.log, 'the WAL was restarted, not appended to');
});

test('external_id is unique per collection; null external ids may repeat', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  store.insertCollection(collection('d'));
  const a = store.insertPerson('c', person('a', { external_id: 'E1' }), T0);
  t.regex(
    String(sqliteError(() => store.insertPerson('c', person('b', { external_id: 'E1' }), T0))?.message),
    /UNIQUE constraint failed/,
  );
  t.notThrows(() => store.insertPerson('c', person('n1'), T0));
  t.notThrows(() => store.insertPerson('c', person('n2'), T0));
  t.notThrows(() => store.insertPerson('d', person('a', { external_id: 'E1' }), T0), 'another collection may reuse it');
  t.regex(
    String(sqliteError(() => store.insertPerson('c', person('a'), T0))?.message),
    /UNIQUE constraint failed/,
    'person id unique per collection',
  );
  t.true(store.externalIdTaken('c', 'E1'));
  t.false(store.externalIdTaken('c', 'E1', a), 'the holder itself is excepted');
  t.false(store.externalIdTaken('c', 'E2'));
  t.deepEqual(counts(store, 'c'), { persons: 3, faces: 0 });
});

test('listPersons: case-insensitive substring over id, name and external_id', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  store.insertPerson('c', person('p1', { name: 'Alice Smith' }), T0);
  store.insertPerson('c', person('p2', { name: 'Bob', external_id: 'EMP-SMITH-7' }), T0);
  store.insertPerson('c', person('Smithers'), T0);
  store.insertPerson('c', person('p4', { name: 'Carol' }), T0);
  const ids = (q: string | null, after: string | null = null, limit = 50) =>
    store.listPersons('c', after, limit, q).map((p) => p.id);
  t.deepEqual(ids('smith'), ['Smithers', 'p1', 'p2']);
  t.deepEqual(ids('SMITH'), ['Smithers', 'p1', 'p2']);
  t.deepEqual(ids('alice s'), ['p1']);
  t.deepEqual(ids('emp-'), ['p2']);
  t.deepEqual(ids('CAROL'), ['p4']);
  t.deepEqual(ids('nobody'), []);
  t.deepEqual(ids(null), ['Smithers', 'p1', 'p2', 'p4']);
  t.deepEqual(ids(''), ['Smithers', 'p1', 'p2', 'p4'], 'empty search is no filter');
  // Keyset pagination together with the filter.
  t.deepEqual(ids('smith', null, 2), ['Smithers', 'p1']);
  t.deepEqual(ids('smith', 'p1', 2), ['p2']);
  const full = store.listPersons('c', null, 1, 'alice')[0]!;
  t.deepEqual(full, {
    id: 'p1',
    name: 'Alice Smith',
    external_id: null,
    metadata: {},
    face_count: 0,
    created_at: T0,
    updated_at: T0,
  });
});

test('listPersons treats % and _ (and backslash) literally', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  store.insertPerson('c', person('p1', { name: '100% real' }), T0);
  store.insertPerson('c', person('p2', { name: '1000 real' }), T0);
  store.insertPerson('c', person('p3', { external_id: 'a_b' }), T0);
  store.insertPerson('c', person('p4', { external_id: 'axb' }), T0);
  store.insertPerson('c', person('p5', { name: 'back\\slash' }), T0);
  const ids = (q: string) => store.listPersons('c', null, 50, q).map((p) => p.id);
  t.deepEqual(ids('%'), ['p1']);
  t.deepEqual(ids('0%'), ['p1']);
  t.deepEqual(ids('_'), ['p3']);
  t.deepEqual(ids('a_b'), ['p3']);
  t.deepEqual(ids('\\'), ['p5']);
  t.deepEqual(ids('k\\s'), ['p5']);
});

test('listPersons finds a non-ASCII name case-insensitively (SQLite lower() folds ASCII only)', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  store.insertPerson('c', person('p1', { name: 'Émile Zola' }), T0);
  store.insertPerson('c', person('p2', { name: 'ÖZIL' }), T0);
  t.deepEqual(
    store.listPersons('c', null, 50, 'Émile').map((p) => p.id),
    ['p1'],
  );
  t.deepEqual(
    store.listPersons('c', null, 50, 'özil').map((p) => p.id),
    ['p2'],
  );
});

test('listFaces: keyset pagination by face id', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  const a = store.insertPerson('c', person('alice'), T0);
  const b = store.insertPerson('c', person('bob'), T0);
  // Inserted out of id order.
  for (const id of ['f-c', 'f-a', 'f-e', 'f-b', 'f-d']) store.insertFace('c', newFace(id, a));
  store.insertFace('c', newFace('f-0-bob', b));
  t.deepEqual(
    store.listFaces(a, null, 2).map((f) => f.id),
    ['f-a', 'f-b'],
  );
  t.deepEqual(
    store.listFaces(a, 'f-b', 2).map((f) => f.id),
    ['f-c', 'f-d'],
  );
  t.deepEqual(
    store.listFaces(a, 'f-d', 2).map((f) => f.id),
    ['f-e'],
  );
  t.deepEqual(store.listFaces(a, 'f-e', 2), []);
  t.deepEqual(
    store.listFaces(b, null, 10).map((f) => f.id),
    ['f-0-bob'],
  );
  const f = store.listFaces(a, null, 1)[0]!;
  t.deepEqual(f, {
    id: 'f-a',
    person_id: 'alice',
    bounding_box: {
      pixels: { x: 1, y: 2, width: 30, height: 40 },
      normalized: { left: 0.01, top: 0.02, width: 0.3, height: 0.4 },
    },
    landmarks: [
      [1, 2],
      [3, 4],
      [5, 6],
      [7, 8],
      [9, 10],
    ],
    detection_score: 0.9,
    quality: { score: 0.8, sharpness: 0.7, brightness: 0.6, pose: 0.5 },
    model_id: 'buffalo_l',
    model_digest: 'sha256:abc',
    preprocessing_version: 'arcface_112_v1',
    embedding_source: 'server',
    embedding_contract_id: null,
    has_crop: false,
    created_at: T0,
  });
  t.is(store.getFace(a, 'f-c')?.face.id, 'f-c');
  t.is(store.getFace(b, 'f-c'), null, 'a face is only found under its own person');
});

test('crops, liveness and external embeddings are stored', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  const a = store.insertPerson('c', person('alice'), T0);
  const nf = newFace('f1', a);
  nf.crop = Buffer.from([0xff, 0xd8, 0xff, 1, 2, 3]);
  nf.face = {
    ...nf.face,
    landmarks: null,
    embedding_source: 'external_trusted',
    embedding_contract_id: 'contract-1',
    liveness: { status: 'ok', is_live: true, live_score: 0.97 },
  };
  const seq = store.insertFace('c', nf);
  const got = store.getFace(a, 'f1')!;
  t.is(got.seq, seq);
  t.is(got.face.has_crop, true);
  t.is(got.face.landmarks, null);
  t.is(got.face.embedding_source, 'external_trusted');
  t.is(got.face.embedding_contract_id, 'contract-1');
  t.deepEqual(got.face.liveness, { status: 'ok', is_live: true, live_score: 0.97 });
  t.deepEqual(store.faceCrop(seq), nf.crop);
  t.deepEqual(store.faceIdsBySeq([seq, 99999]), new Map([[seq, 'f1']]));
  const plain = store.insertFace('c', newFace('f2', a));
  t.is(store.faceCrop(plain), null);
  t.false('liveness' in store.getFace(a, 'f2')!.face);
});

test('embeddings round-trip exactly through the blob encoding and the database', (t) => {
  const special = Float32Array.from([
    0.1,
    -0,
    1e-45,
    -3.4028234663852886e38,
    1 / 3,
    -0.7071067690849304,
    2 ** -126,
    123.456,
  ]);
  const back = blobToEmbedding(embeddingToBlob(special));
  t.is(back.length, special.length);
  t.deepEqual(Buffer.from(back.buffer), Buffer.from(special.buffer), 'bit-exact, -0 included');
  t.true(Object.is(back[1], -0));
  // A view into a bigger buffer: only its own bytes are written.
  const big = Float32Array.from([9, 9, 1, 2, 3, 4, 9]);
  const view = big.subarray(2, 6);
  t.is(embeddingToBlob(view).length, 16);
  t.deepEqual(Array.from(blobToEmbedding(embeddingToBlob(view))), [1, 2, 3, 4]);
  // A blob that is a slice of a larger Buffer (as pooled buffers are).
  const pooled = Buffer.concat([Buffer.from([7, 7, 7]), embeddingToBlob(Float32Array.from([5, 6]))]).subarray(3);
  t.deepEqual(Array.from(blobToEmbedding(pooled)), [5, 6]);

  const { store, db } = fresh();
  store.insertCollection(collection('c', { embedding_dimension: special.length }));
  const a = store.insertPerson('c', person('alice'), T0);
  store.insertFace('c', newFace('f1', a, special));
  const stored = store.personEmbeddings(a);
  t.is(stored.length, 1);
  t.deepEqual(Buffer.from(stored[0]!.buffer), Buffer.from(special.buffer));
  t.is((db.prepare('SELECT embedding_dimension AS d FROM face_samples').get() as { d: number }).d, special.length);
});

test('vectors() yields every row of the collection with face and person keys, in seq order', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  store.insertCollection(collection('d'));
  const a = store.insertPerson('c', person('alice'), T0);
  const b = store.insertPerson('c', person('bob'), T0);
  const other = store.insertPerson('d', person('x'), T0);
  const v = (i: number) => Float32Array.from([i, i + 0.5, -i, 1 / (i + 1)]);
  const f1 = store.insertFace('c', newFace('f1', a, v(1)));
  const f2 = store.insertFace('c', newFace('f2', b, v(2)));
  store.insertFace('d', newFace('fx', other, v(9)));
  const f3 = store.insertFace('c', newFace('f3', a, v(3)));
  const rows = [...store.vectors('c')];
  t.deepEqual(
    rows.map((r) => [r.faceKey, r.personKey]),
    [
      [f1, a],
      [f2, b],
      [f3, a],
    ],
  );
  t.deepEqual(
    rows.map((r) => Array.from(r.vector)),
    [v(1), v(2), v(3)].map((x) => Array.from(x)),
  );
  t.true(rows[0]!.vector instanceof Float32Array);
  t.is([...store.vectors('d')].length, 1);
  // After a person delete the rows go with it.
  store.deletePerson(a);
  t.deepEqual(
    [...store.vectors('c')].map((r) => r.faceKey),
    [f2],
  );
});

test('bumpSearchRevision increments and refreshes updated_at (ISO-8601 with ms and Z)', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  t.is(store.bumpSearchRevision('c'), 1);
  const c1 = store.getCollection('c')!;
  t.is(c1.search_revision, 1);
  t.not(c1.updated_at, T0);
  t.is(c1.created_at, T0, 'created_at untouched');
  t.regex(c1.updated_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.true(Math.abs(Date.parse(c1.updated_at) - Date.now()) < 60_000);
  t.is(store.bumpSearchRevision('c'), 2);
  t.is(store.getCollection('c')!.search_revision, 2);
  t.regex(nowIso(), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
});

test('updateCollection and updatePerson write columns and bump updated_at', (t) => {
  const { store } = fresh();
  store.insertCollection(collection('c'));
  store.updateCollection('c', { name: 'Renamed', capacity_rows: 5 });
  const c = store.getCollection('c')!;
  t.is(c.name, 'Renamed');
  t.is(c.capacity_rows, 5);
  t.not(c.updated_at, T0);
  store.updateCollection('c', {});
  t.is(store.getCollection('c')!.updated_at, c.updated_at, 'no columns, no write');
  const seq = store.insertPerson('c', person('alice', { name: 'A' }), T0);
  store.updatePerson(seq, { name: null, external_id: 'X' });
  const p = store.getPerson('c', 'alice')!.person;
  t.is(p.name, null);
  t.is(p.external_id, 'X');
  t.not(p.updated_at, T0);
  t.is(p.created_at, T0);
  const map = store.personsBySeq([seq, 12345]);
  t.deepEqual([...map.keys()], [seq]);
  t.is(map.get(seq)!.person.id, 'alice');
});
