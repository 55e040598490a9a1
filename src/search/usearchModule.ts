import { createRequire } from 'node:module';

/**
 * usearch through its CommonJS build: importing its ES module build inside a worker thread never
 * settles (Node 20; the HNSW build worker needs it), so the main thread and the workers load the same
 * CommonJS entry and share one copy of the addon per thread.
 */
const usearch = createRequire(import.meta.url)('usearch') as typeof import('usearch').default;
export default usearch;
export type { Index } from 'usearch';
