import { livenessBlock, type LivenessPolicy } from '../inference/faceService.js';
import { l2Normalize, type AnalyzedFace } from '../inference/pipeline.js';
import { embeddingProblem } from './embeddingRule.js';

export type ReviewMode = 'off' | 'standard' | 'strict';

export interface ReviewGates {
  minScore: number;
  minQuality: number;
  minFaceSize: number;
  maxPoseDegrees: number;
}

export type RejectionReason =
  | 'invalid_image'
  | 'image_too_large'
  | 'face_not_found'
  | 'multiple_faces'
  | 'face_too_small'
  | 'low_detection_score'
  | 'low_quality'
  | 'extreme_pose'
  | 'invalid_embedding'
  | 'invalid_external_embedding'
  | 'invalid_landmarks'
  | 'identity_similarity_conflict'
  | 'liveness_fake'
  | 'liveness_input_rejected';

/**
 * The registration review of one image (§3.5), in the reference's order: face presence, face count
 * (not in `off`), liveness (normal mode, when registration checks it; no review or embedding mode
 * bypasses it), landmarks of trusted input, the embedding, then the quality gates (standard/strict).
 * The strict identity check needs the index and runs later. Returns the face to store or the reason.
 */
export function reviewImage(input: {
  faces: AnalyzedFace[];
  selected: number;
  mode: ReviewMode;
  gates: ReviewGates;
  dimension: number;
  /** A caller-supplied vector (external_trusted), or null to use the face's server embedding. */
  external: Float32Array | null;
  /** The liveness policy when registration evaluates liveness, else null. */
  liveness?: LivenessPolicy | null;
}): { face: AnalyzedFace; embedding: Float32Array } | { reason: RejectionReason } {
  const { faces, mode, gates } = input;
  if (faces.length === 0) return { reason: 'face_not_found' };
  if (mode !== 'off' && faces.length !== 1) return { reason: 'multiple_faces' };
  const face = mode === 'off' ? faces[input.selected] : faces[0];
  if (!face) return { reason: 'face_not_found' };
  const blocked = livenessBlock(input.liveness ?? null, face);
  if (blocked) return { reason: blocked };
  if (input.external) {
    const ok =
      face.landmarks.length === 5 &&
      face.landmarks.every((p) => p.length === 2 && Number.isFinite(p[0]) && Number.isFinite(p[1]));
    if (!ok) return { reason: 'invalid_landmarks' };
  }
  const embedding = input.external ?? face.embedding ?? null;
  if (!embedding || embeddingProblem(embedding, input.dimension))
    return { reason: input.external ? 'invalid_external_embedding' : 'invalid_embedding' };
  if (mode === 'off') return { face, embedding };
  const [x1, y1, x2, y2] = face.box;
  if (Math.min(x2 - x1, y2 - y1) < gates.minFaceSize) return { reason: 'face_too_small' };
  if (face.score < gates.minScore) return { reason: 'low_detection_score' };
  const { yaw, pitch, roll } = face.pose;
  if (
    Math.abs(yaw) > gates.maxPoseDegrees ||
    Math.abs(pitch) > gates.maxPoseDegrees ||
    Math.abs(roll) > gates.maxPoseDegrees
  )
    return { reason: 'extreme_pose' };
  if (face.quality.score < gates.minQuality) return { reason: 'low_quality' };
  return { face, embedding };
}

/**
 * Strict mode's identity rule: a candidate is rejected when another person scores at least as high
 * as the best same-person score (a tie is rejected). The first sample of a person bootstraps.
 */
export function identityConflict(maxSame: number | null, other: number | null): boolean {
  return maxSame !== null && other !== null && maxSame <= other;
}

/**
 * Parses `external_embeddings` (a JSON array with one vector per image). Returns null when the text is
 * not a JSON array; each element becomes a unit vector or an error for that image only.
 */
export function parseExternalEmbeddings(text: string, dim: number): (Float32Array | { problem: string })[] | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed)) return null;
  return parsed.map((v: unknown) => {
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'number'))
      return { problem: 'each vector must be an array of numbers' };
    const problem = embeddingProblem(v as number[], dim);
    if (problem) return { problem };
    // Renormalised once (the same normalisation as server embeddings).
    return l2Normalize(Float32Array.from(v as number[]), dim);
  });
}
