import { z } from 'zod';

/**
 * Wire schemas of the /v1 contract (InsightFace Server 0.3.x names). Each `.meta({id})` becomes a
 * component in /openapi.json, and the same objects validate requests, so the two cannot drift.
 * Responses are loose objects (additionalProperties: true), as upstream.
 */
const id = (name: string) => ({ id: name });

export const ErrorEnvelope = z
  .object({
    error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }),
    request_id: z.uuid(),
  })
  .meta(id('ErrorEnvelope'));

export const PixelBox = z.looseObject({ x: z.int(), y: z.int(), width: z.int(), height: z.int() }).meta(id('PixelBox'));
export const NormalizedBox = z.looseObject({ left: z.number(), top: z.number(), width: z.number(), height: z.number() }).meta(id('NormalizedBox'));
export const BoundingBox = z.looseObject({ pixels: PixelBox, normalized: NormalizedBox }).meta(id('BoundingBox'));
export const FaceQuality = z
  .looseObject({ score: z.number(), sharpness: z.number(), brightness: z.number(), pose: z.number() })
  .meta(id('FaceQuality'));
export const LivenessResult = z
  .strictObject({
    status: z.enum(['ok', 'input_rejected']),
    is_live: z.boolean().nullable(),
    live_score: z.number().nullable(),
    reason: z.string().nullable().optional(),
  })
  .meta(id('LivenessResult'));
export const FaceObservation = z
  .looseObject({
    bbox: BoundingBox,
    landmarks: z.array(z.array(z.number())),
    detection_score: z.number(),
    quality: FaceQuality,
    embedding: z.array(z.number()).nullable().optional(),
    liveness: LivenessResult.nullable().optional().describe('Omitted when liveness was not evaluated for this face.'),
  })
  .meta(id('FaceObservation'));

export const ModelComponent = z
  .looseObject({
    model_id: z.string(),
    task: z.string(),
    sha256: z.string(),
    file: z.string().nullable().optional(),
    input_size: z.array(z.int()).nullable().optional(),
    embedding_dimension: z.int().nullable().optional(),
    preprocessing_version: z.string().nullable().optional(),
  })
  .meta(id('ModelComponent'));
export const RecommendedThreshold = z
  .looseObject({
    similarity: z.number().describe('Default match threshold for this pack: a match is similarity >= this value.'),
    far: z.number().describe('False accept rate per comparison at which the value was read (bench/quality.ts).'),
    basis: z.string().describe('How the value was measured.'),
  })
  .meta(id('RecommendedThreshold'));
const recommendedThreshold = RecommendedThreshold.nullable().optional()
  .describe("The pack's measured default threshold (Vigil extension); null when the pack has none and the upstream 0.4 applies.");

export const ModelSummary = z
  .looseObject({
    model_id: z.string(),
    model_digest: z.string(),
    embedding_dimension: z.int(),
    preprocessing_version: z.string(),
    provider: z.string(),
    models: z.array(ModelComponent),
    license: z.record(z.string(), z.unknown()).nullable(),
    addons: z.array(ModelComponent).nullable().optional(),
    recommended_threshold: recommendedThreshold,
  })
  .meta(id('ModelSummary'));

const requestId = z.uuid();
const looseRecord = z.record(z.string(), z.unknown());

export const HealthResponse = z
  .looseObject({ request_id: requestId, status: z.enum(['ready', 'not_ready']), version: z.string(), auth_enabled: z.boolean() })
  .meta(id('HealthResponse'));
export const ModelsResponse = z
  .looseObject({
    request_id: requestId,
    models: z.array(ModelComponent),
    execution_provider: z.string(),
    license: looseRecord.nullable(),
    addons: z.array(ModelComponent).nullable().optional(),
    recommended_threshold: recommendedThreshold,
    default_threshold: z.number().optional()
      .describe('Threshold compare and new collections use when the client sends none (Vigil extension).'),
    default_threshold_source: z.enum(['config', 'pack', 'upstream']).optional()
      .describe('config: [inference] default_threshold; pack: recommended_threshold; upstream: 0.4 (Vigil extension).'),
  })
  .meta(id('ModelsResponse'));
