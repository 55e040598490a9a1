/**
 * Storage bench (issue 36 items 8 and 9): what a start pays for the integrity check, and what deleting a large
 * collection costs, on one real database file of `--faces` 512-d faces per collection (one face per person).
 *
 * - start: `PRAGMA quick_check` (what every start used to wait for) against an open that finds the clean-shutdown
 *   marker (what a start after an orderly stop does now);
 * - delete: the one-transaction cascade (before; still used for small collections) against the background delete
 *   (the answer: one short transaction; then the purge in batches, with the event loop's longest stall while it
 *   runs), the WAL after each, and the file before / after the deletes and after the incremental vacuum;
 * - the VACUUM that converts an old file, in MB/s of live data.
 * Usage: npx tsx bench/storage.ts [--faces 50000] [--keep DIR]. Writes bench/results/storage.json.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CollectionPurger } from '../src/collections/collectionPurger.js';
import { CollectionStore, type NewCollection } from '../src/collections/collectionStore.js';
import { openDatabase, quickCheck } from '../src/store/database.js';
import { compactNow } from '../src/store/spaceReclaimer.js';
import { seededRandom } from './seededRandom.js';

const { values } = parseArgs({ options: { faces: { type: 'string', default: '50000' }, keep: { type: 'string' } } });
const N = Number(values.faces);
const DIM = 512;
const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const log = (s: string) => process.stdout.write(`${s}\n`);
const mb = (b: number) => Math.round(b / 1e5) / 10;
const ms = (v: number) => Math.round(v * 10) / 10;
const fileBytes = (p: string) => {
  try {
    return statSync(p).size;
  } catch {
    return 0;
  }
};

const collection = (id: string): NewCollection => ({
  id,
  name: id,
  description: '',
  default_threshold: 0.4,
  model_id: 'bench',
  model_digest: 'sha256:bench',
  embedding_dimension: DIM,
  preprocessing_version: 'arcface_112_v1',
  embedding_contract_id: 'bench',
  search_profile: 'fp32_v1',
  capacity_rows: N,
  max_faces_per_person: 1,
  load_policy: 'lazy',
  save_face_crops: false,
  metadata: {},
  created_at: new Date().toISOString(),
  updated_at: new Date().toISOString(),
  detection: { input_sizes: [[640, 640]], threshold: 0.5, nms_threshold: 0.4, single_face_selection: 'largest' },
});

/** What an import batch needs of its collection. */
const batchOf = (c: NewCollection) => ({
  id: c.id as string,
  embedding_dimension: DIM,
  model_id: 'bench',
  model_digest: 'sha256:bench',
  preprocessing_version: 'arcface_112_v1',
  embedding_contract_id: 'bench',
});

