import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { CollectionT } from '../contract/collections.js';
import { Errors } from '../contract/errors.js';
import { migratePostgres, withTransaction } from '../store/postgres.js';
import {
  collectionFromRow,
  embeddingToBlob,
  indexColumns,
  nowIso,
  personFromRow,
  type CollectionRow,
  type NewCollection,
  type PersonRow,
  type StoredPerson,
} from './collectionStore.js';
import type { FaceInput, GalleryWriter, ImportBatchPerson, NewPersonRow } from './galleryWriter.js';

/** The change a committed write made: the persons and faces it touched, and whether search_revision moves. */
interface Change {
  persons?: number[];
  faces?: number[];
  search: boolean;
}

/** What a follower reads of one collection in one snapshot. */
export interface CollectionSnapshot {
  collection: Record<string, unknown> & CollectionRow & { change_revision: number; index_epoch: string };
  full: boolean;
  persons: PersonRow[];
  faces: Record<string, unknown>[];
  /** Person and face sequence numbers the changes touched (those not in persons/faces are gone). */
  touchedPersons: number[];
  touchedFaces: number[];
}

export const GALLERY_CHANNEL = 'vigil_gallery';
const CHANNEL = GALLERY_CHANNEL;

/**
 * Fleet mode's writes: every gallery write is one PostgreSQL transaction that locks its collection row
 * (`SELECT … FOR UPDATE`), so the capacity and uniqueness checks of concurrent writes on any box are
 * serialised, then records the change (collections.change_revision + 1, a gallery_changes row) and
 * NOTIFYs followers; the NOTIFY is delivered at commit. `onCommitted` brings this box's replica and
 * index up to the commit before the caller acknowledges. Checks are the services' own callbacks, run on
 * the locked row: the same rules as SQLite, one engine deep.
 */
export class PgGallery implements GalleryWriter {
  readonly engine = 'postgres' as const;

  constructor(
    private readonly pool: pg.Pool,
    readonly boxId: string,
    /** Brings the local replica and index of a collection up to what is committed (the follower). */
    private readonly onCommitted: (collectionId: string) => Promise<void>,
  ) {}

  private async lock(c: pg.PoolClient, id: string): Promise<CollectionT | null> {
    const r = await c.query<CollectionRow>('SELECT * FROM collections WHERE id = $1 FOR UPDATE', [id]);
    return r.rows[0] ? collectionFromRow(r.rows[0]) : null;
  }

  private async record(c: pg.PoolClient, collectionId: string, change: Change): Promise<void> {
    const r = await c.query<{ change_revision: number }>(
      `UPDATE collections SET change_revision = change_revision + 1${change.search ? ', search_revision = search_revision + 1, updated_at = $2' : ''} WHERE id = $1 RETURNING change_revision`,
      change.search ? [collectionId, nowIso()] : [collectionId],
    );
    await c.query(
      'INSERT INTO gallery_changes (collection_id, revision, box_id, person_seqs, face_seqs) VALUES ($1, $2, $3, $4, $5)',
      [collectionId, r.rows[0]!.change_revision, this.boxId, change.persons ?? [], change.faces ?? []],
    );
    await c.query('SELECT pg_notify($1, $2)', [CHANNEL, collectionId]);
  }

  private async committed(collectionId: string): Promise<void> {
    try {
      await this.onCommitted(collectionId);
    } catch (e) {
      // Committed in PostgreSQL; this box's copy catches up on the follower's next pass.
      throw Errors.searchIndexUnavailable(collectionId, { revision: -1 }).withDetails({
        reason: e instanceof Error ? e.message : String(e),
      });
    }
  }

