import { randomBytes } from 'node:crypto';
import type { CollectionT } from '../contract/collections.js';
import { type ApiError, Errors } from '../contract/errors.js';
import type { SearchIndexes } from '../search/indexManager.js';
import type { CollectionStore } from './collectionStore.js';
import type { CollectionService } from './collectionService.js';
import type { GalleryWriter } from './galleryWriter.js';
import { EXPORT_HEADER_TYPE, type ImportPerson } from './importLines.js';

export { EXPORT_HEADER_TYPE, type ImportPerson } from './importLines.js';

/**
 * Bulk gallery import: many persons with their trusted embeddings at once, with `external_trusted`
 * semantics (the collection's embedding_contract_id is required and checked; every vector must have the
 * collection's dimension, be finite and unit-norm within 2e-4, and is renormalised once). Batches are
 * all-or-nothing: a batch commits in one transaction (persons, faces, counters, search_revision) and
 * reaches the search index before it is acknowledged; a batch that breaks a rule changes nothing.
 * Koa-free so the CLI, a gallery export/import and a store migration can drive it.
 */
export interface ImportTotals {
  batches: number;
  persons: number;
  faces: number;
  /** Face crops of the file stored with their faces, and those dropped (the collection does not save crops). */
  crops: number;
  crops_dropped: number;
}

/** The crops a batch carries, as kept or dropped by a collection that does or does not save crops. */
export function cropCounts(
  batch: { crops?: (Uint8Array | null)[] }[],
  kept: boolean,
): Pick<ImportTotals, 'crops' | 'crops_dropped'> {
  const n = batch.reduce((s, p) => s + (p.crops?.filter((c) => c !== null).length ?? 0), 0);
  return kept ? { crops: n, crops_dropped: 0 } : { crops: 0, crops_dropped: n };
}

/**
 * What an import does with a person of the file that the collection has: `error` (the default) stops the
 * import with person_exists; `skip` skips it when its faces are the file's (a re-run of an import that was
 * cut off) and reports it with import_person_conflict otherwise, going on with the rest.
 */
export const IMPORT_ON_CONFLICT = ['error', 'skip'] as const;
export type ImportOnConflict = (typeof IMPORT_ON_CONFLICT)[number];

/** One batch's outcome: what it added, and (on_conflict=skip) the persons skipped and the conflicts reported. */
export interface BatchOutcome {
  persons: number;
  faces: number;
  crops: number;
  crops_dropped: number;
  skipped: number;
  conflicts: ApiError[];
}

/** Whether two face lists hold the same embeddings (any order; float32 values within 1e-6). */
export function sameFaces(stored: Float32Array[], file: Float32Array[]): boolean {
  if (stored.length !== file.length) return false;
  const left = [...stored];
  return file.every((v) => {
    const i = left.findIndex((s) => s.length === v.length && s.every((x, k) => Math.abs(x - v[k]!) <= 1e-6));
    if (i < 0) return false;
    left.splice(i, 1);
    return true;
  });
}

/**
 * Time-ordered UUIDs (RFC 9562 version 7: 48-bit Unix milliseconds, then a 12-bit counter in rand_a, then
 * random bits) for imported faces. Face ids are unique-indexed: random v4 ids land all over that B-tree
 * and made each insert a cache miss (measured 2.5-3.7k faces/s with v4 vs 11-20k with ordered ids on the
 * same shared box); ordered ids append. Still unguessable enough for ids (62 random bits), never reused.
 */
