import { createHash } from 'node:crypto';
import { inputSizesProblem, type VigilConfig } from '../config/schema.js';
import { type ApiError, Errors } from '../contract/errors.js';
import type { ModelInfo } from '../inference/modelSummary.js';
import type { DetectionProfile } from '../inference/pipeline.js';
import type { SearchIndexes } from '../search/indexManager.js';
import { CollectionStore, indexColumns, nowIso } from './collectionStore.js';
import type { GalleryWriter } from './galleryWriter.js';
import { CursorCodec, toPage, type Page } from '../store/cursors.js';
import {
  checkMetadata,
  type CollectionCreateT,
  type CollectionPatchT,
  type CollectionT,
  type ModelBinding,
} from '../contract/collections.js';

/** v2 embedding contract id (§3.7): clients copy it, never construct it. */
export function embeddingContractId(m: ModelBinding): string {
  const json = JSON.stringify([
    m.model_id,
    m.model_digest.toLowerCase(),
    m.embedding_dimension,
    m.preprocessing_version,
  ]);
  return `ifsemb-v2-sha256:${createHash('sha256').update(json).digest('hex')}`;
}

export const detectionProfileOf = (c: CollectionT): DetectionProfile => ({
  input_sizes: c.detection.input_sizes as [number, number][],
  threshold: c.detection.threshold,
  nms_threshold: c.detection.nms_threshold,
  single_face_selection: c.detection.single_face_selection,
});

export interface CollectionDefaults {
  collections: VigilConfig['collections'];
  defaultThreshold: number;
  systemProfile: DetectionProfile;
}

/**
 * Collection lifecycle: creation pins the active model (a collection never mixes embedding spaces),
 * and every model-bound use checks that pin.
 */
export class CollectionService {
  constructor(
    private readonly store: CollectionStore,
    private readonly indexes: SearchIndexes,
    private readonly cursors: CursorCodec,
    private readonly defaults: CollectionDefaults,
    /** The active model once inference is loaded. */
    private readonly activeModel: () => ModelInfo | null,
    /** Every gallery write (SQLite or PostgreSQL, chosen at composition); reads are the local store's. */
    private readonly writer: GalleryWriter,
  ) {}

  /** The collection or 404. */
  get(id: string): CollectionT {
    const c = this.store.getCollection(id);
    if (!c) throw Errors.collectionNotFound(id);
    return c;
  }

  /** The collection, 404 if unknown, 409 collection_model_mismatch if its pinned model is not the active one. */
  getBound(id: string): CollectionT {
    return this.checkBound(this.get(id));
  }

  /** 409 collection_model_mismatch when the collection's pinned model is not the active one. */
  checkBound(c: CollectionT): CollectionT {
    const id = c.id;
    const m = this.activeModel();
    if (
      m &&
      (c.model_id !== m.model_id ||
        c.model_digest !== m.model_digest ||
        c.embedding_dimension !== m.embedding_dimension ||
        c.preprocessing_version !== m.preprocessing_version)
    ) {
      throw Errors.collectionModelMismatch(
        id,
        {
          model_id: c.model_id,
          model_digest: c.model_digest,
          embedding_dimension: c.embedding_dimension,
          preprocessing_version: c.preprocessing_version,
        },
        {
          model_id: m.model_id,
          model_digest: m.model_digest,
          embedding_dimension: m.embedding_dimension,
          preprocessing_version: m.preprocessing_version,
        },
      );
    }
    return c;
  }

  /** The collection as the API shows it: the stored settings plus what its search index is doing now. */
  describe(c: CollectionT): CollectionT {
    return { ...c, search_index: { ...c.search_index, status: this.indexes.status(c) } };
  }

  /** The collection or null (for reports that must not fail on a deleted collection). */
  find(id: string): CollectionT | null {
    return this.store.getCollection(id) ?? null;
  }

  /** The detection profile of an optional collection (404 unknown, 409 model mismatch); null without one. */
  detectionProfile(collectionId: string | undefined | null): DetectionProfile | null {
    return collectionId ? detectionProfileOf(this.getBound(collectionId)) : null;
  }

  /** Row counts for the system report. */
  stats(): ReturnType<CollectionStore['stats']> {
    return this.store.stats();
  }

  /** The state of every collection's search index, for the system report. */
  searchSummary(): Record<string, unknown>[] {
    return this.indexes.summary(this.store.allCollections());
  }

  list(cursor: string | null | undefined, limit: number): Page<CollectionT> {
    const after = cursor ? this.cursors.decode(cursor, 'collections') : null;
    return toPage(this.store.listCollections(after, limit + 1), limit, (c) => c.id, this.cursors, 'collections');
  }

  private detectionProblem(p: DetectionProfile): ApiError | null {
    const problem =
      p.input_sizes.length < 1 || p.input_sizes.length > 4
        ? 'input_sizes needs 1 to 4 sizes'
        : inputSizesProblem(p.input_sizes);
    return problem ? Errors.invalidDetectionProfile(problem, p.input_sizes) : null;
  }