const dir = values.keep ?? mkdtempSync(join(tmpdir(), 'vigil-bench-storage-'));
mkdirSync(dir, { recursive: true });
const path = join(dir, 'vigil.db');
try {
  let opened = openDatabase(dir);
  let store = new CollectionStore(opened.db);
  const rand = seededRandom(N);
  let id = 0;
  /** Creates collection `c` with N persons of one random face each, in import batches of 5,000. */
  const fill = async (c: string) => {
    store.insertCollection(collection(c));
    const meta = batchOf(collection(c));
    for (let from = 0; from < N; from += 5000) {
      const persons = Array.from({ length: Math.min(5000, N - from) }, (_, i) => ({
        id: `p${from + i}`,
        name: null,
        external_id: null,
        metadata: {},
        embeddings: [Float32Array.from({ length: DIM }, () => rand() - 0.5)],
      }));
      store.bulkTransaction(() => store.insertImportBatch(meta, persons, new Date().toISOString(), () => `f${++id}`));
      await store.bulkReady();
    }
  };
  await fill('cascade');
  await fill('background');
  opened.db.pragma('wal_checkpoint(TRUNCATE)');
  const full = fileBytes(path);
  log(`${2 * N} faces in two collections: ${mb(full)} MB`);

  // Start: quick_check against the clean-shutdown marker.
  let t = performance.now();
  quickCheck(opened.db);
  const quickCheckMs = performance.now() - t;
  opened.close();
  t = performance.now();
  opened = openDatabase(dir, undefined, { integrity: 'background' });
  const markerOpenMs = performance.now() - t;
  log(
    `start: quick_check ${ms(quickCheckMs)} ms; open proven by the clean-shutdown marker ${ms(markerOpenMs)} ms (${opened.integrityProof})`,
  );
  store = new CollectionStore(opened.db);

  // Delete: the cascade in one transaction.
  t = performance.now();
  store.transaction(() => store.deleteCollection('cascade'));
  const cascadeMs = performance.now() - t;
  const cascadeWal = fileBytes(`${path}-wal`);
  opened.db.pragma('wal_checkpoint(TRUNCATE)');
  const afterCascade = fileBytes(path);
  log(
    `cascade delete of ${N} faces + persons: ${ms(cascadeMs)} ms in one transaction, WAL ${mb(cascadeWal)} MB, file ${mb(afterCascade)} MB`,
  );

  // Delete: in the background.
  t = performance.now();
  store.detachCollection('background', () => undefined);
  const answerMs = performance.now() - t;
  const purger = new CollectionPurger(store, null, null);
  const stalls = monitorEventLoopDelay({ resolution: 1 });
  stalls.enable();
  t = performance.now();
  await purger.wake();
  const purgeMs = performance.now() - t;
  stalls.disable();
  const purgeWal = fileBytes(`${path}-wal`);
  log(
    `background delete: answered in ${ms(answerMs)} ms; purge ${ms(purgeMs)} ms (longest event-loop stall ${ms(stalls.max / 1e6)} ms, longest batch ${ms(purger.longestBatchMs)} ms), WAL ${mb(purgeWal)} MB`,
  );

  t = performance.now();
  await opened.space.request();
  const reclaimMs = performance.now() - t;
  const reclaimed = { file: fileBytes(path), wal: fileBytes(`${path}-wal`) };
  log(
    `incremental vacuum: ${ms(reclaimMs)} ms in ${opened.space.steps} steps (longest ${ms(opened.space.longestStepMs)} ms); file ${mb(full)} -> ${mb(reclaimed.file)} MB, WAL ${mb(reclaimed.wal)} MB`,
  );

  // The conversion of an old file: VACUUM of the live data (refilled to one collection's size).
  await fill('refill');
  opened.db.pragma(`temp_store_directory = '${dir}'`);
  const compacted = compactNow(opened.db, path);
  const vacuumMbPerS = Math.round(compacted.bytes_after / 1e6 / (compacted.ms / 1000));
  log(`VACUUM of ${mb(compacted.bytes_after)} MB live: ${compacted.ms} ms (${vacuumMbPerS} MB/s)`);
  opened.close();

  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(
    join(REPO, 'bench/results/storage.json'),
    JSON.stringify(
      {
        bench: 'storage',
        at: new Date().toISOString(),
        load_average: loadavg(),
        faces_per_collection: N,
        file_bytes_full: full,
        start: { quick_check_ms: ms(quickCheckMs), clean_marker_open_ms: ms(markerOpenMs) },
        cascade: { answer_ms: ms(cascadeMs), wal_bytes: cascadeWal, file_bytes_after: afterCascade },
        background: {
          answer_ms: ms(answerMs),
          purge_ms: ms(purgeMs),
          longest_stall_ms: ms(stalls.max / 1e6),
          longest_batch_ms: ms(purger.longestBatchMs),
          wal_bytes: purgeWal,
        },
        reclaim: {
          ms: ms(reclaimMs),
          steps: opened.space.steps,
          longest_step_ms: ms(opened.space.longestStepMs),
          file_bytes: reclaimed.file,
          wal_bytes: reclaimed.wal,
        },
        vacuum: { ms: compacted.ms, live_bytes: compacted.bytes_after, mb_per_s: vacuumMbPerS },
      },
      null,
      2,
    ),
  );
} finally {
  if (!values.keep) rmSync(dir, { recursive: true, force: true });
}
