import { z } from 'zod';
import { looseRecord, requestId, schemaId as id } from './common.js';

/** Models, health, the system report and addon management. */
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
const recommendedThreshold = RecommendedThreshold.nullable()
  .optional()
  .describe(
    "The pack's measured default threshold (Vigil extension); null when the pack has none and the upstream 0.4 applies.",
  );

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

export const HealthResponse = z
  .looseObject({
    request_id: requestId,
    status: z.enum(['ready', 'degraded', 'not_ready']),
    version: z.string(),
    auth_enabled: z.boolean(),
  })
  .meta(id('HealthResponse'));
export const ModelsResponse = z
  .looseObject({
    request_id: requestId,
    models: z.array(ModelComponent),
    execution_provider: z.string(),
    license: looseRecord.nullable(),
    addons: z.array(ModelComponent).nullable().optional(),
    recommended_threshold: recommendedThreshold,
    default_threshold: z
      .number()
      .optional()
      .describe('Threshold compare and new collections use when the client sends none (Vigil extension).'),
    default_threshold_source: z
      .enum(['config', 'pack', 'upstream'])
      .optional()
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
export type ModelSummaryT = z.infer<typeof ModelSummary>;
export type ModelComponentT = z.infer<typeof ModelComponent>;

export const AddonPreparationError = z
  .object({ code: z.string(), message: z.string() })
  .meta(id('AddonPreparationError'));
export const LivenessManagementResponse = z
  .looseObject({
    request_id: requestId,
    enabled: z.boolean().describe('Whether liveness is active in the running Server.'),
    installed: z.boolean().describe('Whether the local model files pass the pinned SHA-256 check.'),
    configured_enabled: z
      .boolean()
      .describe('Whether the current on-disk config enables liveness for the next startup.'),
    restart_required: z.boolean(),
    can_enable: z.boolean(),
    unavailable_code: z.string().nullable(),
    unavailable_reason: z.string().nullable(),
    state: z
      .enum(['idle', 'downloading', 'ready', 'error'])
      .describe('ready means the files are verified; it does not mean enabled or restarted.'),
    error: AddonPreparationError.nullable(),
    model_path: z.string(),
    config_file: z.string().nullable(),
  })
  .meta(id('LivenessManagementResponse'));
