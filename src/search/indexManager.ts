import type { CollectionT, SearchProfile } from '../contract/collections.js';
import { Errors } from '../contract/errors.js';
import { CollectionIndex, type IndexRow } from './collectionIndex.js';
import { profileCodec } from './profiles.js';

export type IndexState = 'unloaded' | 'building' | 'ready' | 'dirty' | 'failed';

interface Entry {
  index: CollectionIndex | null;
  state: IndexState;
  generation: number;
  appliedRevision: number;
  lastError?: string;
  buildMs?: number;
}

export interface VectorSource { vectors(collectionId: string): Iterable<IndexRow> }
export interface IndexChange { add?: IndexRow[]; remove?: number[] }

/**
 * The in-memory indexes of all collections. SQLite is authoritative: an index is (re)built from it on
 * first use, at startup for eager collections, and whenever it is found behind the committed
 * search_revision. Writes commit first, then update the index before the response returns, so an
 * acknowledged add is searchable and an acknowledged delete is gone.
 */
export class SearchIndexes {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly source: VectorSource, private readonly threads = 0) {}

  private entry(id: string): Entry {
    let e = this.entries.get(id);
    if (!e) {
      e = { index: null, state: 'unloaded', generation: 0, appliedRevision: -1 };
      this.entries.set(id, e);
    }
    return e;
  }

  /** An index at the collection's committed revision, built from SQLite when needed; 503 when that fails. */
  ready(c: CollectionT): CollectionIndex {
    const e = this.entry(c.id);
    if (e.index && e.state === 'ready' && e.appliedRevision === c.search_revision) return e.index;
    return this.build(c, e);
  }

  private build(c: CollectionT, e: Entry): CollectionIndex {
    e.state = e.index ? 'dirty' : 'building';
    const t0 = performance.now();
    try {
      const index = new CollectionIndex(profileCodec(c.search_profile as SearchProfile), c.embedding_dimension, Math.max(c.capacity_rows, c.face_count), this.threads);
      let batch: IndexRow[] = [];
      for (const row of this.source.vectors(c.id)) {
        batch.push(row);
        if (batch.length === 4096) {
          index.add(batch);
          batch = [];
        }
      }
      index.add(batch);
      e.index = index;
      e.state = 'ready';
      e.generation++;
      e.appliedRevision = c.search_revision;
      e.buildMs = performance.now() - t0;
      delete e.lastError;
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
      if (e.state !== 'ready' || e.appliedRevision !== revisionBefore) throw new Error('index behind the committed revision');
      if (change.remove?.length) e.index.remove(change.remove);
      if (change.add?.length) e.index.add(change.add);
      e.appliedRevision = after.search_revision;
    } catch {
      try {
        this.build(after, e);
      } catch {
        throw Errors.searchIndexUnavailable(after.id, { revision: after.search_revision });
      }
    }
  }

  /** Capacity or load-policy changes. A lazy collection's index is released and rebuilt on next use. */
  configure(c: CollectionT): void {
    const e = this.entries.get(c.id);
    if (c.load_policy === 'lazy') {
      if (e) this.entries.delete(c.id);
      return;
    }
    if (e?.index && e.state === 'ready') e.index.setCapacity(Math.max(c.capacity_rows, e.index.size));
    else this.ready(c);
  }

  drop(id: string): void {
    this.entries.delete(id);
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

  summary(collections: CollectionT[]): Record<string, unknown>[] {
    return collections.map((c) => {
      const e = this.entries.get(c.id);
      return {
        collection_id: c.id, state: e?.state ?? 'unloaded', generation: e?.generation ?? 0, applied_revision: e?.appliedRevision ?? null,
        ...(e?.lastError ? { last_error: e.lastError } : {}), profile: c.search_profile, live_rows: e?.index?.size ?? c.face_count,
        physical_rows: e?.index?.allocatedRows ?? 0, capacity_rows: c.capacity_rows, tombstone_rows: 0, reallocations: e?.index?.reallocations ?? 0,
        memory_bytes: e?.index?.bytes ?? 0, build_ms: e?.buildMs === undefined ? null : Math.round(e.buildMs * 1000) / 1000,
      };
    });
  }
}