  /** False when the id is taken. */
  async createCollection(n: NewCollection): Promise<boolean> {
    const inserted = await withTransaction(this.pool, async (c) => {
      const s = indexColumns(
        n.search_index ?? { type: 'exact', hnsw: { connectivity: 16, expansion_add: 128, expansion_search: 64 } },
      );
      const r = await c.query(
        `INSERT INTO collections (id, name, description, default_threshold, model_id, model_digest, embedding_dimension,
        preprocessing_version, embedding_contract_id, search_profile, capacity_rows, max_faces_per_person, load_policy, save_face_crops,
        metadata_json, detector_input_sizes_json, detector_threshold, detector_nms_threshold, single_face_selection, created_at, updated_at,
        search_index, hnsw_connectivity, hnsw_expansion_add, hnsw_expansion_search, index_epoch)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)
        ON CONFLICT (id) DO NOTHING`,
        [
          n.id,
          n.name,
          n.description,
          n.default_threshold,
          n.model_id,
          n.model_digest,
          n.embedding_dimension,
          n.preprocessing_version,
          n.embedding_contract_id,
          n.search_profile,
          n.capacity_rows,
          n.max_faces_per_person,
          n.load_policy,
          n.save_face_crops ? 1 : 0,
          JSON.stringify(n.metadata),
          JSON.stringify(n.detection.input_sizes),
          n.detection.threshold,
          n.detection.nms_threshold,
          n.detection.single_face_selection,
          n.created_at,
          n.updated_at,
          s.search_index_type,
          s.hnsw_connectivity,
          s.hnsw_expansion_add,
          s.hnsw_expansion_search,
          randomBytes(16).toString('hex'),
        ],
      );
      if (r.rowCount !== 1) return false;
      await this.record(c, n.id as string, { search: false });
      return true;
    });
    if (inserted) await this.committed(n.id as string);
    return inserted;
  }

  /** Locks the collection, lets `columns` check and compute the change on the locked row, writes it. */
  async updateCollection(id: string, columns: (c: CollectionT) => Record<string, string | number>): Promise<void> {
    await withTransaction(this.pool, async (c) => {
      const col = await this.lock(c, id);
      if (!col) throw Errors.collectionNotFound(id);
      const cols = columns(col);
      const names = Object.keys(cols);
      if (names.length === 0) return;
      const set = [...names.map((n, i) => `${n} = $${i + 2}`), `updated_at = $${names.length + 2}`].join(', ');
      await c.query(`UPDATE collections SET ${set} WHERE id = $1`, [id, ...names.map((n) => cols[n]), nowIso()]);
      await this.record(c, id, { search: false });
    });
    await this.committed(id);
  }

  async deleteCollection(id: string, check: (c: CollectionT) => void): Promise<void> {
    await withTransaction(this.pool, async (c) => {
      const col = await this.lock(c, id);
      if (!col) throw Errors.collectionNotFound(id);
      check(col);
      await c.query('DELETE FROM collections WHERE id = $1', [id]);
      await c.query('SELECT pg_notify($1, $2)', [CHANNEL, id]);
    });
    await this.committed(id);
  }

  private async person(c: pg.PoolClient, collectionId: string, personId: string): Promise<StoredPerson> {
    const r = await c.query<PersonRow>('SELECT * FROM persons WHERE collection_id = $1 AND id = $2', [
      collectionId,
      personId,
    ]);
    if (!r.rows[0]) throw Errors.personNotFound(personId);
    return { seq: r.rows[0].seq, person: personFromRow(r.rows[0]) };
  }