  async create(body: CollectionCreateT): Promise<CollectionT> {
    checkMetadata(body.metadata);
    const model = this.activeModel();
    if (!model) throw Errors.serviceNotReady();
    const d = this.defaults.collections;
    const search = body.search ?? {};
    const capacity = search.capacity_rows ?? d.default_capacity_rows;
    if (capacity > d.max_capacity_rows) {
      throw Errors.searchCapacityTooLarge(d.max_capacity_rows);
    }
    const sys = this.defaults.systemProfile;
    const det = body.detection ?? {};
    const detection: DetectionProfile = {
      input_sizes: (det.input_sizes ?? sys.input_sizes) as [number, number][],
      threshold: det.threshold ?? sys.threshold,
      nms_threshold: det.nms_threshold ?? sys.nms_threshold,
      single_face_selection: det.single_face_selection ?? sys.single_face_selection,
    };
    const problem = this.detectionProblem(detection);
    if (problem) throw problem;
    const binding: ModelBinding = {
      model_id: model.model_id,
      model_digest: model.model_digest,
      embedding_dimension: model.embedding_dimension,
      preprocessing_version: model.preprocessing_version,
    };
    const at = nowIso();
    const row = {
      id: body.id,
      name: body.name,
      description: body.description,
      default_threshold: body.threshold ?? this.defaults.defaultThreshold,
      ...binding,
      embedding_contract_id: embeddingContractId(binding),
      search_profile: search.profile ?? d.default_search_profile,
      capacity_rows: capacity,
      max_faces_per_person: search.max_faces_per_person ?? d.default_max_faces_per_person,
      load_policy: search.load_policy ?? (body.id === '_default' ? 'eager' : d.default_load_policy),
      search_index: {
        type: search.index ?? d.default_search_index,
        hnsw: {
          connectivity: search.hnsw?.connectivity ?? d.hnsw_connectivity,
          expansion_add: search.hnsw?.expansion_add ?? d.hnsw_expansion_add,
          expansion_search: search.hnsw?.expansion_search ?? d.hnsw_expansion_search,
        },
      },
      save_face_crops: body.save_face_crops ?? d.save_face_crops,
      metadata: body.metadata,
      detection,
      created_at: at,
      updated_at: at,
    };
    const inserted = await this.writer.createCollection(row);
    if (!inserted) throw Errors.collectionExists();
    const created = this.get(body.id);
    if (created.load_policy === 'eager') {
      try {
        this.indexes.ready(created);
      } catch (e) {
        // An eager collection whose index cannot be allocated is not kept.
        await this.writer.deleteCollection(created.id, () => undefined);
        this.indexes.drop(created.id);
        throw e;
      }
    }
    return created;
  }

  async patch(id: string, body: CollectionPatchT): Promise<CollectionT> {
    if (body.metadata !== undefined) checkMetadata(body.metadata);
    // The writer reconfigures the index when index settings change.
    await this.writer.updateCollection(id, (c) => this.patchColumns(this.checkBound(c), body));
    return this.get(id);
  }

  /** The columns a patch changes on collection `c` (checked); empty for a no-op patch. */
  private patchColumns(c: CollectionT, body: CollectionPatchT): Record<string, string | number> {
    {
      const cols: Record<string, string | number> = {};
      const set = (col: string, next: string | number, current: string | number) => {
        if (next !== current) cols[col] = next;
      };
      if (body.name !== undefined) set('name', body.name, c.name);
      if (body.description !== undefined) set('description', body.description, c.description);
      if (body.threshold !== undefined) set('default_threshold', body.threshold, c.default_threshold);
      if (body.save_face_crops !== undefined)
        set('save_face_crops', body.save_face_crops ? 1 : 0, c.save_face_crops ? 1 : 0);
      if (body.metadata !== undefined) set('metadata_json', JSON.stringify(body.metadata), JSON.stringify(c.metadata));
      if (body.detection) {
        const next: DetectionProfile = { ...detectionProfileOf(c), ...body.detection } as DetectionProfile;
        const problem = this.detectionProblem(next);
        if (problem) throw problem;
        const before = { ...cols };
        set('detector_input_sizes_json', JSON.stringify(next.input_sizes), JSON.stringify(c.detection.input_sizes));
        set('detector_threshold', next.threshold, c.detection.threshold);
        set('detector_nms_threshold', next.nms_threshold, c.detection.nms_threshold);
        set('single_face_selection', next.single_face_selection, c.detection.single_face_selection);
        // An effective detection change bumps detection_revision; a no-op patch does not.
        if (Object.keys(cols).length > Object.keys(before).length) cols.detection_revision = c.detection_revision + 1;
      }
      if (body.search) {
        const s = body.search;
        if (s.capacity_rows !== undefined) {
          const max = this.defaults.collections.max_capacity_rows;
          if (s.capacity_rows > max) throw Errors.searchCapacityTooLarge(max);
          if (s.capacity_rows < c.face_count) {
            throw Errors.collectionCapacityExceeded(s.capacity_rows, c.face_count, true);
          }
          set('capacity_rows', s.capacity_rows, c.capacity_rows);
        }
        if (s.max_faces_per_person !== undefined)
          set('max_faces_per_person', s.max_faces_per_person, c.max_faces_per_person);
        if (s.load_policy !== undefined) set('load_policy', s.load_policy, c.load_policy);
        if (s.index !== undefined || s.hnsw !== undefined) {
          const next = indexColumns({
            type: s.index ?? c.search_index.type,
            hnsw: { ...c.search_index.hnsw, ...s.hnsw },
          });
          const now = indexColumns(c.search_index);
          set('search_index', next.search_index_type, now.search_index_type);
          for (const k of ['hnsw_connectivity', 'hnsw_expansion_add', 'hnsw_expansion_search'] as const)
            set(k, next[k], now[k]);
        }
      }
      return cols;
    }
  }

  /** 409 collection_not_empty without force; allowed even on a model mismatch. Persons, faces and crops go with it. */
  async delete(id: string, force: boolean, inUse: (id: string) => boolean = () => false): Promise<void> {
    const check = (c: CollectionT) => {
      if (inUse(id)) throw Errors.collectionInUse(id);
      if (!force && (c.person_count > 0 || c.face_count > 0)) {
        throw Errors.collectionNotEmpty(id, c.person_count, c.face_count);
      }
    };
    await this.writer.deleteCollection(id, check);
    this.indexes.drop(id);
  }
}
