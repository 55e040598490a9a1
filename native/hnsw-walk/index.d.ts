/** How the graph file is held: 0 mapped (page cache), 1 read into anonymous memory, 2 as 1 with huge pages advised. */
export type GraphMemory = 0 | 1 | 2;
export interface OpenedGraph {
  handle: unknown;
  /** Nodes in the graph. */
  size: number;
  dimensions: number;
  /** Whether the kernel accepted the huge-page advice (memory 2 only). */
  hugePages: boolean;
}
/** Opens a file saved by usearch 2.x (`Index.save`, single key per vector); throws with the reason when it cannot. */
export function openGraph(path: string, memory: GraphMemory): OpenedGraph;
/** As openGraph, read on a libuv thread (a 1M graph is ~750 MiB: seconds with huge pages). */
export function loadGraph(path: string, memory: GraphMemory): Promise<OpenedGraph>;
/** Frees the graph's memory now (not at garbage collection); later searches on the handle throw. */
export function closeGraph(handle: unknown): void;
/**
 * The keys of the `k` nearest nodes (approximate: usearch's walk with `expansion` as ef), best first.
 * `lag` >= 0: the walker's copy of usearch's walk, asking for vectors `lag` neighbours ahead (0 none);
 * -1: usearch's own index_gt::search over the same memory. One walk at a time per handle.
 */
export function searchGraph(handle: unknown, query: Float32Array, k: number, expansion: number, lag: number): Float64Array;
