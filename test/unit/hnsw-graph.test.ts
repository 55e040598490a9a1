import test from 'ava';
import { renameSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bestPerPerson, CollectionIndex, type IndexRow } from '../../src/search/collectionIndex.js';
import {
  graphPaths,
  graphProblem,
  graphTopRows,
  HNSW_QUANTIZATION,
  loadWalker,
  newGraph,
  openGraph,
  saveGraph,
  viewGraph,
  type GraphMemory,
  type HnswMeta,
} from '../../src/search/hnswGraph.js';
import { profileCodec } from '../../src/search/profiles.js';
import { unitVectors } from '../helpers/vectors.js';
import { tempDir } from '../helpers/tempDir.js';

const DIM = 32;
function rows(n: number, seed: number, firstKey: number): IndexRow[] {
  return unitVectors(n, seed, DIM).map((vector, i) => ({
    faceKey: firstKey + i,
    personKey: Math.floor((firstKey + i) / 3),
    vector,
  }));
}

test('graph search: re-ranked candidates equal the exact answer on these rows, deletes are never returned, the delta is searched', (t) => {
  const codec = profileCodec('fp32_v1');
  const base = rows(2000, 1, 1);
  const index = new CollectionIndex(codec, DIM, 10_000);
  index.add(base);
  const graph = newGraph(DIM, { connectivity: 16, expansion_add: 128, expansion_search: 256 });
  graph.add(
    BigUint64Array.from(base, (r) => BigInt(r.faceKey)),
    Float32Array.from(base.flatMap((r) => [...r.vector])),
    1,
  );
  const dir = tempDir(t, 'vigil-graph-');
  const meta = saveGraph(dir, graph, {
    format: 1,
    collection_id: 'c',
    index_epoch: 'e1',
    dimension: DIM,
    quantization: HNSW_QUANTIZATION,
    connectivity: 16,
    expansion_add: 128,
    revision: 5,
    max_face_key: 2000,
    rows: 2000,
    build_seconds: 0,
    built_at: new Date().toISOString(),
  });
  const want = {
    collectionId: 'c',
    epoch: 'e1',
    dimension: DIM,
    params: { connectivity: 16, expansion_add: 128, expansion_search: 256 },
    revision: 7,
  };
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
    t.false(
      got.some((h) => deleted.includes(h.faceKey)),
      'a deleted face is never returned',
    );
    const exact = index.exactSearchPersons(q, 5);
    const approx = bestPerPerson(got, 5);
    if (JSON.stringify(approx) === JSON.stringify(exact)) agree++;
    if (!deleted.includes(r.faceKey))
      t.is(got[0]!.faceKey, r.faceKey, 'a stored face finds itself first (graph or delta)');
  }
  t.true(agree >= queries.length - 1, `${agree}/${queries.length} grouped answers equal the exact ones`);
});

test('graphProblem: another incarnation, other parameters, a later revision than the database', (t) => {
  const meta: HnswMeta = {
    format: 1,
    collection_id: 'c',
    index_epoch: 'e1',
    dimension: 8,
    quantization: 'i8',
    connectivity: 16,
    expansion_add: 128,
    revision: 10,
    max_face_key: 5,
    rows: 3,
    file_bytes: 1,
    build_seconds: 0,
    built_at: '',
  };
  const want = {
    collectionId: 'c',
    epoch: 'e1',
    dimension: 8,
    params: { connectivity: 16, expansion_add: 128, expansion_search: 64 },
    revision: 10,
  };
  t.is(graphProblem(meta, want), null);
  t.is(graphProblem(meta, { ...want, revision: 12 }), null, 'an older file still serves (later changes are the delta)');
  t.regex(graphProblem(meta, { ...want, epoch: 'e2' })!, /incarnation/);
  t.regex(graphProblem(meta, { ...want, params: { ...want.params, connectivity: 8 } })!, /parameters/);
  t.regex(graphProblem(meta, { ...want, revision: 9 })!, /covers revision 10/);
});