  /**
   * Registration's write: the person (new or existing) and its accepted faces. `check` sees the locked
   * collection and the person's current face count and throws for limits (capacity, faces per person).
   */
  async addFaces(
    collectionId: string,
    target: { create: NewPersonRow } | { personId: string },
    faces: FaceInput[],
    check: (c: CollectionT, currentFaces: number) => void,
  ): Promise<{ personId: string; faceIds: string[] }> {
    const out = await withTransaction(this.pool, async (c) => {
      const col = await this.lock(c, collectionId);
      if (!col) throw Errors.collectionNotFound(collectionId);
      let personSeq: number,
        current = 0,
        personId: string;
      if ('create' in target) {
        const p = target.create;
        const taken = await c.query(
          'SELECT id, external_id FROM persons WHERE collection_id = $1 AND (id = $2 OR external_id = $3)',
          [collectionId, p.id, p.external_id],
        );
        if (taken.rows.some((r: { id: string }) => r.id === p.id)) throw Errors.personExists({ id: p.id });
        if (taken.rows.length > 0 && p.external_id !== null) throw Errors.personExists({ externalId: p.external_id });
        check(col, 0);
        const at = faces[0]?.createdAt ?? nowIso();
        const r = await c.query<{ seq: number }>(
          `INSERT INTO persons (collection_id, id, name, external_id, metadata_json, created_at, updated_at)
          VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING seq`,
          [collectionId, p.id, p.name, p.external_id, JSON.stringify(p.metadata), at],
        );
        personSeq = r.rows[0]!.seq;
        personId = p.id;
      } else {
        const p = await this.person(c, collectionId, target.personId);
        personSeq = p.seq;
        current = p.person.face_count;
        personId = p.person.id;
        check(col, current);
      }
      const faceSeqs: number[] = [];
      for (const f of faces) {
        const r = await c.query<{ seq: number }>(
          `INSERT INTO face_samples (id, collection_id, person_seq, embedding, embedding_dimension, bounding_box_json,
          landmarks_json, detection_score, quality_json, model_id, model_digest, preprocessing_version, embedding_source, embedding_contract_id,
          crop_image, crop_media_type, liveness_json, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) RETURNING seq`,
          [
            f.id,
            collectionId,
            personSeq,
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
            col.save_face_crops ? f.crop : null,
            col.save_face_crops && f.crop ? 'image/jpeg' : null,
            f.face.liveness ? JSON.stringify(f.face.liveness) : null,
            f.createdAt,
          ],
        );
        faceSeqs.push(r.rows[0]!.seq);
      }
      if (faces.length > 0 && !('create' in target))
        await c.query('UPDATE persons SET updated_at = $1 WHERE seq = $2', [faces[0]!.createdAt, personSeq]);
      await this.record(c, collectionId, { persons: [personSeq], faces: faceSeqs, search: faces.length > 0 });
      return { personId, faceIds: faces.map((f) => f.id) };
    });
    await this.committed(collectionId);
    return out;
  }

  /** Person patch: `columns` sees the locked person row; a taken external_id is 409. */
  async updatePerson(
    collectionId: string,
    personId: string,
    columns: (p: StoredPerson) => Record<string, string | null>,
  ): Promise<void> {
    await withTransaction(this.pool, async (c) => {
      const col = await this.lock(c, collectionId);
      if (!col) throw Errors.collectionNotFound(collectionId);
      const p = await this.person(c, collectionId, personId);
      const cols = columns(p);
      const names = Object.keys(cols);
      if (names.length === 0) return;
      if (cols.external_id !== undefined && cols.external_id !== null) {
        const taken = await c.query(
          'SELECT 1 FROM persons WHERE collection_id = $1 AND external_id = $2 AND seq <> $3',
          [collectionId, cols.external_id, p.seq],
        );
        if (taken.rowCount) throw Errors.externalIdExists(cols.external_id);
      }
      const set = [...names.map((n, i) => `${n} = $${i + 2}`), `updated_at = $${names.length + 2}`].join(', ');
      await c.query(`UPDATE persons SET ${set} WHERE seq = $1`, [p.seq, ...names.map((n) => cols[n]), nowIso()]);
      await this.record(c, collectionId, { persons: [p.seq], search: false });
    });
    await this.committed(collectionId);
  }

  async deletePerson(collectionId: string, personId: string): Promise<void> {
    await withTransaction(this.pool, async (c) => {
      const col = await this.lock(c, collectionId);
      if (!col) throw Errors.collectionNotFound(collectionId);
      const p = await this.person(c, collectionId, personId);
      const faces = (
        await c.query<{ seq: number }>('SELECT seq FROM face_samples WHERE person_seq = $1', [p.seq])
      ).rows.map((r) => r.seq);
      await c.query('DELETE FROM persons WHERE seq = $1', [p.seq]);
      await this.record(c, collectionId, { persons: [p.seq], faces, search: true });
    });
    await this.committed(collectionId);
  }