export function uuidV7Generator(): () => string {
  let lastMs = -1,
    counter = 0,
    msHex = '';
  // Random bytes are drawn 64 KiB at a time (one randomBytes call per 8192 ids instead of one per id); each
  // id uses its own 8 bytes of the pool (rand_a is the counter, rand_b 62 bits of those bytes), never reused.
  let pool = Buffer.alloc(0),
    at = 0;
  return () => {
    let ms = Date.now();
    if (ms <= lastMs) {
      ms = lastMs;
      if (++counter > 0xfff) {
        counter = 0;
        ms = ++lastMs;
        msHex = ms.toString(16).padStart(12, '0');
      }
    } else {
      lastMs = ms;
      counter = 0;
      msHex = ms.toString(16).padStart(12, '0');
    }
    if (at + 8 > pool.length) {
      pool = randomBytes(65_536);
      at = 0;
    }
    const r = pool;
    const i = at;
    at += 8;
    return (
      `${msHex.slice(0, 8)}-${msHex.slice(8)}-${HEX[0x70 | (counter >> 8)]}${HEX[counter & 0xff]}-${HEX[0x80 | (r[i]! & 0x3f)]}${HEX[r[i + 1]!]}-` +
      `${HEX[r[i + 2]!]}${HEX[r[i + 3]!]}${HEX[r[i + 4]!]}${HEX[r[i + 5]!]}${HEX[r[i + 6]!]}${HEX[r[i + 7]!]}`
    );
  };
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

export class GalleryImportService {
  private readonly newFaceId = uuidV7Generator();

  constructor(
    private readonly collections: CollectionService,
    private readonly store: CollectionStore,
    private readonly indexes: SearchIndexes,
    /** Every gallery write (SQLite or PostgreSQL, chosen at composition). */
    private readonly writer: GalleryWriter,
  ) {}

  /** The collection as export lines (see exportCollection). */
  export(collectionId: string): Generator<string> {
    return exportCollection(this.collections, this.store, collectionId);
  }

  private checkContract(c: CollectionT, contractId: string | null | undefined): void {
    if (contractId == null || contractId === '') throw Errors.missingEmbeddingContractId();
    if (contractId !== c.embedding_contract_id)
      throw Errors.embeddingContractMismatch(c.embedding_contract_id, contractId);
  }

  /** Checks before any line is read: the collection exists, is bound to the active model, and the contract matches. */
  begin(collectionId: string, contractId: string | null | undefined): CollectionT {
    const c = this.collections.getBound(collectionId);
    this.checkContract(c, contractId);
    // The index is loaded now (even for a lazy collection) so every batch reaches it as it commits.
    this.indexes.ready(c);
    return c;
  }

  /** While an import request runs, the collection's HNSW graph is not built (its rows are still coming): call the release at its end. */
  holdIndexBuilds(collectionId: string): () => void {
    return this.indexes.holdBuilds(collectionId);
  }

  /** Commits one batch, all or nothing; returns what it added (and with `skip`, what it skipped and why). */
  async commitBatch(
    collectionId: string,
    contractId: string,
    persons: ImportPerson[],
    onConflict: ImportOnConflict = 'error',
  ): Promise<BatchOutcome> {
    const { batch, skipped, conflicts } =
      onConflict === 'skip'
        ? this.withoutExisting(collectionId, persons)
        : { batch: persons, skipped: 0, conflicts: [] };
    if (batch.length === 0) return { persons: 0, faces: 0, crops: 0, crops_dropped: 0, skipped, conflicts };
    let keepsCrops = false;
    // The batch reaches this box's search index before it is acknowledged (as every other write).
    const faces = await this.writer.importBatch(
      collectionId,
      batch,
      (c) => {
        this.checkContract(this.collections.checkBound(c), contractId);
        keepsCrops = c.save_face_crops;
        const n = batch.reduce((s, p) => s + p.embeddings.length, 0);
        if (c.face_count + n > c.capacity_rows)
          throw Errors.collectionCapacityExceeded(c.capacity_rows, c.face_count + n);
      },
      this.newFaceId,
    );
    return { persons: batch.length, faces, ...cropCounts(batch, keepsCrops), skipped, conflicts };
  }

  /**
   * on_conflict=skip: the batch less the persons the collection has (read before the batch's transaction;
   * a person added meanwhile still fails the batch with person_exists, and a re-run skips it). Those with the
   * file's faces are skipped; those with other faces, and new persons whose external_id is taken, are conflicts.
   */
  private withoutExisting(
    collectionId: string,
    persons: ImportPerson[],
  ): { batch: ImportPerson[]; skipped: number; conflicts: ApiError[] } {
    const taken = this.store.takenPersonKeys(
      collectionId,
      persons.map((p) => p.id),
      persons.flatMap((p) => (p.external_id === null ? [] : [p.external_id])),
    );
    const batch: ImportPerson[] = [];
    const conflicts: ApiError[] = [];
    let skipped = 0;
    for (const p of persons) {
      const stored = taken.ids.has(p.id) ? this.store.getPerson(collectionId, p.id) : null;
      if (stored) {
        const faces = this.store.personEmbeddings(stored.seq);
        if (sameFaces(faces, p.embeddings)) skipped++;
        else
          conflicts.push(
            Errors.importPersonConflict(p.id, {
              reason: 'faces_differ',
              stored_faces: faces.length,
              file_faces: p.embeddings.length,
            }),
          );
      } else if (p.external_id !== null && taken.externals.has(p.external_id)) {
        conflicts.push(Errors.importPersonConflict(p.id, { reason: 'external_id_taken', external_id: p.external_id }));
      } else batch.push(p);
    }
    return { batch, skipped, conflicts };
  }
}

/** The first line of a gallery export (`GET /v1/collections/{id}/export`); the import skips it. */
export interface ExportHeader {
  type: typeof EXPORT_HEADER_TYPE;
  /** 2: `crops` has one entry per embedding (null for a face without a crop); 1 listed only the crops there were. */
  format: 1 | 2;
  collection_id: string;
  embedding_contract_id: string | null;
  model_id: string | null;
  embedding_dimension: number | null;
  exported_at: string;
  persons: number;
  faces: number;
}

/**
 * A collection as NDJSON: a header line (contract, counts), then one line per person in the import format
 * (id, name, external_id, metadata, embeddings as base64 float32-LE) plus `crops` (crops[i]: the base64
 * JPEG of embeddings[i], null for a face without one; [] when none has one), which an import keeps and
 * another box with another model re-embeds from. Read page by page, so memory stays flat for large
 * galleries; each person line is consistent (one SQLite read).
 */
export function* exportCollection(
  collections: CollectionService,
  store: CollectionStore,
  collectionId: string,
): Generator<string> {
  const c = collections.get(collectionId);
  const header: ExportHeader = {
    type: EXPORT_HEADER_TYPE,
    format: 2,
    collection_id: c.id,
    embedding_contract_id: c.embedding_contract_id,
    model_id: c.model_id,
    embedding_dimension: c.embedding_dimension ?? null,
    exported_at: new Date().toISOString(),
    persons: c.person_count,
    faces: c.face_count,
  };
  yield `${JSON.stringify(header)}\n`;
  let after: string | null = null;
  for (;;) {
    const page = store.listPersons(collectionId, after, 200, null);
    if (page.length === 0) return;
    for (const p of page) {
      const stored = store.getPerson(collectionId, p.id);
      if (!stored) continue; // deleted meanwhile
      const faces = store.personFacesWithCrops(stored.seq);
      if (faces.length === 0) continue;
      const embeddings = faces.map(({ embedding: e }) =>
        Buffer.from(e.buffer, e.byteOffset, e.byteLength).toString('base64'),
      );
      const crops = faces.some((f) => f.crop) ? faces.map((f) => f.crop?.toString('base64') ?? null) : [];
      yield `${JSON.stringify({ id: p.id, name: p.name, external_id: p.external_id, metadata: p.metadata, embeddings, crops })}\n`;
    }
    after = page[page.length - 1]!.id;
  }
}
