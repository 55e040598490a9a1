import {
  existsSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  openSync,
  fsyncSync,
  closeSync,
  readdirSync,
} from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { CollectionIndex, RowHit } from './collectionIndex.js';
import usearch, { type Index } from './usearchModule.js';

/**
 * The native walker (native/hnsw-walk, prebuilt in the package or built by `npm ci` with node-gyp from
 * usearch's own headers): it searches the file usearch saved with usearch's walk and kernels, prefetching
 * each step's neighbour vectors, from memory that may have huge pages; usearch's binding does neither
 * (bench/search.ts measures both). It is an accelerator, not a requirement: when it cannot load (missing,
 * built for another CPU or Node), graphs are searched with usearch's own binding and the daemon says so
 * at start (`walkerProblem`).
 */
export type WalkerAddon = typeof import('vigil-hnsw-walk');
export type WalkerLoad = { addon: WalkerAddon; problem: null } | { addon: null; problem: string };

/** Loads the walker addon (a module name or a .node path), or says why it could not. */
export function loadWalker(id = 'vigil-hnsw-walk'): WalkerLoad {
  try {
    return { addon: createRequire(import.meta.url)(id) as WalkerAddon, problem: null };
  } catch (e) {
    return { addon: null, problem: (e instanceof Error ? e.message : String(e)).split('\n')[0]! };
  }
}

const nativeWalker = loadWalker();
/** Why graphs are searched with usearch's own binding instead of the native walker; null when the walker serves. */
export const walkerProblem: string | null = nativeWalker.problem;

/**
 * A persisted HNSW graph of one collection: `<dir>/<collection>.hnsw` (usearch's own format) and its
 * sidecar `<collection>.hnsw.json` naming what it covers. The graph only proposes candidates: every
 * candidate is re-ranked exactly from the collection's in-memory rows, deleted faces are filtered out,
 * and rows added after the graph (face keys above `max_face_key`, since SQLite's AUTOINCREMENT never
 * reuses one) are scanned exactly beside it.
 */
export interface HnswParams {
  connectivity: number;
  expansion_add: number;
  expansion_search: number;
}

export interface HnswMeta {
  format: 1;
  collection_id: string;
  index_epoch: string;
  dimension: number;
  /** usearch's scalar type of the graph's own vector copy: i8 keeps it at 1 byte per value. */
  quantization: 'i8';
  connectivity: number;
  expansion_add: number;
  /** The collection's search_revision read in the same transaction as the rows. */
  revision: number;
  /** The highest face key that existed at `revision`: every live face at or below it is in the graph. */
  max_face_key: number;
  rows: number;
  file_bytes: number;
  build_seconds: number;
  built_at: string;
}

export const HNSW_QUANTIZATION = 'i8' as const;
/** Cosine on i8: usearch scales unit vectors by 127, and the cosine ignores that scale. */
const METRIC = usearch.MetricKind.Cos;

export const graphPaths = (dir: string, collectionId: string) => ({
  graph: join(dir, `${collectionId}.hnsw`),
  meta: join(dir, `${collectionId}.hnsw.json`),
});

export function newGraph(dimension: number, p: HnswParams): Index {
  return new usearch.Index({
    dimensions: dimension,
    metric: METRIC,
    quantization: usearch.ScalarKind.I8,
    connectivity: p.connectivity,
    expansion_add: p.expansion_add,
    expansion_search: p.expansion_search,
    multi: false,
  });
}

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Saves graph + sidecar crash-safely: temp files, fsync, rename (the sidecar last: it makes the pair valid). */
export function saveGraph(dir: string, graph: Index, meta: Omit<HnswMeta, 'file_bytes'>): HnswMeta {
  const p = graphPaths(dir, meta.collection_id);
  const tmp = `${p.graph}.${process.pid}.tmp`;
  graph.save(tmp);
  fsyncPath(tmp);
  rmSync(p.meta, { force: true });
  renameSync(tmp, p.graph);
  const full: HnswMeta = { ...meta, file_bytes: statSync(p.graph).size };
  writeFileSync(`${p.meta}.tmp`, JSON.stringify(full));
  fsyncPath(`${p.meta}.tmp`);
  renameSync(`${p.meta}.tmp`, p.meta);
  fsyncPath(dir);
  return full;
}