  async deleteFace(collectionId: string, personId: string, faceId: string): Promise<void> {
    await withTransaction(this.pool, async (c) => {
      const col = await this.lock(c, collectionId);
      if (!col) throw Errors.collectionNotFound(collectionId);
      const p = await this.person(c, collectionId, personId);
      const f = await c.query<{ seq: number }>('SELECT seq FROM face_samples WHERE person_seq = $1 AND id = $2', [
        p.seq,
        faceId,
      ]);
      if (!f.rows[0]) throw Errors.faceNotFound({ faceId });
      await c.query('DELETE FROM face_samples WHERE seq = $1', [f.rows[0].seq]);
      await c.query('UPDATE persons SET updated_at = $1 WHERE seq = $2', [nowIso(), p.seq]);
      await this.record(c, collectionId, { persons: [p.seq], faces: [f.rows[0].seq], search: true });
    });
    await this.committed(collectionId);
  }

  /** A bulk-import batch, all or nothing; `check` sees the locked collection. Returns the faces added. */
  async importBatch(
    collectionId: string,
    batch: ImportBatchPerson[],
    check: (c: CollectionT) => void,
    newId: () => string,
  ): Promise<number> {
    const added = await withTransaction(this.pool, async (c) => {
      const col = await this.lock(c, collectionId);
      if (!col) throw Errors.collectionNotFound(collectionId);
      check(col);
      const ids = batch.map((p) => p.id),
        externals = batch.map((p) => p.external_id).filter((x): x is string => x !== null);
      const taken = await c.query<{ id: string; external_id: string | null }>(
        'SELECT id, external_id FROM persons WHERE collection_id = $1 AND (id = ANY($2) OR external_id = ANY($3))',
        [collectionId, ids, externals],
      );
      const takenIds = new Set(taken.rows.map((r) => r.id)),
        takenExt = new Set(taken.rows.map((r) => r.external_id));
      const seenIds = new Set<string>(),
        seenExt = new Set<string>();
      for (const p of batch) {
        if (p.embeddings.length > col.max_faces_per_person)
          throw Errors.personFaceLimitExceeded(col.max_faces_per_person, p.embeddings.length).withDetails({
            person_id: p.id,
          });
        if (seenIds.has(p.id) || takenIds.has(p.id)) throw Errors.personExists({ id: p.id });
        seenIds.add(p.id);
        if (p.external_id !== null) {
          if (seenExt.has(p.external_id) || takenExt.has(p.external_id))
            throw Errors.personExists({ externalId: p.external_id });
          seenExt.add(p.external_id);
        }
      }
      const at = nowIso();
      const box = JSON.stringify({
        pixels: { x: 0, y: 0, width: 0, height: 0 },
        normalized: { left: 0, top: 0, width: 0, height: 0 },
      });
      const quality = JSON.stringify({ score: 0, sharpness: 0, brightness: 0, pose: 0 });
      // Set-based: one statement for the persons, one for the faces (a batch is thousands of rows).
      const inserted = await c.query<{ seq: number; id: string }>(
        `INSERT INTO persons (collection_id, id, name, external_id, metadata_json, created_at, updated_at)
        SELECT $1, p.id, p.name, p.external_id, p.metadata_json, $6, $6 FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS p(id, name, external_id, metadata_json, n)
        ORDER BY p.n RETURNING seq, id`,
        [
          collectionId,
          batch.map((p) => p.id),
          batch.map((p) => p.name),
          batch.map((p) => p.external_id),
          batch.map((p) => JSON.stringify(p.metadata)),
          at,
        ],
      );
      const seqOf = new Map(inserted.rows.map((r) => [r.id, r.seq]));
      const personSeqs = batch.map((p) => seqOf.get(p.id)!);
      const faces = batch.flatMap((p) =>
        p.embeddings.map((v, j) => ({
          id: newId(),
          person: seqOf.get(p.id)!,
          v,
          // A gallery export's crop of this face, kept when the collection saves crops.
          crop: col.save_face_crops ? (p.crops?.[j] ?? null) : null,
        })),
      );
      const faceRows = await c.query<{ seq: number }>(
        `INSERT INTO face_samples (id, collection_id, person_seq, embedding, embedding_dimension, bounding_box_json, landmarks_json,
        detection_score, quality_json, model_id, model_digest, preprocessing_version, embedding_source, embedding_contract_id, created_at,
        crop_image, crop_media_type)
        SELECT f.id, $1, f.person_seq, f.embedding, $5, $6, NULL, 0, $7, $8, $9, $10, 'external_trusted', $11, $12,
        f.crop, CASE WHEN f.crop IS NULL THEN NULL ELSE 'image/jpeg' END
        FROM unnest($2::text[], $3::bigint[], $4::bytea[], $13::bytea[]) WITH ORDINALITY AS f(id, person_seq, embedding, crop, n) ORDER BY f.n RETURNING seq`,
        [
          collectionId,
          faces.map((f) => f.id),
          faces.map((f) => f.person),
          faces.map((f) => embeddingToBlob(f.v)),
          col.embedding_dimension,
          box,
          quality,
          col.model_id,
          col.model_digest,
          col.preprocessing_version,
          col.embedding_contract_id,
          at,
          faces.map((f) => (f.crop ? Buffer.from(f.crop.buffer, f.crop.byteOffset, f.crop.byteLength) : null)),
        ],
      );
      const faceSeqs = faceRows.rows.map((r) => r.seq);
      await this.record(c, collectionId, { persons: personSeqs, faces: faceSeqs, search: true });
      return faceSeqs.length;
    });
    await this.committed(collectionId);
    return added;
  }

