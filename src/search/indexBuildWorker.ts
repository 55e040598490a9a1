/**
 * Worker thread entry: builds one collection's HNSW graph from SQLite and saves it (hnswGraph.ts).
 * It opens its own read-only connection; one read transaction gives a consistent snapshot of the rows
 * and of the revision they make up, while the daemon keeps writing through WAL.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { newGraph, saveGraph, HNSW_QUANTIZATION, type HnswMeta, type HnswParams } from './hnswGraph.js';

export interface BuildJob {
  dbPath: string;
  dir: string;
  collectionId: string;
  dimension: number;
  params: HnswParams;
  threads: number;
}
export type BuildMessage =
  | { type: 'progress'; done: number; total: number }
  | { type: 'done'; meta: HnswMeta }
  | { type: 'error'; message: string };

const BATCH = 4096;
const job = workerData as BuildJob;
const post = (m: BuildMessage) => parentPort!.postMessage(m);

function build(): HnswMeta {
  const t0 = performance.now();
  const db = new Database(job.dbPath, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 15000');
    const graph = newGraph(job.dimension, job.params);
    const read = db.transaction(() => {
      const c = db
        .prepare('SELECT search_revision, face_count, index_epoch FROM collections WHERE id = ?')
        .get(job.collectionId) as { search_revision: number; face_count: number; index_epoch: string } | undefined;
      if (!c) throw new Error('the collection no longer exists');
      const maxKey = (
        db
          .prepare('SELECT coalesce(max(seq), 0) AS m FROM face_samples WHERE collection_id = ?')
          .get(job.collectionId) as { m: number }
      ).m;
      const keys = new BigUint64Array(BATCH);
      const vectors = new Float32Array(BATCH * job.dimension);
      let n = 0,
        done = 0;
      const flush = () => {
        if (n === 0) return;
        graph.add(keys.subarray(0, n), vectors.subarray(0, n * job.dimension), job.threads);
        done += n;
        n = 0;
        post({ type: 'progress', done, total: c.face_count });
      };
      const rows = db
        .prepare('SELECT seq, embedding FROM face_samples WHERE collection_id = ? ORDER BY seq')
        .raw()
        .iterate(job.collectionId) as Iterable<[number, Buffer]>;
      for (const [seq, blob] of rows) {
        keys[n] = BigInt(seq);
        // The embedding BLOB is little-endian float32 (collectionStore.embeddingToBlob).
        new Uint8Array(vectors.buffer, n * job.dimension * 4, blob.byteLength).set(blob);
        if (++n === BATCH) flush();
      }
      flush();
      return { revision: c.search_revision, epoch: c.index_epoch, maxKey, rows: done };
    });
    const r = read();
    return saveGraph(job.dir, graph, {
      format: 1,
      collection_id: job.collectionId,
      index_epoch: r.epoch,
      dimension: job.dimension,
      quantization: HNSW_QUANTIZATION,
      connectivity: job.params.connectivity,
      expansion_add: job.params.expansion_add,
      revision: r.revision,
      max_face_key: r.maxKey,
      rows: r.rows,
      build_seconds: Math.round((performance.now() - t0) / 10) / 100,
      built_at: new Date().toISOString(),
    });
  } finally {
    db.close();
  }
}

try {
  post({ type: 'done', meta: build() });
} catch (e) {
  post({ type: 'error', message: e instanceof Error ? e.message : String(e) });
}