test('viewGraph refuses a truncated file and a missing sidecar', (t) => {
  const dir = tempDir(t, 'vigil-graph-');
  const graph = newGraph(8, { connectivity: 16, expansion_add: 64, expansion_search: 64 });
  graph.add(
    BigUint64Array.of(1n, 2n),
    Float32Array.from({ length: 16 }, (_, i) => (i % 8 === 0 ? 1 : 0.01)),
    1,
  );
  const want = {
    collectionId: 'c',
    epoch: 'e',
    dimension: 8,
    params: { connectivity: 16, expansion_add: 64, expansion_search: 64 },
    revision: 1,
  };
  t.like(viewGraph(dir, want), { problem: 'no graph file' });
  saveGraph(dir, graph, {
    format: 1,
    collection_id: 'c',
    index_epoch: 'e',
    dimension: 8,
    quantization: 'i8',
    connectivity: 16,
    expansion_add: 64,
    revision: 1,
    max_face_key: 2,
    rows: 2,
    build_seconds: 0,
    built_at: '',
  });
  t.true('graph' in viewGraph(dir, want));
  // A sidecar that names another row count than the file holds: refused (and the opened file closed).
  const sidecar = join(dir, 'c.hnsw.json');
  const good = readFileSync(sidecar, 'utf8');
  writeFileSync(sidecar, JSON.stringify({ ...JSON.parse(good), rows: 3 }));
  t.like(viewGraph(dir, want), { problem: 'the graph holds 2 rows, its sidecar says 3' });
  writeFileSync(sidecar, good);
  const file = join(dir, 'c.hnsw');
  writeFileSync(file, readFileSync(file).subarray(0, 100));
  t.like(viewGraph(dir, want), { problem: 'the graph file has the wrong size' });
});

test("the native walker returns what usearch's own search returns, from every memory and at every prefetch distance", async (t) => {
  const dim = 64;
  const base = unitVectors(3000, 7, dim);
  const graph = newGraph(dim, { connectivity: 16, expansion_add: 64, expansion_search: 40 });
  graph.add(
    BigUint64Array.from(base, (_, i) => BigInt(10 + 3 * i)),
    Float32Array.from(base.flatMap((v) => [...v])),
    1,
  );
  const dir = tempDir(t, 'vigil-walker-');
  saveGraph(dir, graph, {
    format: 1,
    collection_id: 'w',
    index_epoch: 'e',
    dimension: dim,
    quantization: 'i8',
    connectivity: 16,
    expansion_add: 64,
    revision: 1,
    max_face_key: 10 + 3 * 2999,
    rows: 3000,
    build_seconds: 0,
    built_at: '',
  });
  const queries = unitVectors(60, 8, dim);
  const expected = queries.map((q) => Array.from(graph.search(q, 20, 1).keys, Number));
  t.true(expected.every((keys) => keys.length === 20));
  for (const memory of ['view', 'load', 'huge_pages'] as GraphMemory[]) {
    const walker = openGraph(graphPaths(dir, 'w').graph, memory, 40);
    t.is(walker.size, 3000);
    t.is(walker.dimensions, dim);
    t.is(walker.memory, 'view', 'the mapping serves at once');
    t.deepEqual(walker.search(queries[0]!, 20), expected[0], `${memory}: answers before the copy is in place`);
    await walker.loaded;
    t.is(walker.loadError, null);
    t.is(walker.memory, memory);
    for (const lag of [-1, 0, 1, 8]) {
      walker.lag = lag;
      const same = queries.filter(
        (q, i) => JSON.stringify(walker.search(q, 20)) === JSON.stringify(expected[i]),
      ).length;
      t.is(same, queries.length, `${memory}, lag ${lag}: ${same}/${queries.length} answers equal usearch's`);
    }
    walker.close();
    t.throws(() => walker.search(queries[0]!, 20), { message: /closed/ });
    walker.close();
  }
});

/** A graph of `n` seeded unit vectors (keys 1..n, M 8) saved as collection `w` in a temp dir: its file path and rows. */
function savedGraph(t: Parameters<typeof tempDir>[0], n: number, seed: number, dim = 16) {
  const graph = newGraph(dim, { connectivity: 8, expansion_add: 32, expansion_search: 32 });
  const base = unitVectors(n, seed, dim);
  graph.add(
    BigUint64Array.from(base, (_, i) => BigInt(i + 1)),
    Float32Array.from(base.flatMap((v) => [...v])),
    1,
  );
  const dir = tempDir(t, 'vigil-walker-');
  saveGraph(dir, graph, {
    format: 1,
    collection_id: 'w',
    index_epoch: 'e',
    dimension: dim,
    quantization: 'i8',
    connectivity: 8,
    expansion_add: 32,
    revision: 1,
    max_face_key: n,
    rows: n,
    build_seconds: 0,
    built_at: '',
  });
  return { file: graphPaths(dir, 'w').graph, base };
}

