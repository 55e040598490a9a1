import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, openSync, fsyncSync, closeSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { CollectionIndex, RowHit } from './collectionIndex.js';
import usearch, { type Index } from './usearchModule.js';

/**
 * A persisted HNSW graph of one collection: `<dir>/<collection>.hnsw` (usearch's own format) and its
 * sidecar `<collection>.hnsw.json` naming what it covers. The graph only proposes candidates: every
 * candidate is re-ranked exactly from the collection's in-memory rows, deleted faces are filtered out,
 * and rows added after the graph (face keys above `max_face_key`, since SQLite's AUTOINCREMENT never
 * reuses one) are scanned exactly beside it.
 */
export interface HnswParams { connectivity: number; expansion_add: number; expansion_search: number }

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

export const graphPaths = (dir: string, collectionId: string) => ({ graph: join(dir, `${collectionId}.hnsw`), meta: join(dir, `${collectionId}.hnsw.json`) });

export function newGraph(dimension: number, p: HnswParams): Index {
  return new usearch.Index({
    dimensions: dimension, metric: METRIC, quantization: usearch.ScalarKind.I8, connectivity: p.connectivity,
    expansion_add: p.expansion_add, expansion_search: p.expansion_search, multi: false,
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

export interface GraphExpectation { collectionId: string; epoch: string; dimension: number; params: HnswParams; revision: number }

/** Why a persisted graph cannot serve this collection, or null when it can. */
export function graphProblem(meta: HnswMeta, want: GraphExpectation): string | null {
  if (meta.format !== 1) return `unknown format ${String(meta.format)}`;
  if (meta.collection_id !== want.collectionId || meta.index_epoch !== want.epoch) return 'the file belongs to another incarnation of the collection';
  if (meta.dimension !== want.dimension || meta.quantization !== HNSW_QUANTIZATION) return 'dimension or quantization differs';
  if (meta.connectivity !== want.params.connectivity || meta.expansion_add !== want.params.expansion_add) return 'graph parameters changed';
  // A database restored to an older state: the file describes rows the database never had.
  if (meta.revision > want.revision) return `the file covers revision ${meta.revision}, the database is at ${want.revision}`;
  return null;
}

export type LoadedGraph = { graph: Index; meta: HnswMeta } | { problem: string };

/** Memory-maps a persisted graph (usearch `view`: pages are read on demand and shared with the page cache). */
export function viewGraph(dir: string, want: GraphExpectation): LoadedGraph {
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
  const graph = newGraph(want.dimension, { ...want.params });
  try {
    graph.view(p.graph);
  } catch (e) {
    return { problem: `usearch could not map the file: ${(e as Error).message}` };
  }
  if (graph.size() !== meta.rows) return { problem: `the graph holds ${graph.size()} rows, its sidecar says ${meta.rows}` };
  return { graph, meta };
}

/** What serves beside a graph: the exact delta of later adds and the count of deleted graph rows. */
export interface GraphView { graph: Index; delta: CollectionIndex; deleted: number }

/**
 * The best `want` rows for a query through the graph: graph candidates (over-asked by the deleted
 * count, which are filtered) plus the delta's exact top rows, all re-ranked exactly from `index`.
 */
export function graphTopRows(index: CollectionIndex, g: GraphView, query: Float32Array, want: number): RowHit[] {
  const keys = graphCandidates(g.graph, query, want + g.deleted);
  const q = index.encodeQuery(query);
  const hits = index.scoreFaces(q, keys);
  if (g.delta.size) hits.push(...g.delta.topRows(q, want));
  return hits.sort((a, b) => b.score - a.score || a.faceKey - b.faceKey);
}

/** Face keys of the `k` nearest graph nodes (approximate), best first. */
export function graphCandidates(graph: Index, query: Float32Array, k: number): number[] {
  if (graph.size() === 0) return [];
  const m = graph.search(query, Math.min(k, graph.size()), 1);
  const out: number[] = [];
  for (let i = 0; i < m.keys.length; i++) out.push(Number(m.keys[i]));
  return out;
}