export function removeGraphFiles(dir: string, collectionId: string): void {
  const p = graphPaths(dir, collectionId);
  rmSync(p.meta, { force: true });
  rmSync(p.graph, { force: true });
}

/** Temp files of builds that never finished (a crash or a stop mid-build). */
export function removeStaleTempFiles(dir: string): void {
  if (!existsSync(dir)) return;
  for (const f of readdirSync(dir)) if (f.endsWith('.tmp')) rmSync(join(dir, f), { force: true });
}

export interface GraphExpectation {
  collectionId: string;
  epoch: string;
  dimension: number;
  params: HnswParams;
  revision: number;
}

/** Why a persisted graph cannot serve this collection, or null when it can. */
export function graphProblem(meta: HnswMeta, want: GraphExpectation): string | null {
  if (meta.format !== 1) return `unknown format ${String(meta.format)}`;
  if (meta.collection_id !== want.collectionId || meta.index_epoch !== want.epoch)
    return 'the file belongs to another incarnation of the collection';
  if (meta.dimension !== want.dimension || meta.quantization !== HNSW_QUANTIZATION)
    return 'dimension or quantization differs';
  if (meta.connectivity !== want.params.connectivity || meta.expansion_add !== want.params.expansion_add)
    return 'graph parameters changed';
  // A database restored to an older state: the file describes rows the database never had.
  if (meta.revision > want.revision)
    return `the file covers revision ${meta.revision}, the database is at ${want.revision}`;
  return null;
}

/**
 * How a served graph is held: `view` maps the file (pages come from the page cache on demand and can be
 * dropped under memory pressure), `load` reads it into the process, `huge_pages` reads it into memory
 * advised for transparent huge pages (fewer TLB misses per walk; the kernel may decline, see `hugePages`).
 * The file is mapped at once either way, so a graph serves right after it is opened; with `load` or
 * `huge_pages` a copy is made from the mapping on a libuv thread and replaces it when complete.
 */
export type GraphMemory = 'view' | 'load' | 'huge_pages';

/** A persisted graph opened for searching (read-only: later adds are scanned beside it, see graphTopRows). */
export interface GraphWalker {
  readonly size: number;
  readonly dimensions: number;
  /** How the graph is held now: `view` until a requested copy is in place. */
  readonly memory: GraphMemory;
  /** Whether the kernel took the huge-page advice (`huge_pages` only). */
  readonly hugePages: boolean;
  /** Settles when the requested memory is in place (or reading the copy failed: `loadError`; the mapping keeps serving). */
  readonly loaded: Promise<void>;
  readonly loadError: string | null;
  /** usearch's ef for searches. */
  expansion: number;
  /**
   * How many neighbour vectors the walk asks for ahead of the one it scores (0 none; -1 runs usearch's own
   * walk code instead, for the bench). Both walks return the same nodes.
   */
  lag: number;
  /** Face keys of the `k` nearest graph nodes (approximate), best first. */
  search(query: Float32Array, k: number): number[];
  /** Frees the graph's memory now (a replaced 1M graph is ~750 MiB); searching a closed graph throws. */
  close(): void;
}

/** Vectors prefetched ahead by default (bench/search.ts --hnsw-lags: 8 beat 0, 1, 2, 4 and 16 at 1M). */
export const WALK_LAG = 8;

/**
 * Opens a graph file usearch saved; throws with the reason when it cannot. `walker` null (the addon did
 * not load): usearch's own binding maps the file and searches it, held as `view` whatever `memory` asks.
 */
export function openGraph(
  path: string,
  memory: GraphMemory,
  expansion: number,
  walker: WalkerAddon | null = nativeWalker.addon,
): GraphWalker {
  if (!walker) return openWithUsearch(path, expansion);
  let current = walker.openGraph(path);
  const size = current.size;
  let held: GraphMemory = 'view';
  let huge = false;
  let closed = false;
  let loadError: string | null = null;
  const loaded =
    memory === 'view'
      ? Promise.resolve()
      : walker.copyGraph(current.handle, memory === 'huge_pages').then(
          (copy) => {
            if (closed) return walker.closeGraph(copy.handle);
            walker.closeGraph(current.handle);
            current = copy;
            held = memory;
            huge = copy.hugePages;
          },
          (err: unknown) => {
            loadError = err instanceof Error ? err.message : String(err);
          },
        );
  return {
    size,
    dimensions: current.dimensions,
    loaded,
    expansion,
    lag: WALK_LAG,
    get memory() {
      return held;
    },
    get hugePages() {
      return huge;
    },
    get loadError() {
      return loadError;
    },
    search(query, k) {
      if (size === 0 || k <= 0) return [];
      return Array.from(
        walker.searchGraph(current.handle, query, Math.min(k, size), Math.max(this.expansion, k), this.lag),
      );
    },
    close() {
      if (closed) return;
      closed = true;
      walker.closeGraph(current.handle);
    },
  };
}

