import { z } from 'zod';
import { filePart, formNumber, formString, requestId, schemaId as id } from './common.js';
import { ModelSummary } from './system.js';

/** Faces as detect / compare / embeddings, search and monitors report them. */
export const PixelBox = z.looseObject({ x: z.int(), y: z.int(), width: z.int(), height: z.int() }).meta(id('PixelBox'));
export const NormalizedBox = z
  .looseObject({ left: z.number(), top: z.number(), width: z.number(), height: z.number() })
  .meta(id('NormalizedBox'));
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
  .looseObject({
    request_id: requestId,
    faces: z.array(FaceObservation),
    model: ModelSummary,
    processing_ms: z.number(),
  })
  .meta(id('EmbeddingsResponse'));

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
