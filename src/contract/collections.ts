import { z } from 'zod';
import {
  filePart,
  formField,
  formInt,
  formNumber,
  formString,
  nextCursor,
  requestId,
  schemaId as id,
} from './common.js';
import { Errors } from './errors.js';
import { BoundingBox, FaceObservation, FaceQuality, LivenessResult } from './faces.js';

/**
 * Search profiles are the quantisation contract of a collection (§4): how a stored vector is encoded and
 * how a score is computed (src/search/profiles.ts implements them).
 */
export const SEARCH_PROFILES = ['fp32_v1', 'fp16_v1', 'bf16_v1', 'int8_x736_v1', 'int8_x1000_v1'] as const;
export type SearchProfile = (typeof SEARCH_PROFILES)[number];

/**
 * Collections, persons, face samples and search as the /v1 contract names them. The same zod objects
 * validate requests, type the services and become /openapi.json components.
 */

/** `_default`, or 1-64 characters starting with a letter or digit. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
export const isValidId = (v: string) => v === '_default' || ID_PATTERN.test(v);
export const isValidPersonId = (v: string) => ID_PATTERN.test(v);

const metadata = z.record(z.string(), z.unknown());

/**
 * Bounds of a collection's or a person's `metadata` (upstream sets none; issue 36.1): a 15 MB one held the
 * event loop for 9 s while it was parsed, compared and stored, and 5,000 nested levels overflowed the stack
 * of the code that serialises it (500). Labels, ids and notes take a few KB; 64 KiB of JSON and 16 levels
 * leave room for any such use.
 */
export const MAX_METADATA_BYTES = 64 * 1024;
export const MAX_METADATA_DEPTH = 16;

export type MetadataProblem =
  | { reason: 'too_deep'; max_metadata_depth: number }
  | { reason: 'too_large'; max_metadata_bytes: number; bytes: number };

/** Why `value` is outside the metadata bounds, or null. The depth is checked first, so stringify never recurses deeply. */
export function metadataProblem(value: unknown): MetadataProblem | null {
  if (deeperThan(value, MAX_METADATA_DEPTH)) return { reason: 'too_deep', max_metadata_depth: MAX_METADATA_DEPTH };
  // TextEncoder, not Buffer: the browser code type-checks this module too.
  const bytes = new TextEncoder().encode(JSON.stringify(value) ?? '').length;
  return bytes > MAX_METADATA_BYTES ? { reason: 'too_large', max_metadata_bytes: MAX_METADATA_BYTES, bytes } : null;
}

/** Throws 400 invalid_metadata when `value` is outside the metadata bounds (every path that stores metadata calls it). */
export function checkMetadata(value: unknown): void {
  const problem = metadataProblem(value);
  if (problem) throw Errors.invalidMetadata(problem);
}

/** Whether objects/arrays nest more than `levels` deep (the top object is level 1); stops at the first one too deep. */
function deeperThan(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (levels === 0) return true;
  for (const v of Array.isArray(value) ? value : Object.values(value)) if (deeperThan(v, levels - 1)) return true;
  return false;
}
// Shape only: the size rules are checked by the service so a bad profile is invalid_detection_profile.
const inputSizes = z.array(z.tuple([z.int(), z.int()]));
const selection = z.enum(['largest', 'center_largest']);
const loadPolicy = z.enum(['eager', 'lazy']);
const capacityRows = z.int().min(1).max(Number.MAX_SAFE_INTEGER);
const maxFaces = z.int().min(1).max(1_000_000);
const unit = z.number().min(0).max(1);

export const DetectionProfileSchema = z
  .looseObject({
    input_sizes: z.array(z.array(z.int())),
    threshold: z.number(),
    nms_threshold: z.number(),
    single_face_selection: selection,
  })
  .meta(id('DetectionProfile'));

export const CollectionDetectionCreate = z
  .strictObject({
    input_sizes: inputSizes.nullish(),
    threshold: unit.nullish(),
    nms_threshold: unit.nullish(),
    single_face_selection: selection.nullish(),
  })
  .meta(id('CollectionDetectionCreate'));
// Vigil extension (additive): the search index of a collection. Absent = the deployment default.
const searchIndexType = z.enum(['exact', 'hnsw']);
const hnswParams = {
  connectivity: z.int().min(4).max(64),
  expansion_add: z.int().min(16).max(1024),
  expansion_search: z.int().min(16).max(4096),
};
export const HnswSettingsInput = z
  .strictObject({
    connectivity: hnswParams.connectivity.optional(),
    expansion_add: hnswParams.expansion_add.optional(),
    expansion_search: hnswParams.expansion_search.optional(),
  })
  .meta(id('HnswSettingsInput'));
export const SearchIndexSettings = z
  .looseObject({ type: searchIndexType, hnsw: z.looseObject(hnswParams) })
  .describe(
    'The search index: exact (every row scanned) or hnsw (approximate graph, candidates re-ranked exactly; exact while it is built or stale).',
  )
  .meta(id('SearchIndexSettings'));
