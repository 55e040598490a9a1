import test from 'ava';
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bestPerPerson, CollectionIndex, type IndexRow } from '../../src/search/collectionIndex.js';
import { graphProblem, graphTopRows, HNSW_QUANTIZATION, newGraph, saveGraph, viewGraph, type HnswMeta } from '../../src/search/hnswGraph.js';
import { profileCodec } from '../../src/search/profiles.js';
import { unitVectors } from '../helpers/vectors.js';
import { tempDir } from '../helpers/tempDir.js';

const DIM = 32;
function rows(n: number, seed: number, firstKey: number): IndexRow[] {
  return unitVectors(n, seed, DIM).map((vector, i) => ({ faceKey: firstKey + i, personKey: Math.floor((firstKey + i) / 3), vector }));
}

test('graph search: re-ranked candidates equal the exact answer on these rows, deletes are never returned, the delta is searched', (t) => {
  const codec = profileCodec('fp32_v1');
  const base = rows(2000, 1, 1);
  const index = new CollectionIndex(codec, DIM, 10_000);
  index.add(base);
  const graph = newGraph(DIM, { connectivity: 16, expansion_add: 128, expansion_search: 256 });
  graph.add(BigUint64Array.from(base, (r) => BigInt(r.faceKey)), Float32Array.from(base.flatMap((r) => [...r.vector])), 1);
  const dir = tempDir(t, 'vigil-graph-');
  const meta = saveGraph(dir, graph, { format: 1, collection_id: 'c', index_epoch: 'e1', dimension: DIM, quantization: HNSW_QUANTIZATION, connectivity: 16, expansion_add: 128, revision: 5, max_face_key: 2000, rows: 2000, build_seconds: 0, built_at: new Date().toISOString() });
  const want = { collectionId: 'c', epoch: 'e1', dimension: DIM, params: { connectivity: 16, expansion_add: 128, expansion_search: 256 }, revision: 7 };
  const loaded = viewGraph(dir, want);
  if (!('graph' in loaded)) return t.fail(loaded.problem);
  t.is(loaded.meta.rows, 2000);

  // Deleted after the build: 100 rows; added after: 50 rows (keys above max_face_key) in the delta.
  const deleted = base.filter((r) => r.faceKey % 20 === 0).map((r) => r.faceKey);
  index.remove(deleted);
  const added = rows(50, 2, 3001);
  index.add(added);
  const delta = index.subset((k) => k > meta.max_face_key);
  t.is(delta.size, 50);
  const view = { graph: loaded.graph, delta, deleted: deleted.length };
  let agree = 0;
  const queries = [...base.slice(0, 40), ...added.slice(0, 10)];
  for (const r of queries) {
    const q = r.vector;
    const got = graphTopRows(index, view, q, 64);
    t.false(got.some((h) => deleted.includes(h.faceKey)), 'a deleted face is never returned');
    const exact = index.exactSearchPersons(q, 5);
    const approx = bestPerPerson(got, 5);
    if (JSON.stringify(approx) === JSON.stringify(exact)) agree++;
    if (!deleted.includes(r.faceKey)) t.is(got[0]!.faceKey, r.faceKey, 'a stored face finds itself first (graph or delta)');
  }
  t.true(agree >= queries.length - 1, `${agree}/${queries.length} grouped answers equal the exact ones`);
});

test('graphProblem: another incarnation, other parameters, a later revision than the database', (t) => {
  const meta: HnswMeta = { format: 1, collection_id: 'c', index_epoch: 'e1', dimension: 8, quantization: 'i8', connectivity: 16, expansion_add: 128, revision: 10, max_face_key: 5, rows: 3, file_bytes: 1, build_seconds: 0, built_at: '' };
  const want = { collectionId: 'c', epoch: 'e1', dimension: 8, params: { connectivity: 16, expansion_add: 128, expansion_search: 64 }, revision: 10 };
  t.is(graphProblem(meta, want), null);
  t.is(graphProblem(meta, { ...want, revision: 12 }), null, 'an older file still serves (later changes are the delta)');
  t.regex(graphProblem(meta, { ...want, epoch: 'e2' })!, /incarnation/);
  t.regex(graphProblem(meta, { ...want, params: { ...want.params, connectivity: 8 } })!, /parameters/);
  t.regex(graphProblem(meta, { ...want, revision: 9 })!, /covers revision 10/);
});

test('viewGraph refuses a truncated file and a missing sidecar', (t) => {
  const dir = tempDir(t, 'vigil-graph-');
  const graph = newGraph(8, { connectivity: 16, expansion_add: 64, expansion_search: 64 });
  graph.add(BigUint64Array.of(1n, 2n), Float32Array.from({ length: 16 }, (_, i) => (i % 8 === 0 ? 1 : 0.01)), 1);
  const want = { collectionId: 'c', epoch: 'e', dimension: 8, params: { connectivity: 16, expansion_add: 64, expansion_search: 64 }, revision: 1 };
  t.like(viewGraph(dir, want), { problem: 'no graph file' });
  saveGraph(dir, graph, { format: 1, collection_id: 'c', index_epoch: 'e', dimension: 8, quantization: 'i8', connectivity: 16, expansion_add: 64, revision: 1, max_face_key: 2, rows: 2, build_seconds: 0, built_at: '' });
  t.true('graph' in viewGraph(dir, want));
  const file = join(dir, 'c.hnsw');
  writeFileSync(file, readFileSync(file).subarray(0, 100));
  t.like(viewGraph(dir, want), { problem: 'the graph file has the wrong size' });
});