  private migrated = false;

  /**
   * Applies pending PostgreSQL migrations once per process (the follower calls it on every connect): a box
   * that started while the database was unreachable brings the schema up when it first reaches it.
   */
  async ensureSchema(): Promise<void> {
    if (this.migrated) return;
    await migratePostgres(this.pool);
    this.migrated = true;
  }

  // ---- change-log pruning ----

  /**
   * Records the change_revision this box's replica has applied for each collection (one statement),
   * with the time: pruning keeps every change a box seen within the retention window still needs.
   */
  async recordProgress(heads: { id: string; index_epoch: string; change_revision: number }[]): Promise<void> {
    if (heads.length === 0) return;
    await this.pool.query(
      `INSERT INTO gallery_box_progress (box_id, collection_id, index_epoch, applied_revision, seen_at)
      SELECT $1, h.id, h.epoch, h.rev, now() FROM unnest($2::text[], $3::text[], $4::bigint[]) AS h(id, epoch, rev) JOIN collections c ON c.id = h.id
      ON CONFLICT (collection_id, box_id) DO UPDATE SET index_epoch = EXCLUDED.index_epoch, applied_revision = EXCLUDED.applied_revision, seen_at = EXCLUDED.seen_at`,
      [this.boxId, heads.map((h) => h.id), heads.map((h) => h.index_epoch), heads.map((h) => h.change_revision)],
    );
  }

