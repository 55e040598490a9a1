import type { CollectionT } from '../contract/collections.js';
import type { NewCollection, NewFace, StoredPerson } from './collectionStore.js';

export interface NewPersonRow {
  id: string;
  name: string | null;
  external_id: string | null;
  metadata: Record<string, unknown>;
}
export type FaceInput = Omit<NewFace, 'personSeq'>;
export interface ImportBatchPerson {
  id: string;
  name: string | null;
  external_id: string | null;
  metadata: Record<string, unknown>;
  embeddings: Float32Array[];
  /** crops[i]: the JPEG of embeddings[i] from a gallery export, kept when the collection saves crops. */
  crops?: (Uint8Array | null)[];
}

/**
 * Every gallery write, engine-neutral: the collection, person and import services call this and never
 * know which engine holds the gallery. Each method is one transaction of its engine that takes the
 * collection (SQLite: BEGIN IMMEDIATE; PostgreSQL: the collection row FOR UPDATE), runs the caller's
 * check on the collection as locked, writes, and commits; it returns only once this box's SQLite copy and
 * search index have the commit, so a write is searchable on this box when it is acknowledged and every
 * read after it (the services read the local SQLite file on both engines) sees it.
 *
 * Implementations: SqliteGallery (one box: the local file is the gallery) and PgGallery (fleet mode:
 * PostgreSQL is the gallery; the box's follower applies the commit to the local replica and index before
 * the method returns). Chosen once, at composition (src/cli/serve.ts).
 *
 * Checks (404s, limits, uniqueness) that the engine can do are done here in the same order on both; the
 * callbacks carry the service's own rules (model binding, capacity, contract) onto the locked row.
 */
export interface GalleryWriter {
  readonly engine: 'sqlite' | 'postgres';
  /** False when the id is taken. */
  createCollection(n: NewCollection): Promise<boolean>;
  /** `columns` sees the locked collection and returns the columns to change (empty: nothing written). 404 when unknown. */
  updateCollection(id: string, columns: (c: CollectionT) => Record<string, string | number>): Promise<void>;
  /** `check` sees the locked collection and throws to refuse. Persons, faces and crops go with it. */
  deleteCollection(id: string, check: (c: CollectionT) => void): Promise<void>;
  /**
   * Registration's write: the person (new: 409 person_exists when the id or external_id is taken; existing:
   * 404 when gone) and its accepted faces. `check` sees the locked collection and the person's current
   * face count and throws for limits.
   */
  addFaces(
    collectionId: string,
    target: { create: NewPersonRow } | { personId: string },
    faces: FaceInput[],
    check: (c: CollectionT, currentFaces: number) => void,
  ): Promise<{ personId: string; faceIds: string[] }>;
  /** Person patch: `columns` sees the locked person; a taken external_id is 409 external_id_exists. */
  updatePerson(
    collectionId: string,
    personId: string,
    columns: (p: StoredPerson) => Record<string, string | null>,
  ): Promise<void>;
  deletePerson(collectionId: string, personId: string): Promise<void>;
  deleteFace(collectionId: string, personId: string, faceId: string): Promise<void>;
  /** A bulk-import batch, all or nothing; `check` sees the locked collection. Returns the faces added. */
  importBatch(
    collectionId: string,
    batch: ImportBatchPerson[],
    check: (c: CollectionT) => void,
    newId: () => string,
  ): Promise<number>;
}