test('a walker closed while its copy is read stays closed, and the copy is dropped', async (t) => {
  const { file, base } = savedGraph(t, 500, 3);
  const walker = openGraph(file, 'huge_pages', 32);
  walker.close();
  await walker.loaded;
  t.is(walker.memory, 'view');
  t.throws(() => walker.search(base[0]!, 5), { message: /closed/ });
});

test('openGraph refuses a file that is not a usearch index', (t) => {
  const dir = tempDir(t, 'vigil-walker-');
  const file = join(dir, 'x.hnsw');
  writeFileSync(file, Buffer.alloc(4096, 7));
  t.throws(() => openGraph(file, 'view', 64), {
    message: /x\.hnsw: the file is shorter than its vector matrix|not a usearch/,
  });
  t.throws(() => openGraph(join(dir, 'missing.hnsw'), 'view', 64), { message: /open: No such file/ });
});

test('a graph file with damaged neighbour lists is searched without reading past them', (t) => {
  const dim = 16;
  const { file, base } = savedGraph(t, 400, 5, dim);
  const bytes = readFileSync(file);
  // usearch's layout: u32 rows, u32 bytes per row, the rows, a 64-byte head, index_gt's 40-byte header,
  // an i16 level per node, then the nodes: every count and slot there becomes 0xffffffff.
  const nodes = 8 + 400 * dim + 64 + 40 + 2 * 400;
  bytes.fill(0xff, nodes);
  writeFileSync(file, bytes);
  // The walker's own walk (usearch's, lag -1, trusts the file and would read far past it).
  const walker = openGraph(file, 'load', 32);
  t.true(walker.search(base[0]!, 10).length <= 10);
  walker.close();
});

test('the copy is of the graph that was mapped, even when a rebuild renames a newer file over the path meanwhile', async (t) => {
  const first = savedGraph(t, 600, 11);
  const other = savedGraph(t, 300, 12);
  const expected = first.base.slice(0, 20).map((q) => {
    const w = openGraph(first.file, 'view', 32);
    const keys = w.search(q, 5);
    w.close();
    return keys;
  });
  const walker = openGraph(first.file, 'huge_pages', 32);
  renameSync(other.file, first.file);
  await walker.loaded;
  t.is(walker.loadError, null);
  t.is(walker.memory, 'huge_pages');
  t.is(walker.size, 600);
  t.deepEqual(
    first.base.slice(0, 20).map((q) => walker.search(q, 5)),
    expected,
  );
  walker.close();
});

test('a walker addon that cannot load is reported with its reason, not thrown', (t) => {
  const dir = tempDir(t, 'vigil-walker-');
  // What a box sees with an addon built for another CPU or a damaged file: dlopen refuses it.
  const broken = join(dir, 'hnsw_walk.node');
  writeFileSync(broken, Buffer.alloc(4096, 1));
  const load = loadWalker(broken);
  t.is(load.addon, null);
  t.regex(load.problem!, /hnsw_walk\.node/);
  t.like(loadWalker(join(dir, 'missing.node')), { addon: null });
  t.truthy(loadWalker().addon, 'the walker this checkout built loads');
});

test("without the native walker a graph is searched with usearch's own binding, with the same answers", async (t) => {
  const dim = 32;
  const { file, base } = savedGraph(t, 1500, 21, dim);
  const native = openGraph(file, 'view', 40);
  const fallback = openGraph(file, 'huge_pages', 40, null);
  t.is(fallback.size, 1500);
  t.is(fallback.dimensions, dim);
  await fallback.loaded;
  t.is(fallback.memory, 'view', 'usearch maps the file; no copy, no huge pages');
  t.false(fallback.hugePages);
  native.lag = -1;
  const queries = unitVectors(40, 22, dim);
  const same = queries.filter((q) => JSON.stringify(fallback.search(q, 10)) === JSON.stringify(native.search(q, 10)));
  t.is(same.length, queries.length);
  t.is(fallback.search(base[3]!, 1)[0], 4, 'a stored vector finds itself');
  t.deepEqual(fallback.search(base[0]!, 0), []);
  native.close();
  fallback.close();
  t.throws(() => fallback.search(base[0]!, 5), { message: /closed/ });
  t.throws(() => openGraph(join(tempDir(t, 'vigil-walker-'), 'missing.hnsw'), 'view', 40, null));
});