export const SystemResponse = z
  .looseObject({
    request_id: requestId,
    server_version: z.string(),
    os: z.string(),
    architecture: z.string(),
    cpu: looseRecord,
    runtime: looseRecord,
    execution_provider: z.string(),
    model: ModelSummary,
    database: looseRecord,
    data: looseRecord,
    models: looseRecord,
    stats: z.record(z.string(), z.int()),
    search: looseRecord,
    api_key: z.record(z.string(), z.boolean()),
    safe_config: looseRecord,
    recent_errors: z.array(looseRecord),
  })
  .meta(id('SystemResponse'));
export const DetectResponse = z
  .looseObject({ request_id: requestId, faces: z.array(FaceObservation), processing_ms: z.number() })
  .meta(id('DetectResponse'));
export const CompareResponse = z
  .looseObject({
    request_id: requestId,
    matched: z.boolean(),
    similarity: z.number(),
    threshold: z.number(),
    source_face: FaceObservation,
    target_face: FaceObservation,
    processing_ms: z.number(),
  })
  .meta(id('CompareResponse'));
export const EmbeddingsResponse = z
  .looseObject({ request_id: requestId, faces: z.array(FaceObservation), model: ModelSummary, processing_ms: z.number() })
  .meta(id('EmbeddingsResponse'));

// ---- multipart request bodies: text fields are validated by these; file fields are documented. ----

/** A file part, as FastAPI documents UploadFile. Validation of files happens in the multipart parser. */
export const filePart = (title: string) => z.string().meta({ contentMediaType: 'application/octet-stream', title });
/** Multipart text fields arrive as strings; an empty string means "not sent", as in HTML forms. */
const emptyAsUndefined = (v: unknown) => (v === '' ? undefined : v);
/** A form/query text field: empty means absent, then `s` validates. */
export const formField = <S extends z.ZodType>(s: S) => z.preprocess(emptyAsUndefined, s);
export const formNumber = (s: z.ZodNumber) => formField(z.coerce.number().pipe(s).nullish());
export const formString = (s: z.ZodString = z.string()) => formField(s.nullish());
/** An integer form/query field with bounds and a default. */
export const formInt = (min: number, max: number, def: number) => formField(z.coerce.number().pipe(z.int().min(min).max(max)).default(def));

export const DetectBody = z
  .object({
    image: filePart('Image'),
    max_faces: formNumber(z.int().min(1).max(100)),
    collection_id: formString(),
    min_score: formNumber(z.number().min(0).max(1)).meta({ deprecated: true }),
  })
  .meta(id('Body_detect_v1_detect_post'));
export const CompareBody = z
  .object({
    source: filePart('Source'),
    target: filePart('Target'),
    threshold: formNumber(z.number().min(0).max(1)),
    collection_id: formString(),
  })
  .meta(id('Body_compare_v1_compare_post'));
export const EmbeddingsBody = z
  .object({
    image: filePart('Image'),
    collection_id: formString(),
    face_selection: formString().meta({ deprecated: true }),
  })
  .meta(id('Body_embeddings_v1_embeddings_post'));

export type FaceObservationT = z.infer<typeof FaceObservation>;
export type ModelSummaryT = z.infer<typeof ModelSummary>;
export type ModelComponentT = z.infer<typeof ModelComponent>;

export const AddonPreparationError = z.object({ code: z.string(), message: z.string() }).meta(id('AddonPreparationError'));
export const LivenessManagementResponse = z
  .looseObject({
    request_id: requestId,
    enabled: z.boolean().describe('Whether liveness is active in the running Server.'),
    installed: z.boolean().describe('Whether the local model files pass the pinned SHA-256 check.'),
    configured_enabled: z.boolean().describe('Whether the current on-disk config enables liveness for the next startup.'),
    restart_required: z.boolean(),
    can_enable: z.boolean(),
    unavailable_code: z.string().nullable(),
    unavailable_reason: z.string().nullable(),
    state: z.enum(['idle', 'downloading', 'ready', 'error']).describe('ready means the files are verified; it does not mean enabled or restarted.'),
    error: AddonPreparationError.nullable(),
    model_path: z.string(),
    config_file: z.string().nullable(),
  })
  .meta(id('LivenessManagementResponse'));
/** The enable action takes exactly `{}`. */
export const EmptyBody = z.strictObject({});
