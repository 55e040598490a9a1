import { randomBytes } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { CollectionT, FaceSampleT, PersonT, SearchIndexSettingsT } from '../contract/collections.js';
import type { DetectionProfile } from '../inference/pipeline.js';
import { Errors } from '../contract/errors.js';
import type { Db } from '../store/database.js';
import { WalCheckpointer } from '../store/walCheckpointer.js';

/** ISO-8601 UTC with milliseconds and Z, as the contract's timestamps. */
export const nowIso = () => new Date().toISOString();

export interface CollectionRow {
  id: string;
  name: string;
  description: string;
  default_threshold: number;
  model_id: string;
  model_digest: string;
  embedding_dimension: number;
  preprocessing_version: string;
  embedding_contract_id: string;
  search_profile: string;
  capacity_rows: number;
  max_faces_per_person: number;
  load_policy: 'eager' | 'lazy';
  search_revision: number;
  save_face_crops: number;
  metadata_json: string;
  detector_input_sizes_json: string;
  detector_threshold: number;
  detector_nms_threshold: number;
  single_face_selection: 'largest' | 'center_largest';
  detection_revision: number;
  person_count: number;
  face_count: number;
  created_at: string;
  updated_at: string;
  search_index: 'exact' | 'hnsw';
  hnsw_connectivity: number;
  hnsw_expansion_add: number;
  hnsw_expansion_search: number;
}
export interface PersonRow {
  seq: number;
  collection_id: string;
  id: string;
  name: string | null;
  external_id: string | null;
  metadata_json: string;
  face_count: number;
  created_at: string;
  updated_at: string;
}
export interface FaceRow {
  seq: number;
  id: string;
  person_id: string;
  bounding_box_json: string;
  landmarks_json: string | null;
  detection_score: number;
  quality_json: string;
  model_id: string;
  model_digest: string;
  preprocessing_version: string;
  embedding_source: 'server' | 'external_trusted';
  embedding_contract_id: string | null;
  has_crop: number;
  liveness_json: string | null;
  created_at: string;
}

export interface StoredPerson {
  seq: number;
  person: PersonT;
}
export interface StoredFace {
  seq: number;
  face: FaceSampleT;
}

/** Everything a new face sample row holds. */
export interface NewFace {
  id: string;
  personSeq: number;
  embedding: Float32Array;
  face: Omit<FaceSampleT, 'id' | 'person_id' | 'has_crop' | 'created_at'>;
  crop: Buffer | null;
  createdAt: string;
}

export interface NewCollection extends Omit<
  CollectionT,
  'person_count' | 'face_count' | 'search_revision' | 'detection_revision' | 'detection' | 'search_index'
> {
  detection: DetectionProfile;
  /** Absent: exact, with usearch's default graph parameters. */
  search_index?: SearchIndexSettingsT;
}

const EXACT_INDEX: SearchIndexSettingsT = {
  type: 'exact',
  hnsw: { connectivity: 16, expansion_add: 128, expansion_search: 64 },
};

/** The collections columns of a search index setting. */
export const indexColumns = (s: SearchIndexSettingsT) => ({
  search_index_type: s.type,
  hnsw_connectivity: s.hnsw.connectivity,
  hnsw_expansion_add: s.hnsw.expansion_add,
  hnsw_expansion_search: s.hnsw.expansion_search,
});

export function collectionFromRow(r: CollectionRow): CollectionT {
  return {
    id: r.id,
    name: r.name,
    description: r.description,
    default_threshold: r.default_threshold,
    model_id: r.model_id,
    model_digest: r.model_digest,
    embedding_dimension: r.embedding_dimension,
    preprocessing_version: r.preprocessing_version,
    embedding_contract_id: r.embedding_contract_id,
    search_profile: r.search_profile,
    capacity_rows: r.capacity_rows,
    max_faces_per_person: r.max_faces_per_person,
    load_policy: r.load_policy,
    search_revision: r.search_revision,
    save_face_crops: r.save_face_crops === 1,
    metadata: JSON.parse(r.metadata_json) as Record<string, unknown>,
    person_count: r.person_count,
    face_count: r.face_count,
    created_at: r.created_at,
    updated_at: r.updated_at,
    detection: {
      input_sizes: JSON.parse(r.detector_input_sizes_json) as number[][],
      threshold: r.detector_threshold,
      nms_threshold: r.detector_nms_threshold,
      single_face_selection: r.single_face_selection,
    },
    detection_revision: r.detection_revision,
    search_index: {
      type: r.search_index,
      hnsw: {
        connectivity: r.hnsw_connectivity,
        expansion_add: r.hnsw_expansion_add,
        expansion_search: r.hnsw_expansion_search,
      },
    },
  };
}

