import { randomUUID } from 'node:crypto';
import { isValidPersonId, type CollectionT } from '../contract/collections.js';
import { Errors } from '../contract/errors.js';
import { l2Normalize } from '../inference/pipeline.js';
import type { IndexRow } from '../search/collectionIndex.js';
import type { SearchIndexes } from '../search/indexManager.js';
import { nowIso, type CollectionStore } from './collectionStore.js';
import type { CollectionService } from './collectionService.js';
import type { PgGallery } from './pgGallery.js';
import { embeddingProblem } from './review.js';

/**
 * Bulk gallery import: many persons with their trusted embeddings at once, with `external_trusted`
 * semantics (the collection's embedding_contract_id is required and checked; every vector must have the
 * collection's dimension, be finite and unit-norm within 2e-4, and is renormalised once). Batches are
 * all-or-nothing: a batch commits in one transaction (persons, faces, counters, search_revision) and
 * reaches the search index before it is acknowledged; a batch that breaks a rule changes nothing.
 * Koa-free so the CLI, a gallery export/import and a store migration can drive it.
 */
export interface ImportPerson { id: string; name: string | null; external_id: string | null; metadata: Record<string, unknown>; embeddings: Float32Array[] }
export interface ImportTotals { batches: number; persons: number; faces: number }

const MAX_NAME = 200;

/** Parses one NDJSON person line: {id, name?, external_id?, metadata?, embeddings: [number[] | base64 float32-LE string]}. */
export function parseImportPerson(line: string, lineNo: number, dim: number): ImportPerson {
  const bad = (problem: string) => Errors.invalidImportLine(lineNo, problem);
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    throw bad('not valid JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('a person must be a JSON object');
  const o = v as Record<string, unknown>;
  const known = new Set(['id', 'name', 'external_id', 'metadata', 'embeddings']);
  const extra = Object.keys(o).find((k) => !known.has(k));
  if (extra) throw bad(`unknown field ${JSON.stringify(extra)}`);
  if (typeof o.id !== 'string' || !isValidPersonId(o.id)) throw bad('id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$');
  const optText = (k: 'name' | 'external_id') => {
    const x = o[k];
    if (x === undefined || x === null) return null;
    if (typeof x !== 'string' || x.length > MAX_NAME) throw bad(`${k} must be a string of at most ${MAX_NAME} characters`);
    return x;
  };
  const metadata = o.metadata ?? {};
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) throw bad('metadata must be an object');
  if (!Array.isArray(o.embeddings) || o.embeddings.length === 0) throw bad('embeddings must be a non-empty array');
  const embeddings = o.embeddings.map((e: unknown, i: number) => {
    let vec: Float32Array;
    if (typeof e === 'string') {
      const f = new Float32Array(dim);
      // Decoded straight into the vector's bytes; a wrong length shows in the count.
      const written = Buffer.from(f.buffer).write(e, 'base64');
      if (written !== dim * 4 || Buffer.byteLength(e, 'base64') !== dim * 4) throw bad(`embeddings[${i}]: base64 must hold ${dim} float32 values (${dim * 4} bytes)`);
      vec = f;
    } else if (Array.isArray(e) && e.every((x) => typeof x === 'number')) {
      vec = new Float32Array(e as number[]);
    } else {
      throw bad(`embeddings[${i}] must be an array of numbers or a base64 string of float32 values`);
    }
    const problem = embeddingProblem(vec, dim);
    if (problem) throw bad(`embeddings[${i}]: ${problem}`);
    return l2Normalize(vec, dim);
  });
  return { id: o.id, name: optText('name'), external_id: optText('external_id'), metadata: metadata as Record<string, unknown>, embeddings };
}

export class GalleryImportService {
  constructor(private readonly collections: CollectionService, private readonly store: CollectionStore, private readonly indexes: SearchIndexes,
    /** Fleet mode: batches commit in PostgreSQL (then this box's replica); null = the local SQLite gallery. */
    private readonly fleet: PgGallery | null = null) {}

  private checkContract(c: CollectionT, contractId: string | null | undefined): void {
    if (contractId == null || contractId === '') throw Errors.missingEmbeddingContractId();
    if (contractId !== c.embedding_contract_id) throw Errors.embeddingContractMismatch(c.embedding_contract_id, contractId);
  }

  /** Checks before any line is read: the collection exists, is bound to the active model, and the contract matches. */
  begin(collectionId: string, contractId: string | null | undefined): CollectionT {
    const c = this.collections.getBound(collectionId);
    this.checkContract(c, contractId);
    // The index is loaded now (even for a lazy collection) so every batch reaches it as it commits.
    this.indexes.ready(c);
    return c;
  }

  /** Commits one batch, all or nothing; returns what it added. */
  async commitBatch(collectionId: string, contractId: string, batch: ImportPerson[]): Promise<{ persons: number; faces: number }> {
    if (batch.length === 0) return { persons: 0, faces: 0 };
    if (this.fleet) {
      const faces = await this.fleet.importBatch(collectionId, batch, (c) => {
        this.checkContract(this.collections.checkBound(c), contractId);
        const n = batch.reduce((s, p) => s + p.embeddings.length, 0);
        if (c.face_count + n > c.capacity_rows) throw Errors.collectionCapacityExceeded(c.capacity_rows, c.face_count + n);
      }, randomUUID);
      return { persons: batch.length, faces };
    }
    const store = this.store;
    const result = store.transaction(() => {
      const c = this.collections.getBound(collectionId);
      this.checkContract(c, contractId);
      const faces = batch.reduce((s, p) => s + p.embeddings.length, 0);
      if (c.face_count + faces > c.capacity_rows) {
        throw Errors.collectionCapacityExceeded(c.capacity_rows, c.face_count + faces);
      }
      const ids = new Set<string>(), externals = new Set<string>();
      for (const p of batch) {
        if (p.embeddings.length > c.max_faces_per_person) {
          throw Errors.personFaceLimitExceeded(c.max_faces_per_person, p.embeddings.length).withDetails({ person_id: p.id });
        }
        if (ids.has(p.id) || store.getPerson(c.id, p.id)) throw Errors.personExists({ id: p.id });
        ids.add(p.id);
        if (p.external_id !== null) {
          if (externals.has(p.external_id) || store.externalIdTaken(c.id, p.external_id)) {
            throw Errors.personExists({ externalId: p.external_id });
          }
          externals.add(p.external_id);
        }
      }
      const at = nowIso();
      const binding = { model_id: c.model_id, model_digest: c.model_digest, preprocessing_version: c.preprocessing_version, embedding_contract_id: c.embedding_contract_id };
      const rows: IndexRow[] = [];
      for (const p of batch) {
        const { personSeq, faceSeqs } = store.insertImportedPerson(c.id, p, p.embeddings, binding, at, randomUUID);
        faceSeqs.forEach((seq, i) => rows.push({ faceKey: seq, personKey: personSeq, vector: p.embeddings[i]! }));
      }
      store.bumpSearchRevision(c.id);
      return { before: c.search_revision, after: this.collections.get(c.id), rows };
    });
    // Searchable before the batch is acknowledged (as every other write).
    this.indexes.applyCommitted(result.after, result.before, { add: result.rows });
    return { persons: batch.length, faces: result.rows.length };
  }
}
