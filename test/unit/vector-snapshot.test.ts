import test from 'ava';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SEARCH_PROFILES, type SearchProfile } from '../../src/contract/collections.js';
import { CollectionIndex, type IndexRow } from '../../src/search/collectionIndex.js';
import { profileCodec } from '../../src/search/profiles.js';
import {
  readSnapshot,
  snapshotPath,
  writeSnapshot,
  type SnapshotExpectation,
} from '../../src/search/vectorSnapshot.js';
import { unitVectors } from '../helpers/vectors.js';
import { fileTempDir } from '../helpers/tempDir.js';

const root = fileTempDir('vigil-snapshot-test-');
let n = 0;
const DIM = 64;

/** An index of `count` rows with keys 1..count (then some removed, so rows are not in key order), blocks of 100 rows. */
function indexOf(profile: SearchProfile, count: number): { index: CollectionIndex; rows: IndexRow[] } {
  const vectors = unitVectors(count, 7, DIM);
  const rows = vectors.map((vector, i) => ({ faceKey: i + 1, personKey: 1000 + Math.floor(i / 3), vector }));
  const index = new CollectionIndex(profileCodec(profile), DIM, count + 50, 0, 100);
  index.add(rows);
  index.remove([2, 50, 101]);
  return { index, rows: rows.filter((r) => ![2, 50, 101].includes(r.faceKey)) };
}

const expect = (id: string, profile: SearchProfile, rows: number, revision = 7): SnapshotExpectation => ({
  collectionId: id,
  epoch: 'e1',
  revision,
  profile,
  dimension: DIM,
  rows,
});

for (const profile of SEARCH_PROFILES) {
  test(`${profile}: a snapshot reads back into an index that answers exactly as the original`, async (t) => {
    const dir = join(root, `d${n++}`);
    mkdirSync(dir);
    const { index, rows } = indexOf(profile, 257);
    const h = await writeSnapshot(dir, index, { collection_id: 'c', index_epoch: 'e1', revision: 7 }, () => true);
    t.truthy(h);
    t.is(h!.rows, rows.length);
    // Other block sizes are not in the file: the reader uses the index default; search results must agree.
    const loaded = readSnapshot(dir, expect('c', profile, rows.length), profileCodec(profile), 400, 0);
    if (!('index' in loaded)) return t.fail(loaded.problem);
    t.is(loaded.index.size, rows.length);
    t.is(loaded.index.capacity, 400);
    for (const q of unitVectors(5, 99, DIM))
      t.deepEqual(loaded.index.exactSearchPersons(q, 10), index.exactSearchPersons(q, 10));
    for (const r of rows.slice(0, 20)) t.true(loaded.index.has(r.faceKey));
    t.false(loaded.index.has(2));
    // The loaded index keeps working: adds and removes.
    loaded.index.add([{ faceKey: 5000, personKey: 1, vector: rows[0]!.vector }]);
    loaded.index.remove([1]);
    t.is(loaded.index.size, rows.length);
  });
}

test('a snapshot of another revision, incarnation, row count or profile is refused with the reason', async (t) => {
  const dir = join(root, `d${n++}`);
  mkdirSync(dir);
  const { index, rows } = indexOf('fp32_v1', 120);
  t.truthy(await writeSnapshot(dir, index, { collection_id: 'c', index_epoch: 'e1', revision: 7 }, () => true));
  const codec = profileCodec('fp32_v1');
  const problem = (want: SnapshotExpectation) => {
    const r = readSnapshot(dir, want, codec, 400, 0);
    return 'problem' in r ? r.problem : null;
  };
  t.is(problem(expect('c', 'fp32_v1', rows.length)), null);
  t.regex(problem(expect('c', 'fp32_v1', rows.length, 8))!, /revision 7, the database 8/);
  t.regex(problem({ ...expect('c', 'fp32_v1', rows.length), epoch: 'e2' })!, /another incarnation/);
  t.regex(problem(expect('c', 'fp32_v1', rows.length + 1))!, /rows/);
  t.regex(problem(expect('c', 'fp16_v1', rows.length))!, /profile/);
  t.is(problem(expect('other', 'fp32_v1', rows.length)), 'no snapshot file');
});

test('a write the index changed under is dropped; damaged keys and a truncated file are refused', async (t) => {
  const dir = join(root, `d${n++}`);
  mkdirSync(dir);
  const { index, rows } = indexOf('fp16_v1', 120);
  t.is(await writeSnapshot(dir, index, { collection_id: 'c', index_epoch: 'e1', revision: 7 }, () => false), null);
  t.false(existsSync(snapshotPath(dir, 'c')));
  t.deepEqual(readdirSync(dir), [], 'no temp file left behind');
  t.truthy(await writeSnapshot(dir, index, { collection_id: 'c', index_epoch: 'e1', revision: 7 }, () => true));
  const path = snapshotPath(dir, 'c');
  const good = readFileSync(path);
  const bad = Buffer.from(good);
  bad[4096 + 8] = bad[4096 + 8]! ^ 0xff; // the second face key
  writeFileSync(path, bad);
  const codec = profileCodec('fp16_v1');
  const r1 = readSnapshot(dir, expect('c', 'fp16_v1', rows.length), codec, 400, 0);
  t.true('problem' in r1 && /checksum/.test(r1.problem));
  writeFileSync(path, good);
  truncateSync(path, good.length - 10);
  const r2 = readSnapshot(dir, expect('c', 'fp16_v1', rows.length), codec, 400, 0);
  t.true('problem' in r2 && /wrong size/.test(r2.problem));
});

