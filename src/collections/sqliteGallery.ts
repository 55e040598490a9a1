import type { CollectionT } from '../contract/collections.js';
import { Errors } from '../contract/errors.js';
import type { IndexRow } from '../search/collectionIndex.js';
import type { SearchIndexes } from '../search/indexManager.js';
import { nowIso, type CollectionStore, type NewCollection, type StoredPerson } from './collectionStore.js';
import type { CollectionPurger } from './collectionPurger.js';
import type { FaceInput, GalleryWriter, ImportBatchPerson, NewPersonRow } from './galleryWriter.js';

/** Settings whose change reconfigures a loaded index. */
const INDEX_SETTINGS = [
  'capacity_rows',
  'load_policy',
  'search_index',
  'hnsw_connectivity',
  'hnsw_expansion_add',
  'hnsw_expansion_search',
];

/**
 * The one-box gallery: the local SQLite file is the gallery. Each write is one BEGIN IMMEDIATE
 * transaction (better-sqlite3 is synchronous, so nothing interleaves between a check and its write),
 * then the search index gets the commit before the promise resolves.
 */
export class SqliteGallery implements GalleryWriter {
  readonly engine = 'sqlite' as const;

  constructor(
    private readonly store: CollectionStore,
    private readonly indexes: SearchIndexes,
    /** Collections of at least `minRows` persons + faces are deleted in the background by `purger`. */
    private readonly purge: { purger: CollectionPurger; minRows: number } | null = null,
  ) {}

  private collection(id: string): CollectionT {
    const c = this.store.getCollection(id);
    if (!c) throw Errors.collectionNotFound(id);
    return c;
  }

  private person(collectionId: string, personId: string): StoredPerson {
    const p = this.store.getPerson(collectionId, personId);
    if (!p) throw Errors.personNotFound(personId);
    return p;
  }

  async createCollection(n: NewCollection): Promise<boolean> {
    // The rows of a deleted collection of this id still carry it until purged.
    await this.purge?.purger.finish(n.id as string);
    return this.store.insertCollection(n);
  }

  async updateCollection(id: string, columns: (c: CollectionT) => Record<string, string | number>): Promise<void> {
    this.store.transaction(() => {
      const cols = columns(this.collection(id));
      this.store.updateCollection(id, cols);
      // Inside the transaction: an index that cannot take the new settings leaves them unchanged.
      if (INDEX_SETTINGS.some((k) => k in cols)) this.indexes.configure(this.collection(id));
    });
  }

  /**
   * A large collection (at least `purge.minRows` persons + faces) is gone from every answer at once, its rows
   * are deleted in the background in short batches (CollectionPurger); a small one in this transaction.
   */
  async deleteCollection(id: string, check: (c: CollectionT) => void): Promise<void> {
    const c = this.collection(id);
    if (this.purge && c.person_count + c.face_count >= this.purge.minRows) {
      this.store.detachCollection(id, check);
      this.indexes.drop(id);
      void this.purge.purger.wake();
      return;
    }
    this.store.transaction(() => {
      check(this.collection(id));
      this.store.deleteCollection(id);
    });
    this.indexes.drop(id);
  }

  async addFaces(
    collectionId: string,
    target: { create: NewPersonRow } | { personId: string },
    faces: FaceInput[],
    check: (c: CollectionT, currentFaces: number) => void,
  ): Promise<{ personId: string; faceIds: string[] }> {
    const s = this.store;
    const result = s.transaction(() => {
      const col = this.collection(collectionId);
      let personSeq: number, personId: string;
      if ('create' in target) {
        const p = target.create;
        if (s.getPerson(collectionId, p.id)) throw Errors.personExists({ id: p.id });
        if (p.external_id !== null && s.externalIdTaken(collectionId, p.external_id))
          throw Errors.personExists({ externalId: p.external_id });
        check(col, 0);
        personSeq = s.insertPerson(collectionId, p, faces[0]?.createdAt ?? nowIso());
        personId = p.id;
      } else {
        const p = this.person(collectionId, target.personId);
        check(col, p.person.face_count);
        personSeq = p.seq;
        personId = p.person.id;
      }
      const rows: IndexRow[] = [];
      for (const f of faces) {
        const seq = s.insertFace(collectionId, { ...f, personSeq, crop: col.save_face_crops ? f.crop : null });
        rows.push({ faceKey: seq, personKey: personSeq, vector: f.embedding });
      }
      if (faces.length > 0) {
        if (!('create' in target)) s.touchPerson(personSeq, faces[0]!.createdAt);
        s.bumpSearchRevision(collectionId);
      }
      return { before: col.search_revision, after: this.collection(collectionId), rows, personId };
    });
    if (result.rows.length > 0) this.indexes.applyCommitted(result.after, result.before, { add: result.rows });
    return { personId: result.personId, faceIds: faces.map((f) => f.id) };
  }