/**
 * A graph searched by usearch's binding over its own mapping of the file. Its ef is fixed when the file is
 * viewed: a changed `expansion` applies from the next open (a rebuild or a restart); `lag` has no effect.
 */
function openWithUsearch(path: string, expansion: number): GraphWalker {
  // view() reads the dimensions, metric and scalar kind from the file's header.
  let index: Index | null = new usearch.Index({
    dimensions: 1,
    metric: METRIC,
    quantization: usearch.ScalarKind.I8,
    connectivity: 0,
    expansion_add: 0,
    expansion_search: expansion,
    multi: false,
  });
  index.view(path);
  const size = index.size();
  return {
    size,
    dimensions: index.dimensions(),
    loaded: Promise.resolve(),
    loadError: null,
    memory: 'view',
    hugePages: false,
    expansion,
    lag: WALK_LAG,
    search(query, k) {
      if (!index) throw new Error('the graph is closed');
      if (size === 0 || k <= 0) return [];
      return Array.from(index.search(query, Math.min(k, size), 1).keys, Number);
    },
    close() {
      // usearch unmaps the file when the Index is collected; nothing searches it after this.
      index = null;
    },
  };
}

export type LoadedGraph = { graph: GraphWalker; meta: HnswMeta } | { problem: string };

/** Opens a persisted graph that fits the collection, held as `memory` says. */
export function viewGraph(dir: string, want: GraphExpectation, memory: GraphMemory = 'huge_pages'): LoadedGraph {
  const p = graphPaths(dir, want.collectionId);
  if (!existsSync(p.meta) || !existsSync(p.graph)) return { problem: 'no graph file' };
  let meta: HnswMeta;
  try {
    meta = JSON.parse(readFileSync(p.meta, 'utf8')) as HnswMeta;
  } catch {
    return { problem: 'unreadable sidecar' };
  }
  const problem = graphProblem(meta, want);
  if (problem) return { problem };
  if (statSync(p.graph).size !== meta.file_bytes) return { problem: 'the graph file has the wrong size' };
  let graph: GraphWalker;
  try {
    graph = openGraph(p.graph, memory, want.params.expansion_search);
  } catch (e) {
    return { problem: `the graph file could not be opened: ${(e as Error).message}` };
  }
  const mismatch =
    graph.size !== meta.rows
      ? `the graph holds ${graph.size} rows, its sidecar says ${meta.rows}`
      : graph.dimensions !== want.dimension
        ? `the graph's vectors have ${graph.dimensions} dimensions, the collection ${want.dimension}`
        : null;
  if (mismatch) {
    graph.close();
    return { problem: mismatch };
  }
  return { graph, meta };
}

/** What serves beside a graph: the exact delta of later adds and the count of deleted graph rows. */
export interface GraphView {
  graph: GraphWalker;
  delta: CollectionIndex;
  deleted: number;
}

/**
 * The best `want` rows for a query through the graph: graph candidates (over-asked by the deleted
 * count, which are filtered) plus the delta's exact top rows, all re-ranked exactly from `index` (from its
 * re-rank copy when it has one, as exact searches are).
 */
export function graphTopRows(index: CollectionIndex, g: GraphView, query: Float32Array, want: number): RowHit[] {
  const keys = graphCandidates(g.graph, query, want + g.deleted);
  const hits = index.scoreFaces(query, keys);
  if (g.delta.size) hits.push(...g.delta.rankRows(query, want));
  return hits.sort((a, b) => b.score - a.score || a.faceKey - b.faceKey);
}

/** Face keys of the `k` nearest graph nodes (approximate), best first. */
export function graphCandidates(graph: GraphWalker, query: Float32Array, k: number): number[] {
  return graph.search(query, k);
}