for (const rowsMode of ['map', 'read'] as const) {
  test(`rows ${rowsMode}: changes to a loaded index stay in memory (the file is unchanged) and answer as the same changes to the original`, async (t) => {
    const dir = join(root, `d${n++}`);
    mkdirSync(dir);
    const { index, rows } = indexOf('fp32_v1', 300);
    t.truthy(await writeSnapshot(dir, index, { collection_id: 'c', index_epoch: 'e1', revision: 7 }, () => true));
    const before = readFileSync(snapshotPath(dir, 'c'));
    const loaded = readSnapshot(dir, expect('c', 'fp32_v1', rows.length), profileCodec('fp32_v1'), 400, 0, {
      rows: rowsMode,
      populate: rowsMode === 'map',
    });
    if (!('index' in loaded)) return t.fail(loaded.problem);
    // Removes move the last rows into the holes (writes into the mapped pages); adds grow the last block.
    const extra = unitVectors(30, 11, DIM).map((vector, i) => ({ faceKey: 9000 + i, personKey: 77, vector }));
    for (const ix of [index, loaded.index]) {
      ix.remove([1, 3, 150, 299]);
      ix.add(extra);
    }
    for (const q of unitVectors(5, 98, DIM))
      t.deepEqual(loaded.index.exactSearchPersons(q, 10), index.exactSearchPersons(q, 10));
    t.true(readFileSync(snapshotPath(dir, 'c')).equals(before));
    // The file can be replaced (rename) and removed while mapped: the mapped rows keep answering.
    rmSync(snapshotPath(dir, 'c'));
    for (const q of unitVectors(3, 97, DIM))
      t.deepEqual(loaded.index.exactSearchPersons(q, 10), index.exactSearchPersons(q, 10));
  });
}

test('a mapped snapshot indexes its keys in the background after the load; lookups before and after agree', async (t) => {
  const dir = join(root, `d${n++}`);
  mkdirSync(dir);
  const { index, rows } = indexOf('fp32_v1', 300);
  t.truthy(await writeSnapshot(dir, index, { collection_id: 'c', index_epoch: 'e1', revision: 7 }, () => true));
  const early = readSnapshot(dir, expect('c', 'fp32_v1', rows.length), profileCodec('fp32_v1'), 400, 0);
  const late = readSnapshot(dir, expect('c', 'fp32_v1', rows.length), profileCodec('fp32_v1'), 400, 0);
  if (!('index' in early) || !('index' in late)) return t.fail('not loaded');
  // `early` is asked at once (completes the map synchronously); `late` after the background slices ran.
  t.true(rows.every((r) => early.index.has(r.faceKey)));
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  t.true(rows.every((r) => late.index.has(r.faceKey)));
  t.false(late.index.has(2));
  t.is(late.index.remove([rows[0]!.faceKey, rows[100]!.faceKey]), 2);
  t.is(early.index.remove([rows[0]!.faceKey, rows[100]!.faceKey]), 2);
  for (const q of unitVectors(3, 96, DIM))
    t.deepEqual(late.index.exactSearchPersons(q, 10), early.index.exactSearchPersons(q, 10));
});

test('int8: the re-rank copy is in the file (read or mapped); a file without it is refused by an index that keeps one', async (t) => {
  const dir = join(root, `d${n++}`);
  mkdirSync(dir);
  const plain = profileCodec('int8_x736_v1', { rerank: false });
  const rows = unitVectors(120, 7, DIM).map((vector, i) => ({ faceKey: i + 1, personKey: i + 1, vector }));
  const old = new CollectionIndex(plain, DIM, 200, 0, 100);
  old.add(rows);
  await writeSnapshot(dir, old, { collection_id: 'c', index_epoch: 'e1', revision: 7 }, () => true);
  const refused = readSnapshot(dir, expect('c', 'int8_x736_v1', 120), profileCodec('int8_x736_v1'), 200, 0);
  t.deepEqual(refused, { problem: 'the re-rank copy differs' });
  t.true('index' in readSnapshot(dir, expect('c', 'int8_x736_v1', 120), plain, 200, 0));

  const { index } = indexOf('int8_x736_v1', 257);
  await writeSnapshot(dir, index, { collection_id: 'c', index_epoch: 'e1', revision: 7 }, () => true);
  for (const mode of ['read', 'map'] as const) {
    const want = expect('c', 'int8_x736_v1', index.size);
    const loaded = readSnapshot(dir, want, profileCodec('int8_x736_v1'), 400, 0, { rows: mode });
    if (!('index' in loaded)) return t.fail(loaded.problem);
    // One byte per value of int8 rows and two of the fp16 copy, plus 16 bytes of keys per row.
    t.is(loaded.index.bytes, index.size * (DIM * 3 + 16), mode);
    for (const q of unitVectors(5, 99, DIM))
      t.deepEqual(loaded.index.exactSearchPersons(q, 10), index.exactSearchPersons(q, 10), mode);
  }
});
