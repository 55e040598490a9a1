import type { CollectionT, PersonT } from '../contract/collections.js';
import type { FaceService } from '../inference/faceService.js';
import type { CollectionIndex, RowHit } from '../search/collectionIndex.js';
import type { SearchIndexes } from '../search/indexManager.js';
import { clipSimilarity } from '../search/profiles.js';
import type { CollectionStore } from './collectionStore.js';
import { detectionProfileOf, type CollectionService } from './collectionService.js';

export interface SearchMatch {
  person: PersonT;
  similarity: number;
  matched_face_id: string;
}

/**
 * 1:N identification: the collection's detection profile picks the query face, one exact grouped scan
 * scores every person by its best face sample, and the inclusive threshold applies to the unrounded
 * score. Results are sorted by similarity, then person id.
 */
export class SearchService {
  /** Told the duration of every index scan (metrics): op is search (API) or identify (monitors). */
  observer: ((op: 'search' | 'identify', collectionId: string, seconds: number) => void) | null = null;

  constructor(
    private readonly collections: CollectionService,
    private readonly store: CollectionStore,
    private readonly indexes: SearchIndexes,
    private readonly faces: FaceService,
  ) {}

  async search(
    input: { collectionId: string; image: Uint8Array; limit: number; threshold?: number | null },
    signal?: AbortSignal,
  ) {
    const before = this.collections.getBound(input.collectionId);
    const query = await this.faces.embedOne({ image: input.image, profile: detectionProfileOf(before) }, signal);
    // Re-read after inference (the race it guards): a collection force-deleted or re-pinned meanwhile is a
    // clean 404/409, never a stale index; a threshold patched meanwhile applies.
    const c = this.collections.getBound(input.collectionId);
    const threshold = input.threshold ?? c.default_threshold;
    return {
      query,
      threshold,
      matches: this.matches(this.indexes.ready(c), query.face.embedding, input.limit, threshold, c.id),
    };
  }

  /**
   * Multi-face search (`faces=all`): every detected face is searched on its own with the same limit and
   * threshold. A face that cannot be searched (liveness in normal mode, no embedding) gets its problem
   * and no matches, and the other faces still get theirs.
   */
  async searchAll(
    input: { collectionId: string; image: Uint8Array; limit: number; threshold?: number | null },
    signal?: AbortSignal,
  ) {
    const before = this.collections.getBound(input.collectionId);
    const analyzed = await this.faces.embedAll({ image: input.image, profile: detectionProfileOf(before) }, signal);
    const c = this.collections.getBound(input.collectionId);
    const threshold = input.threshold ?? c.default_threshold;
    const index = this.indexes.ready(c);
    const results = analyzed.faces.map((face) => {
      const problem = this.faces.faceProblem(face);
      return problem || !face.embedding
        ? { face, matches: [], problem }
        : { face, matches: this.matches(index, face.embedding, input.limit, threshold, c.id), problem: null };
    });
    return { width: analyzed.width, height: analyzed.height, selected: analyzed.selected, threshold, results };
  }

  /** The persons at or above `threshold` (unrounded), best first, then by person id. */
  private matches(
    index: ReturnType<SearchIndexes['ready']>,
    embedding: Float32Array,
    limit: number,
    threshold: number,
    collectionId = '',
    op: 'search' | 'identify' = 'search',
  ): SearchMatch[] {
    const started = performance.now();
    const hits = tiedPersons(index, embedding, limit, threshold);
    this.observer?.(op, collectionId, (performance.now() - started) / 1000);
    const persons = this.store.personsBySeq(hits.map((h) => h.personKey));
    const faceIds = this.store.faceIdsBySeq(hits.map((h) => h.faceKey));
    const matches: (SearchMatch & { score: number })[] = [];
    for (const h of hits) {
      const p = persons.get(h.personKey),
        f = faceIds.get(h.faceKey);
      if (p && f)
        matches.push({ person: p.person, similarity: clipSimilarity(h.score), matched_face_id: f, score: h.score });
    }
    matches.sort((a, b) => b.score - a.score || (a.person.id < b.person.id ? -1 : a.person.id > b.person.id ? 1 : 0));
    return matches.slice(0, limit).map(({ score: _score, ...m }) => m);
  }

  /**
   * Best person (at or above `threshold`, unrounded) for each embedding, or null: the identification
   * step of RTSP monitors, one grouped top-1 scan per face on the collection's index.
   */
  identify(collection: CollectionT, embeddings: Float32Array[], threshold: number): (SearchMatch | null)[] {
    if (embeddings.length === 0) return [];
    const index = this.indexes.ready(collection);
    const started = performance.now();
    const hits = embeddings.map((e) => {
      const found = tiedPersons(index, e, 1, threshold);
      const top = found.filter((h) => h.score === found[0]!.score);
      return top.length > 1 ? this.lowestPersonId(top) : (top[0] ?? null);
    });
    this.observer?.('identify', collection.id, (performance.now() - started) / 1000);
    const found = hits.filter((h) => h !== null);
    const persons = this.store.personsBySeq(found.map((h) => h.personKey));
    const faceIds = this.store.faceIdsBySeq(found.map((h) => h.faceKey));
    return hits.map((h) => {
      const p = h && persons.get(h.personKey),
        f = h && faceIds.get(h.faceKey);
      return h && p && f ? { person: p.person, similarity: clipSimilarity(h.score), matched_face_id: f } : null;
    });
  }

  /**
   * The `k` persons most similar to one embedding, best first (then by person id), at any similarity: how a
   * monitor track's pooled template is ranked (its decision applies the threshold and the runner-up margin).
   */
  rank(collection: CollectionT, embedding: Float32Array, k: number): SearchMatch[] {
    return this.matches(this.indexes.ready(collection), embedding, k, -1, collection.id, 'identify');
  }

  /** Of hits tied at the top, the one whose person id sorts first (the contract's tie-break). */
  private lowestPersonId(tied: RowHit[]): RowHit {
    const persons = this.store.personsBySeq(tied.map((h) => h.personKey));
    const id = (h: RowHit) => persons.get(h.personKey)?.person.id;
    return tied.reduce((best, h) => {
      const a = id(h),
        b = id(best);
      return a !== undefined && (b === undefined || a < b) ? h : best;
    });
  }
}

/**
 * The persons at or above `threshold` among the best `limit`, plus every person tied with the `limit`-th:
 * the index breaks ties by its own numeric keys, the contract by person id, so a cut at `limit` before the
 * ids are known could drop a person that sorts first (the caller sorts by similarity, then id, then cuts).
 */
export function tiedPersons(
  index: CollectionIndex,
  embedding: Float32Array,
  limit: number,
  threshold: number,
): RowHit[] {
  for (let k = limit; ; k *= 2) {
    const hits = index.searchPersons(embedding, k, { minScore: threshold }).filter((h) => h.score >= threshold);
    if (hits.length < k || hits[k - 1]!.score !== hits[limit - 1]!.score) return hits;
  }
}