  async updatePerson(
    collectionId: string,
    personId: string,
    columns: (p: StoredPerson) => Record<string, string | null>,
  ): Promise<void> {
    this.store.transaction(() => {
      this.collection(collectionId);
      const p = this.person(collectionId, personId);
      const cols = columns(p);
      if (Object.keys(cols).length === 0) return;
      if (
        cols.external_id !== undefined &&
        cols.external_id !== null &&
        this.store.externalIdTaken(collectionId, cols.external_id, p.seq)
      ) {
        throw Errors.externalIdExists(cols.external_id);
      }
      this.store.updatePerson(p.seq, cols);
    });
  }

  async deletePerson(collectionId: string, personId: string): Promise<void> {
    const { after, before, removed } = this.store.transaction(() => {
      const c = this.collection(collectionId);
      const { seq } = this.person(collectionId, personId);
      const removed = this.store.deletePerson(seq);
      this.store.bumpSearchRevision(collectionId);
      return { after: this.collection(collectionId), before: c.search_revision, removed };
    });
    this.indexes.applyCommitted(after, before, { remove: removed });
  }

  async deleteFace(collectionId: string, personId: string, faceId: string): Promise<void> {
    const { after, before, faceSeq } = this.store.transaction(() => {
      const c = this.collection(collectionId);
      const { seq } = this.person(collectionId, personId);
      const face = this.store.getFace(seq, faceId);
      if (!face) throw Errors.faceNotFound({ faceId });
      this.store.deleteFace(face.seq);
      this.store.touchPerson(seq, nowIso());
      this.store.bumpSearchRevision(collectionId);
      return { after: this.collection(collectionId), before: c.search_revision, faceSeq: face.seq };
    });
    this.indexes.applyCommitted(after, before, { remove: [faceSeq] });
  }

  async importBatch(
    collectionId: string,
    batch: ImportBatchPerson[],
    check: (c: CollectionT) => void,
    newId: () => string,
  ): Promise<number> {
    const store = this.store;
    // The previous batch's checkpoint runs in a worker while this batch was read; waiting for it here
    // keeps the WAL at about one batch (SQLite starts it over when a write finds it fully checkpointed).
    await store.bulkReady();
    const result = store.bulkTransaction(() => {
      const c = this.collection(collectionId);
      check(c);
      const ids = new Set<string>(),
        externals = new Set<string>();
      const taken = store.takenPersonKeys(
        c.id,
        batch.map((p) => p.id),
        batch.flatMap((p) => (p.external_id === null ? [] : [p.external_id])),
      );
      for (const p of batch) {
        if (p.embeddings.length > c.max_faces_per_person) {
          throw Errors.personFaceLimitExceeded(c.max_faces_per_person, p.embeddings.length).withDetails({
            person_id: p.id,
          });
        }
        if (ids.has(p.id) || taken.ids.has(p.id)) throw Errors.personExists({ id: p.id });
        ids.add(p.id);
        if (p.external_id !== null) {
          if (externals.has(p.external_id) || taken.externals.has(p.external_id))
            throw Errors.personExists({ externalId: p.external_id });
          externals.add(p.external_id);
        }
      }
      const { personSeqs, faceSeqs } = store.insertImportBatch(c, batch, nowIso(), newId);
      const rows: IndexRow[] = new Array(faceSeqs.length);
      let k = 0;
      batch.forEach((p, i) => {
        for (const vector of p.embeddings) rows[k] = { faceKey: faceSeqs[k++]!, personKey: personSeqs[i]!, vector };
      });
      return { before: c.search_revision, after: this.collection(c.id), rows };
    });
    // Searchable before the batch is acknowledged (as every other write).
    this.indexes.applyCommitted(result.after, result.before, { add: result.rows });
    return result.rows.length;
  }
}
