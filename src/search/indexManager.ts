import { closeSync, mkdirSync, openSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import type { CollectionT, SearchProfile } from '../contract/collections.js';
import { Errors } from '../contract/errors.js';
import { startModuleWorker } from '../system/workerThread.js';
import { bestPerPerson, CollectionIndex, type ApproximateSearch, type IndexRow } from './collectionIndex.js';
import {
  graphTopRows,
  removeGraphFiles,
  removeStaleTempFiles,
  viewGraph,
  type GraphMemory,
  type GraphWalker,
  type HnswMeta,
  type HnswParams,
} from './hnswGraph.js';
import type { BuildJob, BuildMessage } from './indexBuildWorker.js';
import { profileCodec, type ProfileCodec } from './profiles.js';
import { SettleTimer } from './settleTimer.js';
import {
  readSnapshot,
  removeSnapshot,
  snapshotPath,
  snapshotRowsRange,
  writeSnapshot,
  type SnapshotHeader,
} from './vectorSnapshot.js';

export type IndexState = 'unloaded' | 'building' | 'ready' | 'dirty' | 'failed';
export type GraphState = 'none' | 'building' | 'ready' | 'failed';

interface Graph {
  state: GraphState;
  graph: GraphWalker | null;
  meta: HnswMeta | null;
  /** Live rows added after the graph was built (face key above meta.max_face_key), scanned exactly. */
  delta: CollectionIndex | null;
  /** Graph rows deleted since the build (filtered out of every candidate list). */
  deleted: number;
  progress: { done: number; total: number } | null;
  rebuilding: boolean;
  /** Builds started for this collection since the daemon started (a bulk import should cost one). */
  builds: number;
  lastError?: string;
  /** Why a persisted file was not used at load. */
  fileProblem?: string;
}

/** The persisted snapshot of an entry's exact index (vectorSnapshot.ts). */
interface Snapshot {
  /** The revision of the file on disk that equals the index's rows; null when none does. */
  revision: number | null;
  /** Rows added or removed since that file. */
  changes: number;
  writing: Promise<void> | null;
  loadedFrom: 'snapshot' | 'sqlite' | null;
  loadMs?: number;
  /** null while the background checksum of a loaded snapshot runs (or none was loaded). */
  verified: boolean | null;
  /** Why the last load did not use (or dropped) the file. */
  problem?: string;
  writeError?: string;
  /** A write waiting for the collection to go quiet (scheduleSnapshot). */
  settle?: SettleTimer;
}

/**
 * A snapshot write after `snapshot_after_changes`, and an HNSW graph build, start once the collection had
 * no change for this long, or at the latest after SETTLE_MAX_DEFER_MS. A write that the index changes under
 * is discarded, so writing between the batches of a bulk import re-wrote the whole file (2 GiB at 1M
 * faces: CRC, write, fsync) again and again for nothing while the import ran; graph builds started at
 * 5k, 40k and 100k rows of one import (542 s of build CPU for the last graph only).
 */
const SETTLE_QUIET_MS = 3000;
const SETTLE_MAX_DEFER_MS = 600_000;
/**
 * A graph build waits longer: it costs minutes of a core at 1M rows and searches are exact meanwhile, while
 * the next request of a multi-request import (`vigil gallery import` sends 20,000 persons each) must come
 * within it on a loaded box.
 */
const GRAPH_QUIET_MS = 10_000;

interface Entry {
  index: CollectionIndex | null;
  snapshot: Snapshot;
  state: IndexState;
  generation: number;
  appliedRevision: number;
  lastError?: string;
  buildMs?: number;
  graph: Graph;
  /** When a committed write last changed the index (graph builds wait for the changes to settle). */
  lastChangeAt: number;
  graphSettle?: SettleTimer;
}

export interface VectorSource {
  vectors(collectionId: string): Iterable<IndexRow>;
  /** The incarnation id of a collection (persisted graphs carry it). */
  indexEpoch(collectionId: string): string | null;
  getCollection(id: string): CollectionT | null;
}
export interface IndexChange {
  add?: IndexRow[];
  remove?: number[];
}

export interface SearchIndexOptions {
  /** Threads of one exact search; 0 = every core. */
  threads: number;
  /** Where HNSW graphs are persisted (`<data_dir>/search-indexes`) and the database their builds read. */
  dir: string;
  dbPath: string;
  buildThreads: number;
  /** Rebuild when rows added or deleted since the build exceed this share of the graph. */
  rebuildRatio: number;
  rebuildIntervalMs: number;
  /** How served graphs are held (see GraphMemory). Default `huge_pages`. */
  graphMemory?: GraphMemory;
  /** Rewrite a collection's vector snapshot after this many changed rows; 0 = no snapshots. Default 10,000. */
  snapshotAfterChanges?: number;
  /** int8 profiles keep an fp16 copy of the rows and re-rank their candidates from it (default true). */
  int8Rerank?: boolean;
  /** The rows' checksum of a loaded snapshot is checked once this settles (the daemon: models loaded). */
  verifyAfter?: Promise<unknown>;
}

/** Candidates asked of the graph: as many as the exact path's first batch. */
const candidatesFor = (limit: number) => Math.max(limit * 8, 64);
/** A graph whose delta + deletions exceed this share of its rows is stale: searches fall back to exact. */
const STALE_RATIO = 0.25;
const STALE_MIN_ROWS = 256;

const noGraph = (): Graph => ({
  state: 'none',
  graph: null,
  meta: null,
  delta: null,
  deleted: 0,
  progress: null,
  rebuilding: false,
  builds: 0,
});
/** A graph given up is closed at once: its memory (hundreds of MiB at 1M) is not left to a garbage collection. */
const closeGraph = (g: Graph | undefined) => g?.graph?.close();
const hnswParams = (c: CollectionT): HnswParams => ({ ...c.search_index.hnsw });
const usesGraph = (c: CollectionT) => c.search_index.type === 'hnsw';

/**
 * The in-memory indexes of all collections. SQLite is authoritative: an index is (re)built from it on
 * first use, at startup for eager collections, and whenever it is found behind the committed
 * search_revision. Writes commit first, then update the index before the response returns, so an
 * acknowledged add is searchable and an acknowledged delete is gone.
 *
 * Collections with `search_index.type = "hnsw"` also get a graph: built by a worker thread from SQLite,
 * persisted under the data directory with the revision it covers, memory-mapped when the collection
 * loads. Adds after the build sit in an exact delta, deletes are filtered, and the graph is rebuilt in
 * the background once the changes pass `rebuildRatio` (or `rebuildIntervalMs` after any change).
 * While no usable graph exists (first build, stale or failed) searches are exact.
 */
export class SearchIndexes {
  private readonly entries = new Map<string, Entry>();
  private readonly queue: string[] = [];
  private running: { collectionId: string; worker: Worker } | null = null;
  /** Bulk imports running per collection: their graph builds wait (holdBuilds). */
  private readonly holds = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly source: VectorSource,
    private readonly opts: SearchIndexOptions,
  ) {
    mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
    removeStaleTempFiles(opts.dir);
    this.timer = setInterval(() => this.periodicCheck(), Math.min(60_000, opts.rebuildIntervalMs)).unref();
  }

  private entry(id: string): Entry {
    let e = this.entries.get(id);
    if (!e) {
      e = {
        index: null,
        snapshot: { revision: null, changes: 0, writing: null, loadedFrom: null, verified: null },
        state: 'unloaded',
        generation: 0,
        appliedRevision: -1,
        graph: noGraph(),
        lastChangeAt: -Infinity,
      };
      this.entries.set(id, e);
    }
    return e;
  }

  /** How the collection's rows are stored and scored (its profile; the int8 re-rank copy as configured). */
  private codecOf(c: CollectionT): ProfileCodec {
    return profileCodec(c.search_profile as SearchProfile, { rerank: this.opts.int8Rerank ?? true });
  }

  /** An index at the collection's committed revision, built from SQLite when needed; 503 when that fails. */
  ready(c: CollectionT): CollectionIndex {
    const e = this.entry(c.id);
    if (e.index && e.state === 'ready' && e.appliedRevision === c.search_revision) return e.index;
    return this.build(c, e);
  }

  private get snapshotAfter(): number {
    return this.opts.snapshotAfterChanges ?? 10_000;
  }

  private build(c: CollectionT, e: Entry): CollectionIndex {
    e.state = e.index ? 'dirty' : 'building';
    const t0 = performance.now();
    try {
      // A snapshot at exactly the committed revision is read straight into the index; else SQLite.
      const fromFile = this.snapshotAfter > 0 ? this.loadSnapshot(c, e) : null;
      const index =
        fromFile ??
        new CollectionIndex(
          this.codecOf(c),
          c.embedding_dimension,
          Math.max(c.capacity_rows, c.face_count),
          this.opts.threads,
        );
      if (!fromFile) {
        index.presize(c.face_count);
        let batch: IndexRow[] = [];
        for (const row of this.source.vectors(c.id)) {
          batch.push(row);
          if (batch.length === 4096) {
            index.add(batch);
            batch = [];
          }
        }
        index.add(batch);
        e.snapshot.loadedFrom = 'sqlite';
        e.snapshot.revision = null;
        e.snapshot.changes = 0;
        e.snapshot.verified = null;
      }
      e.index = index;
      e.state = 'ready';
      e.generation++;
      e.appliedRevision = c.search_revision;
      e.buildMs = performance.now() - t0;
      e.snapshot.loadMs = e.buildMs;
      delete e.lastError;
      this.attachGraph(c, e);
      // Built from SQLite: persist it so the next start reads one file instead.
      if (!fromFile && this.snapshotAfter > 0 && index.size > 0) this.saveSnapshot(c.id, e);
      return index;
    } catch (err) {
      e.index = null;
      e.state = 'failed';
      e.lastError = err instanceof Error ? err.message : String(err);
      throw Errors.searchIndexUnavailable(c.id, e.lastError);
    }
  }

  /**
   * Applies a committed write. `after` is the collection as committed (its new search_revision).
   * An unloaded index stays unloaded (it will be built from SQLite when used). If applying fails the
   * index is rebuilt; if that fails too the client learns the write did commit.
   */
  applyCommitted(after: CollectionT, revisionBefore: number, change: IndexChange): void {
    const e = this.entries.get(after.id);
    if (!e?.index) return;
    try {
      if (e.state !== 'ready' || e.appliedRevision !== revisionBefore)
        throw new Error('index behind the committed revision');
      const g = e.graph;
      if (change.remove?.length) {
        if (g.state === 'ready' && g.meta) {
          for (const key of change.remove) if (key <= g.meta.max_face_key && e.index.has(key)) g.deleted++;
          g.delta!.remove(change.remove);
        }
        e.index.remove(change.remove);
      }
      if (change.add?.length) {
        e.index.add(change.add);
        if (g.state === 'ready' && g.meta) {
          const max = g.meta.max_face_key;
          const fresh = change.add.filter((r) => r.faceKey > max);
          g.delta!.setCapacity(Math.max(g.delta!.capacity, e.index.capacity));
          g.delta!.add(fresh);
        }
      }
      e.appliedRevision = after.search_revision;
      e.lastChangeAt = performance.now();
      e.snapshot.changes += (change.add?.length ?? 0) + (change.remove?.length ?? 0);
      this.scheduleSnapshot(after.id, e);
      this.maybeRebuild(after, e);
    } catch {
      try {
        this.build(after, e);
      } catch {
        throw Errors.searchIndexUnavailable(after.id, { revision: after.search_revision });
      }
    }
  }

  /** Capacity, load-policy or index-setting changes. A lazy collection's index is released and rebuilt on next use. */
  configure(c: CollectionT): void {
    const e = this.entries.get(c.id);
    if (e) {
      const m = e.graph.meta;
      const p = c.search_index.hnsw;
      // A graph of other parameters (or an exact collection) is dropped with its files.
      if (!usesGraph(c) || (m && (m.connectivity !== p.connectivity || m.expansion_add !== p.expansion_add)))
        this.dropGraph(c.id, e);
    }
    if (c.load_policy === 'lazy') {
      if (e) {
        this.cancel(c.id);
        closeGraph(e.graph);
        this.entries.delete(c.id);
      }
      return;
    }
    if (e?.index && e.state === 'ready') {
      e.index.setCapacity(Math.max(c.capacity_rows, e.index.size));
      this.attachGraph(c, e);
    } else this.ready(c);
  }

  drop(id: string): void {
    const e = this.entries.get(id);
    if (e) this.dropGraph(id, e);
    else removeGraphFiles(this.opts.dir, id);
    this.entries.delete(id);
    removeSnapshot(this.opts.dir, id);
  }

  /**
   * Holds a collection's graph builds while a bulk import request runs (its rows are still coming; a build
   * now would be stale by the next batch); the release counts as the last change, so the build waits for
   * the quiet after it (a client's next request of the same import comes within it).
   */
  holdBuilds(id: string): () => void {
    this.holds.set(id, (this.holds.get(id) ?? 0) + 1);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const n = (this.holds.get(id) ?? 1) - 1;
      if (n > 0) this.holds.set(id, n);
      else this.holds.delete(id);
      const e = this.entries.get(id);
      if (!e) return;
      e.lastChangeAt = performance.now();
      // A build waiting for the import counts its quiet from now, not from the import's last commit.
      if (e.graphSettle?.pending) e.graphSettle.touch();
    };
  }

  /** Builds every eager collection (startup, before readiness). Failures are recorded, not thrown. */
  loadEager(collections: CollectionT[]): { built: number; failed: string[] } {
    let built = 0;
    const failed: string[] = [];
    for (const c of collections) {
      if (c.load_policy !== 'eager') continue;
      try {
        this.ready(c);
        built++;
      } catch {
        failed.push(c.id);
      }
    }
    return { built, failed };
  }

  /**
   * Stops a running build (its temp file is removed at the next start) and writes the snapshot of every
   * loaded index whose rows changed since its file, so the next start reads files instead of SQLite.
   */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    this.queue.length = 0;
    const r = this.running;
    this.running = null;
    if (r) await r.worker.terminate();
    for (const [id, e] of this.entries) {
      await e.snapshot.writing;
      if (this.snapshotAfter > 0 && e.index && e.state === 'ready' && e.snapshot.revision !== e.appliedRevision) {
        this.saveSnapshot(id, e, true);
        await e.snapshot.writing;
      }
    }
  }

  // ---- snapshots of the exact index ----

  private loadSnapshot(c: CollectionT, e: Entry): CollectionIndex | null {
    const epoch = this.source.indexEpoch(c.id);
    if (epoch === null) return null;
    const codec = this.codecOf(c);
    const loaded = readSnapshot(
      this.opts.dir,
      {
        collectionId: c.id,
        epoch,
        revision: c.search_revision,
        profile: c.search_profile,
        dimension: c.embedding_dimension,
        rows: c.face_count,
      },
      codec,
      c.capacity_rows,
      this.opts.threads,
    );
    if ('problem' in loaded) {
      if (loaded.problem !== 'no snapshot file') e.snapshot.problem = loaded.problem;
      return null;
    }
    const index = loaded.index;
    e.snapshot = {
      revision: loaded.header.revision,
      changes: 0,
      writing: null,
      loadedFrom: 'snapshot',
      verified: null,
    };
    // The rows' checksum is read back from the file by a worker while the index already serves (at start,
    // once the models are loaded: on 2 cores the CRC of 2 GiB took CPU from the model load).
    // The file is held open from now: the check reads the file that was loaded even if a newer snapshot
    // replaced the path meanwhile.
    let fd: number | undefined;
    try {
      fd = openSync(snapshotPath(this.opts.dir, c.id), 'r');
    } catch {
      /* removed meanwhile: checked by path (and found missing) */
    }
    const verify = () => this.verifySnapshot(c, e, index, loaded.header, codec, fd);
    if (this.opts.verifyAfter) void this.opts.verifyAfter.then(verify, verify);
    else verify();
    return index;
  }

  private verifySnapshot(
    c: CollectionT,
    e: Entry,
    index: CollectionIndex,
    header: SnapshotHeader,
    codec: ProfileCodec,
    fd: number | undefined,
  ): void {
    let open = fd !== undefined;
    const release = () => {
      if (open) closeSync(fd!);
      open = false;
    };
    if (this.closed || this.entries.get(c.id) !== e || e.index !== index) return release();
    const worker = startModuleWorker(import.meta.url, 'snapshotVerifyWorker', {
      path: snapshotPath(this.opts.dir, c.id),
      fd,
      ...snapshotRowsRange(header, codec),
      expected: header.rows_crc32,
    });
    worker.once('exit', release);
    worker.once('message', (ok: boolean) => {
      void worker.terminate();
      const now = this.entries.get(c.id);
      if (now !== e || e.index !== index) return;
      e.snapshot.verified = ok;
      if (ok) return;
      // A damaged file: forget it and this index; the collection is rebuilt from SQLite.
      e.snapshot.problem = 'the snapshot rows failed their checksum: rebuilt from SQLite';
      removeSnapshot(this.opts.dir, c.id);
      e.index = null;
      e.state = 'unloaded';
      closeGraph(e.graph);
      e.graph = noGraph();
      const fresh = this.source.getCollection(c.id);
      if (fresh && fresh.load_policy === 'eager' && !this.closed) {
        try {
          this.ready(fresh);
        } catch {
          /* recorded on the entry */
        }
      }
    });
    worker.once('error', () => undefined);
  }

  /** Writes the snapshot once `snapshot_after_changes` rows changed and the collection went quiet (SettleTimer). */
  private scheduleSnapshot(id: string, e: Entry): void {
    const snap = e.snapshot;
    if (this.snapshotAfter <= 0 || snap.changes < this.snapshotAfter || this.closed) return;
    snap.settle ??= new SettleTimer({
      quietMs: SETTLE_QUIET_MS,
      maxDeferMs: SETTLE_MAX_DEFER_MS,
      live: () => !this.closed && this.entries.get(id) === e && e.snapshot === snap,
      // A write still running (started before these changes): look again when it is done.
      busy: () => snap.writing !== null,
      start: () => this.saveSnapshot(id, e),
    });
    snap.settle.touch();
  }

  /** Writes the entry's snapshot in the background (one at a time per collection). */
  private saveSnapshot(id: string, e: Entry, closing = false): void {
    if (e.snapshot.writing || !e.index || (this.closed && !closing)) return;
    const epoch = this.source.indexEpoch(id);
    if (epoch === null) return;
    const index = e.index,
      revision = e.appliedRevision;
    const snap = e.snapshot;
    const changesAtStart = snap.changes;
    snap.writing = writeSnapshot(
      this.opts.dir,
      index,
      { collection_id: id, index_epoch: epoch, revision },
      () => e.index === index && e.appliedRevision === revision && this.entries.get(id) === e,
    )
      .then(
        (h) => {
          if (!h) return;
          snap.revision = h.revision;
          snap.changes = Math.max(0, snap.changes - changesAtStart);
          delete snap.writeError;
        },
        (err: unknown) => {
          snap.writeError = `writing the snapshot failed: ${err instanceof Error ? err.message : String(err)}`;
        },
      )
      .finally(() => {
        snap.writing = null;
      });
  }

  // ---- graphs ----

  /** The search a usable graph answers; null sends it to the exact scan. */
  private approximate(e: Entry): ApproximateSearch {
    return {
      searchPersons: (index, query, limit) => {
        const g = e.graph;
        if (!this.graphServes(g)) return null;
        // Exact re-rank at the profile's precision from the in-memory rows; deleted faces are not there.
        return bestPerPerson(
          graphTopRows(index, { graph: g.graph!, delta: g.delta!, deleted: g.deleted }, query, candidatesFor(limit)),
          limit,
        );
      },
    };
  }

  private graphServes(g: Graph): boolean {
    if (g.state !== 'ready' || !g.graph || !g.meta || !g.delta) return false;
    return g.delta.size + g.deleted <= Math.max(STALE_MIN_ROWS, STALE_RATIO * g.meta.rows);
  }

  /** Maps the persisted graph when it fits this collection, else queues a build. */
  private attachGraph(c: CollectionT, e: Entry): void {
    if (!e.index) return;
    e.index.approximate = usesGraph(c) ? this.approximate(e) : null;
    if (!usesGraph(c)) return;
    const g = e.graph;
    if (g.state === 'ready' && g.meta) {
      // A rebuilt exact index: recompute the delta and deletions against the graph we have.
      this.adoptGraph(c, e, g.graph!, g.meta);
      return;
    }
    const epoch = this.source.indexEpoch(c.id);
    const loaded =
      epoch === null
        ? { problem: 'the collection no longer exists' }
        : viewGraph(
            this.opts.dir,
            {
              collectionId: c.id,
              epoch,
              dimension: c.embedding_dimension,
              params: hnswParams(c),
              revision: c.search_revision,
            },
            this.opts.graphMemory,
          );
    if ('graph' in loaded) {
      this.adoptGraph(c, e, loaded.graph, loaded.meta);
      this.maybeRebuild(c, e);
    } else {
      g.fileProblem = loaded.problem;
      // An empty collection has nothing to build: its first rows ask for the graph (maybeRebuild).
      if (e.index.size > 0) this.buildWhenSettled(c.id, e);
    }
  }

  private adoptGraph(c: CollectionT, e: Entry, graph: GraphWalker, meta: HnswMeta): void {
    const index = e.index!;
    const g = e.graph;
    // ef_search is a search setting: a PATCH applies to the graph in hand without a rebuild.
    graph.expansion = c.search_index.hnsw.expansion_search;
    let covered = 0;
    for (const key of index.liveFaceKeys()) if (key <= meta.max_face_key) covered++;
    if (g.graph !== graph) closeGraph(g);
    g.graph = graph;
    g.meta = meta;
    g.delta = index.subset((key) => key > meta.max_face_key);
    g.deleted = Math.max(0, meta.rows - covered);
    g.state = 'ready';
    g.progress = null;
    delete g.lastError;
    delete g.fileProblem;
    index.approximate = usesGraph(c) ? this.approximate(e) : null;
  }

  private changesSinceBuild(g: Graph): number {
    return (g.delta?.size ?? 0) + g.deleted;
  }

  /** Asks for a build when the collection has rows but no graph, or more changes than `rebuildRatio` allows. */
  private maybeRebuild(c: CollectionT, e: Entry): void {
    const g = e.graph;
    if (!usesGraph(c) || !e.index) return;
    const wanted =
      g.state === 'ready' && g.meta
        ? this.changesSinceBuild(g) >= Math.max(1, this.opts.rebuildRatio * g.meta.rows)
        : g.state === 'none' && e.index.size > 0;
    if (wanted) this.buildWhenSettled(c.id, e);
  }

  /**
   * Queues a graph build once the collection's changes have settled (SettleTimer): at once when nothing
   * changed for GRAPH_QUIET_MS, else after the import (or any run of writes) goes quiet. A build running
   * now is followed by another only if its finish still finds it wanted.
   */
  private buildWhenSettled(id: string, e: Entry): void {
    if (this.closed || this.queue.includes(id) || this.running?.collectionId === id) return;
    const held = () => (this.holds.get(id) ?? 0) > 0;
    if (performance.now() - e.lastChangeAt >= GRAPH_QUIET_MS && !e.graphSettle?.pending && !held()) {
      this.schedule(id);
      return;
    }
    e.graphSettle ??= new SettleTimer({
      quietMs: GRAPH_QUIET_MS,
      maxDeferMs: SETTLE_MAX_DEFER_MS,
      live: () => !this.closed && this.entries.get(id) === e,
      busy: held,
      start: () => {
        const c = this.source.getCollection(id);
        if (c && usesGraph(c)) this.schedule(id);
      },
    });
    e.graphSettle.touch();
  }

  private periodicCheck(): void {
    const now = Date.now();
    for (const [id, e] of this.entries) {
      const g = e.graph;
      const c = this.source.getCollection(id);
      if (!c || !usesGraph(c) || !e.index) continue;
      const due = g.meta ? now - Date.parse(g.meta.built_at) >= this.opts.rebuildIntervalMs : true;
      if ((g.state === 'ready' && this.changesSinceBuild(g) > 0 && due) || (g.state === 'failed' && due))
        this.buildWhenSettled(id, e);
    }
  }

  private schedule(id: string): void {
    if (this.closed || this.queue.includes(id) || this.running?.collectionId === id) return;
    const e = this.entries.get(id);
    if (!e) return;
    if (e.graph.state === 'ready') e.graph.rebuilding = true;
    else e.graph.state = 'building';
    this.queue.push(id);
    this.next();
  }

  private cancel(id: string): void {
    const at = this.queue.indexOf(id);
    if (at >= 0) this.queue.splice(at, 1);
    if (this.running?.collectionId === id) {
      void this.running.worker.terminate();
      this.running = null;
      this.next();
    }
  }

  private dropGraph(id: string, e: Entry): void {
    this.cancel(id);
    closeGraph(e.graph);
    e.graph = noGraph();
    if (e.index) e.index.approximate = null;
    removeGraphFiles(this.opts.dir, id);
  }

  /** Runs the next queued build in a worker thread (one at a time: builds share the box with serving). */
  private next(): void {
    if (this.running || this.closed) return;
    const id = this.queue.shift();
    if (id === undefined) return;
    const c = this.source.getCollection(id);
    const e = this.entries.get(id);
    if (!c || !e || !usesGraph(c)) return this.next();
    const job: BuildJob = {
      dbPath: this.opts.dbPath,
      dir: this.opts.dir,
      collectionId: id,
      dimension: c.embedding_dimension,
      params: hnswParams(c),
      threads: this.opts.buildThreads,
    };
    const worker = startModuleWorker(import.meta.url, 'indexBuildWorker', job);
    const run = { collectionId: id, worker };
    this.running = run;
    e.graph.builds++;
    e.graph.progress = { done: 0, total: c.face_count };
    const finish = (error: string | null, meta: HnswMeta | null) => {
      if (this.running !== run) return;
      this.running = null;
      void worker.terminate();
      const entry = this.entries.get(id);
      const now = this.source.getCollection(id);
      if (entry && now && usesGraph(now)) {
        const g = entry.graph;
        g.rebuilding = false;
        g.progress = null;
        if (error) {
          g.lastError = error;
          if (g.state !== 'ready') g.state = 'failed';
        } else if (meta && entry.index) {
          // The new file is mapped when it still fits the collection (its settings may have changed meanwhile).
          const loaded = viewGraph(
            this.opts.dir,
            {
              collectionId: id,
              epoch: meta.index_epoch,
              dimension: now.embedding_dimension,
              params: hnswParams(now),
              revision: now.search_revision,
            },
            this.opts.graphMemory,
          );
          if ('graph' in loaded) {
            this.adoptGraph(now, entry, loaded.graph, loaded.meta);
            // Rows committed while it was built may already call for the next build.
            setImmediate(() => this.maybeRebuild(now, entry));
          } else {
            g.lastError = loaded.problem;
            if (g.state !== 'ready') g.state = 'failed';
          }
        }
      }
      this.next();
    };
    worker.on('message', (m: BuildMessage) => {
      if (m.type === 'progress') {
        const entry = this.entries.get(id);
        if (entry && this.running === run) entry.graph.progress = { done: m.done, total: m.total };
      } else if (m.type === 'done') finish(null, m.meta);
      else finish(m.message, null);
    });
    worker.on('error', (err) => finish(err.message, null));
    worker.on('exit', (code) => finish(`the build worker exited with code ${code}`, null));
  }

  // ---- reporting ----

  /** What a collection's search index is doing (the collection resource's search_index.status). */
  status(c: CollectionT): Record<string, unknown> {
    const e = this.entries.get(c.id);
    const g = e?.graph ?? noGraph();
    const serving = e?.index && usesGraph(c) && this.graphServes(g) ? 'hnsw' : 'exact';
    const base: Record<string, unknown> = { state: e?.state ?? 'unloaded', serving };
    if (!usesGraph(c)) return base;
    return {
      ...base,
      graph: {
        state: g.state,
        rebuilding: g.rebuilding,
        builds_started: g.builds,
        progress: g.progress
          ? {
              done_rows: g.progress.done,
              total_rows: g.progress.total,
              ratio: g.progress.total ? Math.round((g.progress.done / g.progress.total) * 1000) / 1000 : 0,
            }
          : null,
        revision: g.meta?.revision ?? null,
        rows: g.meta?.rows ?? null,
        added_rows_since: g.delta?.size ?? 0,
        deleted_rows_since: g.deleted,
        file_bytes: g.meta?.file_bytes ?? null,
        build_seconds: g.meta?.build_seconds ?? null,
        built_at: g.meta?.built_at ?? null,
        memory: g.graph?.memory ?? null,
        huge_pages: g.graph?.hugePages ?? false,
        ...(g.graph?.loadError ? { memory_error: g.graph.loadError } : {}),
        ...(g.lastError ? { last_error: g.lastError } : {}),
        ...(g.fileProblem ? { file_problem: g.fileProblem } : {}),
      },
    };
  }

  summary(collections: CollectionT[]): Record<string, unknown>[] {
    return collections.map((c) => {
      const e = this.entries.get(c.id);
      return {
        collection_id: c.id,
        state: e?.state ?? 'unloaded',
        generation: e?.generation ?? 0,
        applied_revision: e?.appliedRevision ?? null,
        ...(e?.lastError ? { last_error: e.lastError } : {}),
        profile: c.search_profile,
        live_rows: e?.index?.size ?? c.face_count,
        physical_rows: e?.index?.allocatedRows ?? 0,
        capacity_rows: c.capacity_rows,
        tombstone_rows: 0,
        reallocations: e?.index?.reallocations ?? 0,
        memory_bytes: e?.index?.bytes ?? 0,
        build_ms: e?.buildMs === undefined ? null : Math.round(e.buildMs * 1000) / 1000,
        snapshot: e
          ? {
              loaded_from: e.snapshot.loadedFrom,
              revision: e.snapshot.revision,
              changes_since: e.snapshot.changes,
              verified: e.snapshot.verified,
              ...(e.snapshot.problem ? { problem: e.snapshot.problem } : {}),
              ...(e.snapshot.writeError ? { write_error: e.snapshot.writeError } : {}),
            }
          : null,
        index_type: c.search_index.type,
        index_status: this.status(c),
      };
    });
  }
}