export type SearchIndexSettingsT = z.infer<typeof SearchIndexSettings>;
export const CollectionSearchCreate = z
  .strictObject({
    profile: z.enum(SEARCH_PROFILES).nullish(),
    capacity_rows: capacityRows.nullish(),
    max_faces_per_person: maxFaces.nullish(),
    load_policy: loadPolicy.nullish(),
    index: searchIndexType.nullish(),
    hnsw: HnswSettingsInput.nullish(),
  })
  .meta(id('CollectionSearchCreate'));
export const CollectionCreate = z
  .strictObject({
    id: z.string().refine(isValidId, 'id must be _default or match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    name: z.string().min(1).max(200),
    description: z.string().max(2000).default(''),
    threshold: unit.nullish(),
    save_face_crops: z.boolean().nullish(),
    metadata: metadata.default({}),
    detection: CollectionDetectionCreate.optional(),
    search: CollectionSearchCreate.optional(),
  })
  .meta(id('CollectionCreate'));

/** PATCH bodies reject explicit nulls: "absent" and "null" are different things for a patch. */
const noNull = <T extends z.ZodType>(s: T) => s.optional();
export const CollectionDetectionPatch = z
  .strictObject({
    input_sizes: noNull(inputSizes),
    threshold: noNull(unit),
    nms_threshold: noNull(unit),
    single_face_selection: noNull(selection),
  })
  .meta(id('CollectionDetectionPatch'));
export const CollectionSearchPatch = z
  .strictObject({
    capacity_rows: noNull(capacityRows),
    max_faces_per_person: noNull(maxFaces),
    load_policy: noNull(loadPolicy),
    index: noNull(searchIndexType),
    hnsw: noNull(HnswSettingsInput),
  })
  .meta(id('CollectionSearchPatch'));
export const CollectionPatch = z
  .strictObject({
    name: noNull(z.string().min(1).max(200)),
    description: noNull(z.string().max(2000)),
    threshold: noNull(unit),
    save_face_crops: noNull(z.boolean()),
    metadata: noNull(metadata),
    detection: noNull(CollectionDetectionPatch),
    search: noNull(CollectionSearchPatch),
  })
  .meta(id('CollectionPatch'));

export const PersonPatch = z
  .strictObject({
    name: z.string().max(200).nullable().optional(),
    external_id: z.string().max(200).nullable().optional(),
    metadata: noNull(metadata),
  })
  .meta(id('PersonPatch'));

export const Collection = z
  .looseObject({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    default_threshold: z.number(),
    model_id: z.string(),
    model_digest: z.string(),
    embedding_dimension: z.int(),
    preprocessing_version: z.string(),
    embedding_contract_id: z.string(),
    search_profile: z.string(),
    capacity_rows: z.int(),
    max_faces_per_person: z.int(),
    load_policy: loadPolicy,
    search_revision: z.int(),
    save_face_crops: z.boolean(),
    metadata,
    person_count: z.int(),
    face_count: z.int(),
    created_at: z.string(),
    updated_at: z.string(),
    detection: DetectionProfileSchema,
    detection_revision: z.int(),
    search_index: SearchIndexSettings,
  })
  .meta(id('Collection'));

export const Person = z
  .looseObject({
    id: z.string(),
    name: z.string().nullable(),
    external_id: z.string().nullable(),
    metadata,
    face_count: z.int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta(id('Person'));

export type CollectionT = z.infer<typeof Collection>;
export type PersonT = z.infer<typeof Person>;
export type CollectionCreateT = z.infer<typeof CollectionCreate>;
export type CollectionPatchT = z.infer<typeof CollectionPatch>;
export type PersonPatchT = z.infer<typeof PersonPatch>;

/** The model binding a collection is pinned to (§3.7). */
export interface ModelBinding {
  model_id: string;
  model_digest: string;
  embedding_dimension: number;
  preprocessing_version: string;
}

export const FaceSample = z
  .looseObject({
    id: z.string(),
    person_id: z.string().nullable().optional(),
    bounding_box: BoundingBox,
    landmarks: z.array(z.array(z.number())).nullable(),
    detection_score: z.number(),
    quality: FaceQuality,
    model_id: z.string(),
    model_digest: z.string(),
    preprocessing_version: z.string(),
    embedding_source: z.enum(['server', 'external_trusted']),
    embedding_contract_id: z.string().nullable(),
    has_crop: z.boolean(),
    created_at: z.string(),
    liveness: LivenessResult.nullable()
      .optional()
      .describe('Saved evaluation from registration, omitted when no evaluation occurred.'),
  })
  .meta(id('FaceSample'));
export type FaceSampleT = z.infer<typeof FaceSample>;

export const RejectedImage = z
  .looseObject({
    index: z.int(),
    filename: z.string(),
    reason: z.string().describe('Actual rejection reason, such as low_quality or identity_similarity_conflict.'),
    liveness: LivenessResult.nullable().optional(),
  })
  .meta(id('RejectedImage'));
export type RejectedImageT = z.infer<typeof RejectedImage>;

// ---- request bodies, queries and responses of the collections / persons / search routes ----

export const CollectionResponse = z
  .looseObject({ request_id: requestId, collection: Collection })
  .meta(id('CollectionResponse'));
export const CollectionPageResponse = z
  .looseObject({ request_id: requestId, collections: z.array(Collection), next_cursor: nextCursor })
  .meta(id('CollectionPageResponse'));
export const PersonResponse = z.looseObject({ request_id: requestId, person: Person }).meta(id('PersonResponse'));
export const PersonPageResponse = z
  .looseObject({ request_id: requestId, persons: z.array(Person), next_cursor: nextCursor })
  .meta(id('PersonPageResponse'));
export const FacePageResponse = z
  .looseObject({ request_id: requestId, faces: z.array(FaceSample), next_cursor: nextCursor })
  .meta(id('FacePageResponse'));
export const PersonRegistrationResponse = z
  .looseObject({
    request_id: requestId,
    person: Person,
    faces: z.array(FaceSample),
    rejected_images: z.array(RejectedImage),
  })
  .meta(id('PersonRegistrationResponse'));
export const FaceRegistrationResponse = z
  .looseObject({ request_id: requestId, faces: z.array(FaceSample), rejected_images: z.array(RejectedImage) })
  .meta(id('FaceRegistrationResponse'));
export const Match = z
  .looseObject({ person: Person, similarity: z.number(), matched_face_id: z.string() })
  .meta(id('Match'));
/** Why one face of a multi-face search has no matches (a partial result, never a silent empty one). */
export const FaceProblem = z
  .looseObject({
    code: z.enum(['liveness_fake', 'liveness_input_rejected', 'embedding_unavailable']),
    message: z.string(),
  })
  .meta(id('FaceProblem'));
export const FaceSearchResult = z
  .looseObject({
    face: FaceObservation,
    selected: z
      .boolean()
      .describe('The face the collection profile selects: the one searched_face and matches describe.'),
    matches: z.array(Match),
    problem: FaceProblem.optional().describe(
      'Present when this face could not be searched; its matches are then empty.',
    ),
  })
  .meta(id('FaceSearchResult'));
export const SearchResponse = z
  .looseObject({
    request_id: requestId,
    searched_face: FaceObservation,
    matches: z.array(Match),
    threshold: z.number(),
    processing_ms: z.number(),
    faces: z
      .array(FaceSearchResult)
      .optional()
      .describe(
        'Only with faces=all (Vigil extension): every detected face, largest first, each searched on its own with the same limit and threshold.',
      ),
  })
  .meta(id('SearchResponse'));

const registrationFields = {
  images: z.array(filePart('Images')),
  review_mode: formField(z.enum(['off', 'standard', 'strict']).default('off')),
  embedding_mode: formField(z.enum(['server', 'external_trusted']).default('server')),
  external_embeddings: formString(),
  embedding_contract_id: formString(z.string().max(256)),
};
export const CreatePersonBody = z
  .object({
    ...registrationFields,
    id: formString(),
    name: formString(z.string().max(200)),
    external_id: formString(z.string().max(200)),
    metadata: z.string().default('{}'),
  })
  .meta(id('Body_create_person_v1_collections__collection_id__persons_post'));
export const AddFacesBody = z
  .object(registrationFields)
  .meta(id('Body_add_faces_v1_collections__collection_id__persons__person_id__faces_post'));
export const SearchBody = z
  .object({
    image: filePart('Image'),
    limit: formInt(1, 100, 5),
    threshold: formNumber(z.number().min(0).max(1)),
    face_selection: formString().meta({ deprecated: true }),
    faces: formField(z.enum(['selected', 'all']).default('selected')).describe(
      'selected (default, upstream): search with the one face the collection profile selects. all (Vigil extension): also search every ' +
        'detected face and return them in faces[], each with its box and matches; a face that fails liveness or has no embedding gets a ' +
        'problem instead of failing the request.',
    ),
  })
  .meta(id('Body_search_v1_collections__collection_id__search_post'));

export const ListQuery = z.object({ limit: formInt(1, 100, 50), cursor: z.string().nullish() });
export const PersonListQuery = z.object({
  limit: formInt(1, 100, 50),
  cursor: z.string().nullish(),
  search: z.string().max(200).nullish(),
});
const BOOLEAN_WORDS: Record<string, boolean> = {
  true: true,
  '1': true,
  yes: true,
  on: true,
  false: false,
  '0': false,
  no: false,
  off: false,
};
export const DeleteCollectionQuery = z.object({
  force: z.preprocess(
    (v) => (typeof v === 'string' ? (BOOLEAN_WORDS[v.toLowerCase()] ?? v) : v),
    z.boolean().default(false),
  ),
});
