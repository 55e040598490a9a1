export interface OpenedGraph {
  handle: unknown;
  /** Nodes in the graph. */
  size: number;
  dimensions: number;
  /** Whether the kernel accepted the huge-page advice (a copy made with hugePages only). */
  hugePages: boolean;
}
/** Maps a file saved by usearch 2.x (`Index.save`, single key per vector); throws with the reason when it cannot. */
export function openGraph(path: string): OpenedGraph;
/**
 * The handle's graph copied into anonymous memory (advised for transparent huge pages when `hugePages`) on a
 * libuv thread, from its mapping: the copy is the graph that was mapped even if the path now names another file.
 */
export function copyGraph(handle: unknown, hugePages: boolean): Promise<OpenedGraph>;
/** Frees the graph's memory now (not at garbage collection); later searches on the handle throw. */
export function closeGraph(handle: unknown): void;
/**
 * The keys of the `k` nearest nodes (approximate: usearch's walk with `expansion` as ef), best first.
 * `lag` >= 0: the walker's copy of usearch's walk, asking for vectors `lag` neighbours ahead (0 none);
 * -1: usearch's own index_gt::search over the same memory. One walk at a time per handle.
 */
export function searchGraph(
  handle: unknown,
  query: Float32Array,
  k: number,
  expansion: number,
  lag: number,
): Float64Array;
