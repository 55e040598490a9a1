import type { CollectionT, PersonT } from '../contract/collections.js';
import type { FaceService } from '../inference/faceService.js';
import type { SearchIndexes } from '../search/indexManager.js';
import { clipSimilarity } from '../search/profiles.js';
import type { CollectionStore } from './collectionStore.js';
import { detectionProfileOf, type CollectionService } from './collectionService.js';

export interface SearchMatch { person: PersonT; similarity: number; matched_face_id: string }

/**
 * 1:N identification: the collection's detection profile picks the query face, one exact grouped scan
 * scores every person by its best face sample, and the inclusive threshold applies to the unrounded
 * score. Results are sorted by similarity, then person id.
 */
export class SearchService {
  constructor(
    private readonly collections: CollectionService,
    private readonly store: CollectionStore,
    private readonly indexes: SearchIndexes,
    private readonly faces: FaceService,
  ) {}

  async search(input: { collectionId: string; image: Uint8Array; limit: number; threshold?: number | null }, signal?: AbortSignal) {
    const before = this.collections.getBound(input.collectionId);
    const query = await this.faces.embedOne({ image: input.image, profile: detectionProfileOf(before) }, signal);
    // Re-read after inference (the race it guards): a collection force-deleted or re-pinned meanwhile is a
    // clean 404/409, never a stale index; a threshold patched meanwhile applies.
    const c = this.collections.getBound(input.collectionId);
    const threshold = input.threshold ?? c.default_threshold;
    const index = this.indexes.ready(c);
    const hits = index.searchPersons(query.face.embedding, input.limit, { minScore: threshold }).filter((h) => h.score >= threshold);
    const persons = this.store.personsBySeq(hits.map((h) => h.personKey));
    const faceIds = this.store.faceIdsBySeq(hits.map((h) => h.faceKey));
    const matches: (SearchMatch & { score: number })[] = [];
    for (const h of hits) {
      const p = persons.get(h.personKey), f = faceIds.get(h.faceKey);
      if (p && f) matches.push({ person: p.person, similarity: clipSimilarity(h.score), matched_face_id: f, score: h.score });
    }
    matches.sort((a, b) => b.score - a.score || (a.person.id < b.person.id ? -1 : a.person.id > b.person.id ? 1 : 0));
    return { query, threshold, matches: matches.slice(0, input.limit).map(({ score: _score, ...m }) => m) };
  }

  /**
   * Best person (at or above `threshold`, unrounded) for each embedding, or null: the identification
   * step of RTSP monitors, one grouped top-1 scan per face on the collection's index.
   */
  identify(collection: CollectionT, embeddings: Float32Array[], threshold: number): (SearchMatch | null)[] {
    if (embeddings.length === 0) return [];
    const index = this.indexes.ready(collection);
    const hits = embeddings.map((e) => index.searchPersons(e, 1, { minScore: threshold }).find((h) => h.score >= threshold) ?? null);
    const found = hits.filter((h) => h !== null);
    const persons = this.store.personsBySeq(found.map((h) => h.personKey));
    const faceIds = this.store.faceIdsBySeq(found.map((h) => h.faceKey));
    return hits.map((h) => {
      const p = h && persons.get(h.personKey), f = h && faceIds.get(h.faceKey);
      return h && p && f ? { person: p.person, similarity: clipSimilarity(h.score), matched_face_id: f } : null;
    });
  }
}