  /**
   * Deletes the changes no box needs: per collection, those at or below the lowest applied revision of
   * the boxes seen within `retentionSeconds` (all of them when no box was seen: a box that returns later
   * copies the collection afresh). Once per fleet per `intervalSeconds`: the box that takes the advisory
   * lock and finds the last run old enough does it; the first call only starts the clock, so every box
   * reports its progress before anything is deleted. Returns the changes deleted, or null when skipped.
   */
  async pruneChanges(retentionSeconds: number, intervalSeconds: number): Promise<number | null> {
    return withTransaction(this.pool, async (c) => {
      if (!(await c.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock(7166016) AS ok')).rows[0]!.ok) return null;
      const last = (
        await c.query<{ due: boolean }>(
          `SELECT last_run_at <= now() - make_interval(secs => $1) AS due FROM gallery_maintenance WHERE task = 'prune_changes'`,
          [intervalSeconds],
        )
      ).rows[0];
      if (!last) {
        await c.query(
          `INSERT INTO gallery_maintenance (task, last_run_at, last_box_id) VALUES ('prune_changes', now(), $1) ON CONFLICT DO NOTHING`,
          [this.boxId],
        );
        return null;
      }
      if (!last.due) return null;
      const r = await c.query(
        `DELETE FROM gallery_changes g USING (
          SELECT c.id, coalesce((SELECT min(p.applied_revision) FROM gallery_box_progress p WHERE p.collection_id = c.id AND p.index_epoch = c.index_epoch
            AND p.seen_at > now() - make_interval(secs => $1)), c.change_revision) AS low FROM collections c) k
        WHERE g.collection_id = k.id AND g.revision <= k.low`,
        [retentionSeconds],
      );
      // Boxes not seen within the window no longer hold anything back; their rows go.
      await c.query('DELETE FROM gallery_box_progress WHERE seen_at <= now() - make_interval(secs => $1)', [
        retentionSeconds,
      ]);
      const deleted = r.rowCount ?? 0;
      await c.query(
        `UPDATE gallery_maintenance SET last_run_at = now(), last_box_id = $1, last_deleted = $2 WHERE task = 'prune_changes'`,
        [this.boxId, deleted],
      );
      return deleted;
    });
  }

  // ---- follower reads ----

  /** Every collection's id, incarnation and change revision. */
  async heads(): Promise<{ id: string; index_epoch: string; change_revision: number }[]> {
    return (
      await this.pool.query<{ id: string; index_epoch: string; change_revision: number }>(
        'SELECT id, index_epoch, change_revision FROM collections',
      )
    ).rows;
  }

  /**
   * What changed in a collection after `from` (its change revision in the replica), read in one
   * REPEATABLE READ snapshot so the rows and the revision they reach agree. `full` (a new or re-created
   * collection, or a change log that no longer reaches back) reads every row. Null: the collection is gone.
   */
  async snapshot(
    id: string,
    from: { index_epoch: string; change_revision: number } | null,
  ): Promise<CollectionSnapshot | null> {
    return withTransaction(
      this.pool,
      async (c) => {
        const col = (await c.query('SELECT * FROM collections WHERE id = $1', [id])).rows[0] as
          CollectionSnapshot['collection'] | undefined;
        if (!col) return null;
        let full = !from || from.index_epoch !== col.index_epoch;
        let touchedPersons: number[] = [],
          touchedFaces: number[] = [];
        if (!full && from!.change_revision === col.change_revision)
          return { collection: col, full: false, persons: [], faces: [], touchedPersons, touchedFaces };
        if (!full) {
          const changes = (
            await c.query<{ revision: number; person_seqs: string[]; face_seqs: string[] }>(
              'SELECT revision, person_seqs, face_seqs FROM gallery_changes WHERE collection_id = $1 AND revision > $2 ORDER BY revision',
              [id, from!.change_revision],
            )
          ).rows;
          // A pruned log (or a gap) cannot be replayed: copy the collection instead.
          if (changes.length !== col.change_revision - from!.change_revision) full = true;
          else {
            touchedPersons = [...new Set(changes.flatMap((r) => r.person_seqs.map(Number)))];
            touchedFaces = [...new Set(changes.flatMap((r) => r.face_seqs.map(Number)))];
          }
        }
        const persons = full
          ? (await c.query<PersonRow>('SELECT * FROM persons WHERE collection_id = $1 ORDER BY seq', [id])).rows
          : (await c.query<PersonRow>('SELECT * FROM persons WHERE seq = ANY($1) ORDER BY seq', [touchedPersons])).rows;
        const faces = full
          ? (await c.query('SELECT * FROM face_samples WHERE collection_id = $1 ORDER BY seq', [id])).rows
          : (await c.query('SELECT * FROM face_samples WHERE seq = ANY($1) ORDER BY seq', [touchedFaces])).rows;
        return { collection: col, full, persons, faces, touchedPersons, touchedFaces };
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }
}