export const personFromRow = (r: PersonRow): PersonT => ({
  id: r.id,
  name: r.name,
  external_id: r.external_id,
  metadata: JSON.parse(r.metadata_json) as Record<string, unknown>,
  face_count: r.face_count,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export function faceFromRow(r: FaceRow): FaceSampleT {
  const face: FaceSampleT = {
    id: r.id,
    person_id: r.person_id,
    bounding_box: JSON.parse(r.bounding_box_json) as FaceSampleT['bounding_box'],
    landmarks: r.landmarks_json === null ? null : (JSON.parse(r.landmarks_json) as number[][]),
    detection_score: r.detection_score,
    quality: JSON.parse(r.quality_json) as FaceSampleT['quality'],
    model_id: r.model_id,
    model_digest: r.model_digest,
    preprocessing_version: r.preprocessing_version,
    embedding_source: r.embedding_source,
    embedding_contract_id: r.embedding_contract_id,
    has_crop: r.has_crop === 1,
    created_at: r.created_at,
  };
  if (r.liveness_json !== null) face.liveness = JSON.parse(r.liveness_json) as FaceSampleT['liveness'];
  return face;
}

export const FACE_COLUMNS = `f.seq, f.id, p.id AS person_id, f.bounding_box_json, f.landmarks_json, f.detection_score, f.quality_json, f.model_id,
  f.model_digest, f.preprocessing_version, f.embedding_source, f.embedding_contract_id, f.crop_image IS NOT NULL AS has_crop, f.liveness_json, f.created_at`;

const IMPORTED_BOX = JSON.stringify({
  pixels: { x: 0, y: 0, width: 0, height: 0 },
  normalized: { left: 0, top: 0, width: 0, height: 0 },
});
const IMPORTED_QUALITY = JSON.stringify({ score: 0, sharpness: 0, brightness: 0, pose: 0 });
/** Rows per multi-row INSERT of a bulk import (better-sqlite3 binds 3 values per face row: well under SQLite's 32766). */
const IMPORT_ROWS = 64;

const REPLICA_COLLECTION_COLUMNS = new Set([
  'id',
  'name',
  'description',
  'default_threshold',
  'model_id',
  'model_digest',
  'embedding_dimension',
  'preprocessing_version',
  'embedding_contract_id',
  'search_profile',
  'capacity_rows',
  'max_faces_per_person',
  'load_policy',
  'save_face_crops',
  'metadata_json',
  'detector_input_sizes_json',
  'detector_threshold',
  'detector_nms_threshold',
  'single_face_selection',
  'detection_revision',
  'created_at',
  'updated_at',
  'search_index',
  'hnsw_connectivity',
  'hnsw_expansion_add',
  'hnsw_expansion_search',
  'index_epoch',
]);
const REPLICA_FACE_COLUMNS = [
  'seq',
  'id',
  'collection_id',
  'person_seq',
  'embedding',
  'embedding_dimension',
  'bounding_box_json',
  'landmarks_json',
  'detection_score',
  'quality_json',
  'model_id',
  'model_digest',
  'preprocessing_version',
  'embedding_source',
  'embedding_contract_id',
  'crop_image',
  'crop_media_type',
  'liveness_json',
  'created_at',
];

export const embeddingToBlob = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
export function blobToEmbedding(b: Buffer): Float32Array {
  const out = new Float32Array(b.byteLength / 4);
  Buffer.from(out.buffer).set(b);
  return out;
}

/**
 * SQL for collections, persons and face samples. Synchronous (better-sqlite3): callers group writes in
 * `transaction()`, and nothing awaits inside one, so a check and the write it guards cannot interleave
 * with another request.
 */
export class CollectionStore {
  constructor(private readonly db: Db) {
    // SQLite's lower() folds ASCII only; person search must be case-insensitive for "Émile" too.
    db.function('unicode_lower', { deterministic: true }, (v: unknown) =>
      typeof v === 'string' ? v.toLowerCase() : null,
    );
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  /**
   * A large write transaction (a bulk import batch) with a 64 MiB page cache while it runs: the face
   * table's indexes of a large gallery no longer fit SQLite's default 2 MiB and every insert re-read
   * index pages. The cache is set back afterwards, so idle memory stays as it was. The connection's
   * automatic WAL checkpoint is off for its commit: a WalCheckpointer copies the batch into the database
   * file in a worker thread afterwards (call bulkReady() before the next batch). The commit itself still
   * syncs the WAL (synchronous = FULL): what it returns is durable.
   */
  bulkTransaction<T>(fn: () => T): T {
    const before = this.db.pragma('cache_size', { simple: true }) as number;
    const checkpointer = this.db.memory ? null : (this.checkpointer ??= new WalCheckpointer(this.db.name));
    const autoCheckpoint = this.db.pragma('wal_autocheckpoint', { simple: true }) as number;
    this.db.pragma('cache_size = -65536');
    if (checkpointer) this.db.pragma('wal_autocheckpoint = 0');
    try {
      return this.db.transaction(fn).immediate();
    } finally {
      this.db.pragma(`cache_size = ${before}`);
      if (checkpointer) {
        this.db.pragma(`wal_autocheckpoint = ${autoCheckpoint}`);
        checkpointer.request();
      }
    }
  }

  /** Resolves once the checkpoint of the last bulk transaction is done (the WAL then starts over instead of growing). */
  bulkReady(): Promise<void> {
    return this.checkpointer?.idle() ?? Promise.resolve();
  }

  /** The bulk import's WAL checkpointer (started by the first bulk transaction of a file database). */
  checkpointer?: WalCheckpointer;

  // ---- collections ----

  getCollection(id: string): CollectionT | null {
    const r = this.db.prepare('SELECT * FROM collections WHERE id = ?').get(id) as CollectionRow | undefined;
    return r ? collectionFromRow(r) : null;
  }

  listCollections(after: string | null, limit: number): CollectionT[] {
    return (
      this.db
        .prepare('SELECT * FROM collections WHERE id > ? ORDER BY id LIMIT ?')
        .all(after ?? '', limit) as CollectionRow[]
    ).map(collectionFromRow);
  }

  allCollections(): CollectionT[] {
    return (this.db.prepare('SELECT * FROM collections ORDER BY id').all() as CollectionRow[]).map(collectionFromRow);
  }

  /** False when the id is taken. */
  insertCollection(c: NewCollection): boolean {
    const r = this.db
      .prepare(
        `INSERT INTO collections (id, name, description, default_threshold, model_id, model_digest, embedding_dimension,
      preprocessing_version, embedding_contract_id, search_profile, capacity_rows, max_faces_per_person, load_policy, save_face_crops,
      metadata_json, detector_input_sizes_json, detector_threshold, detector_nms_threshold, single_face_selection, created_at, updated_at,
      search_index, hnsw_connectivity, hnsw_expansion_add, hnsw_expansion_search, index_epoch)
      VALUES (@id, @name, @description, @default_threshold, @model_id, @model_digest, @embedding_dimension, @preprocessing_version,
      @embedding_contract_id, @search_profile, @capacity_rows, @max_faces_per_person, @load_policy, @save_face_crops, @metadata_json,
      @detector_input_sizes_json, @detector_threshold, @detector_nms_threshold, @single_face_selection, @created_at, @updated_at,
      @search_index_type, @hnsw_connectivity, @hnsw_expansion_add, @hnsw_expansion_search, @index_epoch)
      ON CONFLICT (id) DO NOTHING`,
      )
      .run({
        ...c,
        search_index: undefined,
        ...indexColumns(c.search_index ?? EXACT_INDEX),
        index_epoch: randomBytes(16).toString('hex'),
        save_face_crops: c.save_face_crops ? 1 : 0,
        metadata_json: JSON.stringify(c.metadata),
        detector_input_sizes_json: JSON.stringify(c.detection.input_sizes),
        detector_threshold: c.detection.threshold,
        detector_nms_threshold: c.detection.nms_threshold,
        single_face_selection: c.detection.single_face_selection,
      });
    return r.changes === 1;
  }

  /** Writes changed columns (already validated) and bumps updated_at. */
  updateCollection(id: string, columns: Record<string, string | number>): void {
    const names = Object.keys(columns);
    if (names.length === 0) return;
    const set = [...names.map((n) => `${n} = @${n}`), 'updated_at = @updated_at'].join(', ');
    this.db.prepare(`UPDATE collections SET ${set} WHERE id = @id`).run({ ...columns, updated_at: nowIso(), id });
  }

  /** The incarnation id of a collection id (index files carry it); null when the collection does not exist. */
  indexEpoch(id: string): string | null {
    const r = this.db.prepare('SELECT index_epoch FROM collections WHERE id = ?').get(id) as
      { index_epoch: string } | undefined;
    return r?.index_epoch ?? null;
  }

  /** search_revision + 1 (every index-affecting write), with updated_at. Returns the new revision. */
  bumpSearchRevision(id: string): number {
    const r = this.db
      .prepare(
        'UPDATE collections SET search_revision = search_revision + 1, updated_at = ? WHERE id = ? RETURNING search_revision',
      )
      .get(nowIso(), id) as { search_revision: number };
    return r.search_revision;
  }

  deleteCollection(id: string): boolean {
    return this.db.prepare('DELETE FROM collections WHERE id = ?').run(id).changes === 1;
  }

  // ---- background deletes (collection_purges) ----

  /**
   * Deletes the collection's row in one short transaction but leaves its persons and faces, recorded for
   * purgeBatch: foreign keys are off for it, so nothing cascades (one force delete of a big collection took
   * 14.5 s, the WAL grew by every page it freed). `check` runs inside. A monitor using the collection is
   * refused here, as its RESTRICT key would. Inside an outer transaction the pragma cannot change: the
   * cascade then runs as in deleteCollection and the purge finds nothing left.
   */
  detachCollection(id: string, check: (c: CollectionT) => void): void {
    const switched = !this.db.inTransaction;
    if (switched) this.db.pragma('foreign_keys = OFF');
    try {
      this.transaction(() => {
        const c = this.getCollection(id);
        if (!c) throw Errors.collectionNotFound(id);
        check(c);
        if (this.db.prepare('SELECT 1 FROM monitors WHERE collection_id = ?').get(id)) throw Errors.collectionInUse(id);
        this.db.prepare('DELETE FROM collections WHERE id = ?').run(id);
        this.db
          .prepare(
            'INSERT OR REPLACE INTO collection_purges (collection_id, persons, faces, requested_at) VALUES (?, ?, ?, ?)',
          )
          .run(id, c.person_count, c.face_count, nowIso());
      });
    } finally {
      if (switched) this.db.pragma('foreign_keys = ON');
    }
  }

  /** Collections whose rows are still being deleted, oldest first. */
  pendingPurges(): { collection_id: string; persons: number; faces: number; requested_at: string }[] {
    return this.db.prepare('SELECT * FROM collection_purges ORDER BY requested_at, collection_id').all() as never;
  }

  /**
   * Deletes up to `rows` rows of a detached collection in one transaction, faces first, then persons; returns
   * how many went. 0: nothing was left, and the purge's record is gone too. An id that exists again (only a
   * path that did not wait for the purge) owns those rows now: the purge is given up, nothing is deleted.
   */
  purgeBatch(id: string, rows: number): number {
    return this.transaction(() => {
      let n = 0;
      if (!this.getCollection(id)) {
        n = this.db
          .prepare(
            'DELETE FROM face_samples WHERE seq IN (SELECT seq FROM face_samples WHERE collection_id = ? ORDER BY seq LIMIT ?)',
          )
          .run(id, rows).changes;
        if (n < rows)
          n += this.db
            .prepare(
              'DELETE FROM persons WHERE seq IN (SELECT seq FROM persons WHERE collection_id = ? ORDER BY seq LIMIT ?)',
            )
            .run(id, rows - n).changes;
      }
      if (n === 0) this.db.prepare('DELETE FROM collection_purges WHERE collection_id = ?').run(id);
      return n;
    });
  }

  stats(): { collection_count: number; person_count: number; face_count: number } {
    return this.db
      .prepare(
        'SELECT count(*) AS collection_count, coalesce(sum(person_count), 0) AS person_count, coalesce(sum(face_count), 0) AS face_count FROM collections',
      )
      .get() as never;
  }

  // ---- persons ----

  getPerson(collectionId: string, personId: string): StoredPerson | null {
    const r = this.db
      .prepare('SELECT * FROM persons WHERE collection_id = ? AND id = ?')
      .get(collectionId, personId) as PersonRow | undefined;
    return r ? { seq: r.seq, person: personFromRow(r) } : null;
  }

  personsBySeq(seqs: number[]): Map<number, StoredPerson> {
    const out = new Map<number, StoredPerson>();
    const stmt = this.db.prepare('SELECT * FROM persons WHERE seq = ?');
    for (const seq of seqs) {
      const r = stmt.get(seq) as PersonRow | undefined;
      if (r) out.set(seq, { seq, person: personFromRow(r) });
    }
    return out;
  }

  listPersons(collectionId: string, after: string | null, limit: number, search: string | null): PersonT[] {
    // instr() on lowered text: a plain substring, so % and _ in the query are literal.
    const filter = search
      ? 'AND (instr(unicode_lower(id), @q) > 0 OR instr(unicode_lower(name), @q) > 0 OR instr(unicode_lower(external_id), @q) > 0)'
      : '';
    const rows = this.db
      .prepare(`SELECT * FROM persons WHERE collection_id = @cid AND id > @after ${filter} ORDER BY id LIMIT @limit`)
      .all({
        cid: collectionId,
        after: after ?? '',
        limit,
        ...(search ? { q: search.toLowerCase() } : {}),
      }) as PersonRow[];
    return rows.map(personFromRow);
  }

  externalIdTaken(collectionId: string, externalId: string, exceptSeq?: number): boolean {
    return (
      this.db
        .prepare('SELECT 1 FROM persons WHERE collection_id = ? AND external_id = ? AND seq IS NOT ?')
        .get(collectionId, externalId, exceptSeq ?? null) !== undefined
    );
  }

  insertPerson(
    collectionId: string,
    p: { id: string; name: string | null; external_id: string | null; metadata: Record<string, unknown> },
    at: string,
  ): number {
    const r = this.db
      .prepare(
        `INSERT INTO persons (collection_id, id, name, external_id, metadata_json, created_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(collectionId, p.id, p.name, p.external_id, JSON.stringify(p.metadata), at, at);
    return Number(r.lastInsertRowid);
  }

  updatePerson(seq: number, columns: Record<string, string | null>): void {
    const names = Object.keys(columns);
    const set = [...names.map((n) => `${n} = @${n}`), 'updated_at = @updated_at'].join(', ');
    this.db.prepare(`UPDATE persons SET ${set} WHERE seq = @seq`).run({ ...columns, updated_at: nowIso(), seq });
  }

  touchPerson(seq: number, at: string): void {
    this.db.prepare('UPDATE persons SET updated_at = ? WHERE seq = ?').run(at, seq);
  }

  /** Deletes the person (faces cascade); returns the sequence numbers of the faces that went with it. */
  deletePerson(seq: number): number[] {
    const faces = (
      this.db.prepare('SELECT seq FROM face_samples WHERE person_seq = ?').all(seq) as { seq: number }[]
    ).map((r) => r.seq);
    this.db.prepare('DELETE FROM persons WHERE seq = ?').run(seq);
    return faces;
  }

  // ---- faces ----

  insertFace(collectionId: string, f: NewFace): number {
    const r = this.db
      .prepare(
        `INSERT INTO face_samples (id, collection_id, person_seq, embedding, embedding_dimension, bounding_box_json,
      landmarks_json, detection_score, quality_json, model_id, model_digest, preprocessing_version, embedding_source, embedding_contract_id,
      crop_image, crop_media_type, liveness_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        f.id,
        collectionId,
        f.personSeq,
        embeddingToBlob(f.embedding),
        f.embedding.length,
        JSON.stringify(f.face.bounding_box),
        f.face.landmarks === null ? null : JSON.stringify(f.face.landmarks),
        f.face.detection_score,
        JSON.stringify(f.face.quality),
        f.face.model_id,
        f.face.model_digest,
        f.face.preprocessing_version,
        f.face.embedding_source,
        f.face.embedding_contract_id,
        f.crop,
        f.crop ? 'image/jpeg' : null,
        f.face.liveness ? JSON.stringify(f.face.liveness) : null,
        f.createdAt,
      );
    return Number(r.lastInsertRowid);
  }

  getFace(personSeq: number, faceId: string): StoredFace | null {
    const r = this.db
      .prepare(
        `SELECT ${FACE_COLUMNS} FROM face_samples f JOIN persons p ON p.seq = f.person_seq WHERE f.person_seq = ? AND f.id = ?`,
      )
      .get(personSeq, faceId) as FaceRow | undefined;
    return r ? { seq: r.seq, face: faceFromRow(r) } : null;
  }

  listFaces(personSeq: number, after: string | null, limit: number): FaceSampleT[] {
    return (
      this.db
        .prepare(
          `SELECT ${FACE_COLUMNS} FROM face_samples f JOIN persons p ON p.seq = f.person_seq WHERE f.person_seq = ? AND f.id > ? ORDER BY f.id LIMIT ?`,
        )
        .all(personSeq, after ?? '', limit) as FaceRow[]
    ).map(faceFromRow);
  }

  faceIdsBySeq(seqs: number[]): Map<number, string> {
    const stmt = this.db.prepare('SELECT id FROM face_samples WHERE seq = ?');
    const out = new Map<number, string>();
    for (const s of seqs) {
      const r = stmt.get(s) as { id: string } | undefined;
      if (r) out.set(s, r.id);
    }
    return out;
  }

  faceCrop(seq: number): Buffer | null {
    const r = this.db.prepare('SELECT crop_image FROM face_samples WHERE seq = ?').get(seq) as
      { crop_image: Buffer | null } | undefined;
    return r?.crop_image ?? null;
  }

  deleteFace(seq: number): boolean {
    return this.db.prepare('DELETE FROM face_samples WHERE seq = ?').run(seq).changes === 1;
  }

  /** A person's faces in sequence order, each embedding with its crop (null when it has none): a gallery export's line. */
  personFacesWithCrops(personSeq: number): { embedding: Float32Array; crop: Buffer | null }[] {
    return (
      this.db
        .prepare('SELECT embedding, crop_image FROM face_samples WHERE person_seq = ? ORDER BY seq')
        .all(personSeq) as { embedding: Buffer; crop_image: Buffer | null }[]
    ).map((r) => ({ embedding: blobToEmbedding(r.embedding), crop: r.crop_image }));
  }

  personEmbeddings(personSeq: number): Float32Array[] {
    return (
      this.db.prepare('SELECT embedding FROM face_samples WHERE person_seq = ? ORDER BY seq').all(personSeq) as {
        embedding: Buffer;
      }[]
    ).map((r) => blobToEmbedding(r.embedding));
  }

  /**
   * Inserts one bulk-import batch inside the caller's transaction: the persons (face_count set at once), then
   * their faces, with multi-row INSERTs of IMPORT_ROWS rows whose constant columns are SQL literals (3 bound
   * values per face instead of 10), then the collection's counters and search_revision in one UPDATE. The
   * per-row counter and capacity triggers skip the collection meanwhile (import_counting, migration 0016):
   * its row is held only inside this call, and the capacity backstop is the check on the counters written
   * here. Imported faces have no image: an empty box, no landmarks, zero detection and quality scores.
   * Returns the sequence numbers (AUTOINCREMENT, each statement checked to have taken consecutive ones) and
   * the collection's search_revision after the batch.
   */
  insertImportBatch(
    c: {
      id: string;
      embedding_dimension: number;
      model_id: string;
      model_digest: string;
      preprocessing_version: string;
      embedding_contract_id: string;
      /** Keep the persons' crops (a gallery export's); without it they are dropped. */
      save_face_crops?: boolean;
    },
    persons: {
      id: string;
      name: string | null;
      external_id: string | null;
      metadata: Record<string, unknown>;
      embeddings: Float32Array[];
      crops?: (Uint8Array | null)[];
    }[],
    at: string,
    newId: () => string,
  ): { personSeqs: number[]; faceSeqs: number[]; searchRevision: number } {
    const lit = (v: string | number) => (typeof v === 'number' ? String(v) : `'${v.replaceAll("'", "''")}'`);
    const personRow = `(${lit(c.id)}, ?, ?, ?, ?, ?, ${lit(at)}, ${lit(at)})`;
    // Crop columns only for a batch that keeps crops: the usual crop-less batch binds 3 values per face.
    const crops = c.save_face_crops === true && persons.some((p) => p.crops?.some((x) => x !== null));
    const faceRow =
      `(?, ${lit(c.id)}, ?, ?, ${lit(c.embedding_dimension)}, ${lit(IMPORTED_BOX)}, NULL, 0, ${lit(IMPORTED_QUALITY)}, ${lit(c.model_id)}, ${lit(c.model_digest)}, ` +
      `${lit(c.preprocessing_version)}, 'external_trusted', ${lit(c.embedding_contract_id)}, ${lit(at)}${crops ? ', ?, ?' : ''})`;
    const personSql = (m: number) =>
      `INSERT INTO persons (collection_id, id, name, external_id, metadata_json, face_count, created_at, updated_at) VALUES ${Array(m).fill(personRow).join(', ')}`;
    const faceSql = (
      m: number,
    ) => `INSERT INTO face_samples (id, collection_id, person_seq, embedding, embedding_dimension, bounding_box_json, landmarks_json,
      detection_score, quality_json, model_id, model_digest, preprocessing_version, embedding_source, embedding_contract_id, created_at${crops ? ', crop_image, crop_media_type' : ''}) VALUES ${Array(m).fill(faceRow).join(', ')}`;
    /** Runs rows (each `width` values in `values`) as statements of IMPORT_ROWS rows then single rows; returns their sequence numbers. */
    const insertAll = (
      table: 'persons' | 'face_samples',
      sql: (m: number) => string,
      width: number,
      values: unknown[],
    ): number[] => {
      const rows = values.length / width;
      let last =
        (this.db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(table) as number | undefined) ??
        0;
      const first = last + 1;
      const many = rows >= IMPORT_ROWS ? this.db.prepare(sql(IMPORT_ROWS)) : null,
        one = this.db.prepare(sql(1));
      for (let r = 0; r < rows;) {
        const m = many && rows - r >= IMPORT_ROWS ? IMPORT_ROWS : 1;
        const seq = Number((m === 1 ? one : many!).run(values.slice(r * width, (r + m) * width)).lastInsertRowid);
        // AUTOINCREMENT gives each row a larger number than any before it: m rows ending at last + m took last + 1 .. last + m.
        if (seq !== last + m)
          throw new Error(`${table}: sequence numbers not consecutive (${last} + ${m} rows ended at ${seq})`);
        last = seq;
        r += m;
      }
      return Array.from({ length: rows }, (_, i) => first + i);
    };
    this.db.prepare('INSERT INTO import_counting (collection_id) VALUES (?)').run(c.id);
    const pv: unknown[] = [];
    let faces = 0;
    for (const p of persons) {
      pv.push(p.id, p.name, p.external_id, JSON.stringify(p.metadata), p.embeddings.length);
      faces += p.embeddings.length;
    }
    const personSeqs = insertAll('persons', personSql, 5, pv);
    const width = crops ? 5 : 3;
    const fv: unknown[] = new Array(faces * width);
    let k = 0;
    persons.forEach((p, i) => {
      p.embeddings.forEach((v, j) => {
        fv[k++] = newId();
        fv[k++] = personSeqs[i];
        fv[k++] = embeddingToBlob(v);
        if (crops) {
          const crop = p.crops?.[j] ?? null;
          fv[k++] = crop && Buffer.from(crop.buffer, crop.byteOffset, crop.byteLength);
          fv[k++] = crop && 'image/jpeg';
        }
      });
    });
    const faceSeqs = insertAll('face_samples', faceSql, width, fv);
    this.db.prepare('DELETE FROM import_counting WHERE collection_id = ?').run(c.id);
    const after = this.db
      .prepare(
        `UPDATE collections SET person_count = person_count + ?, face_count = face_count + ?, search_revision = search_revision + 1, updated_at = ?
      WHERE id = ? RETURNING face_count, capacity_rows, search_revision`,
      )
      .get(persons.length, faces, nowIso(), c.id) as {
      face_count: number;
      capacity_rows: number;
      search_revision: number;
    };
    if (after.face_count > after.capacity_rows)
      throw Errors.collectionCapacityExceeded(after.capacity_rows, after.face_count);
    return { personSeqs, faceSeqs, searchRevision: after.search_revision };
  }

  /** Which of these person ids and external ids a collection already has (one query each for a whole import batch). */
  takenPersonKeys(
    collectionId: string,
    ids: string[],
    externalIds: string[],
  ): { ids: Set<string>; externals: Set<string> } {
    const taken = (column: 'id' | 'external_id', values: string[]) =>
      values.length === 0
        ? new Set<string>()
        : new Set(
            (
              this.db
                .prepare(
                  `SELECT ${column} AS v FROM persons WHERE collection_id = ? AND ${column} IN (SELECT value FROM json_each(?))`,
                )
                .all(collectionId, JSON.stringify(values)) as { v: string }[]
            ).map((r) => r.v),
          );
    return { ids: taken('id', ids), externals: taken('external_id', externalIds) };
  }

  // ---- fleet replica (postgres mode): rows copied as they are in PostgreSQL, sequence numbers included ----

  /** What the replica has applied of a collection: null when it has no such collection. */
  replicaHead(id: string): { index_epoch: string; change_revision: number; search_revision: number } | null {
    return (
      (this.db
        .prepare('SELECT index_epoch, change_revision, search_revision FROM collections WHERE id = ?')
        .get(id) as never) ?? null
    );
  }

  replicaCollectionIds(): string[] {
    return (this.db.prepare('SELECT id FROM collections').all() as { id: string }[]).map((r) => r.id);
  }

  /** Inserts or updates a collection's settings (counters and revisions are set by replicaFinish). */
  replicaUpsertCollection(row: Record<string, unknown>): void {
    const cols = Object.keys(row).filter((k) => REPLICA_COLLECTION_COLUMNS.has(k));
    const values = Object.fromEntries(cols.map((k) => [k, row[k]]));
    const settings = cols.filter(
      (k) => !['id', 'person_count', 'face_count', 'search_revision', 'change_revision', 'created_at'].includes(k),
    );
    this.db
      .prepare(
        `INSERT INTO collections (${cols.join(', ')}, person_count, face_count, search_revision, change_revision)
      VALUES (${cols.map((k) => `@${k}`).join(', ')}, 0, 0, @search_revision, 0)
      ON CONFLICT (id) DO UPDATE SET ${settings.map((k) => `${k} = excluded.${k}`).join(', ')}`,
      )
      .run({ ...values, search_revision: row.search_revision });
  }

  /** The counters and revisions as PostgreSQL has them, once the rows are applied. */
  replicaFinish(row: {
    id: string;
    person_count: number;
    face_count: number;
    search_revision: number;
    change_revision: number;
    updated_at: string;
  }): void {
    this.db
      .prepare(
        'UPDATE collections SET person_count = @person_count, face_count = @face_count, search_revision = @search_revision, change_revision = @change_revision, updated_at = @updated_at WHERE id = @id',
      )
      .run(row);
  }

  /** Statements of the replica's per-row writes, prepared once (a full copy is one call per row). */
  private replicaStatements?: {
    upsertPerson: Statement;
    hasFace: Statement;
    hasPerson: Statement;
    insertFace: Statement;
  };
  private get rs() {
    return (this.replicaStatements ??= {
      upsertPerson: this.db
        .prepare(`INSERT INTO persons (seq, collection_id, id, name, external_id, metadata_json, created_at, updated_at)
      VALUES (@seq, @collection_id, @id, @name, @external_id, @metadata_json, @created_at, @updated_at)
      ON CONFLICT (seq) DO UPDATE SET name = excluded.name, external_id = excluded.external_id, metadata_json = excluded.metadata_json, updated_at = excluded.updated_at`),
      hasFace: this.db.prepare('SELECT 1 FROM face_samples WHERE seq = ?'),
      hasPerson: this.db.prepare('SELECT 1 FROM persons WHERE seq = ?'),
      insertFace: this.db.prepare(
        `INSERT INTO face_samples (${REPLICA_FACE_COLUMNS.join(', ')}) VALUES (${REPLICA_FACE_COLUMNS.map((k) => `@${k}`).join(', ')})`,
      ),
    });
  }

  replicaUpsertPerson(row: PersonRow): void {
    this.rs.upsertPerson.run({
      seq: row.seq,
      collection_id: row.collection_id,
      id: row.id,
      name: row.name,
      external_id: row.external_id,
      metadata_json: row.metadata_json,
      created_at: row.created_at,
      updated_at: row.updated_at,
    });
  }

  replicaHasFace(seq: number): boolean {
    return this.rs.hasFace.get(seq) !== undefined;
  }

  replicaHasPerson(seq: number): boolean {
    return this.rs.hasPerson.get(seq) !== undefined;
  }

  /** A face row copied from PostgreSQL (embedding and crop as BLOBs; every column present). */
  replicaInsertFace(row: Record<string, unknown>): void {
    this.rs.insertFace.run(Object.fromEntries(REPLICA_FACE_COLUMNS.map((k) => [k, row[k] ?? null])));
  }

  /** Every row of every table, for checksums (store migrate) and tests; rows of a collection being purged are not. */
  allRows(table: 'collections' | 'persons' | 'face_samples'): Record<string, unknown>[] {
    const live = table === 'collections' ? '' : 'WHERE collection_id IN (SELECT id FROM collections)';
    return this.db
      .prepare(`SELECT * FROM ${table} ${live} ORDER BY ${table === 'collections' ? 'id' : 'seq'}`)
      .all() as Record<string, unknown>[];
  }

  /** Streams every vector of a collection (for index rebuilds). */
  *vectors(collectionId: string): Generator<{ faceKey: number; personKey: number; vector: Float32Array }> {
    const stmt = this.db.prepare(
      'SELECT seq, person_seq, embedding FROM face_samples WHERE collection_id = ? ORDER BY seq',
    );
    for (const r of stmt.iterate(collectionId) as Iterable<{ seq: number; person_seq: number; embedding: Buffer }>) {
      yield { faceKey: r.seq, personKey: r.person_seq, vector: blobToEmbedding(r.embedding) };
    }
  }
}
