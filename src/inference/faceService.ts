import { ApiError, Errors } from '../contract/errors.js';
import type { InferenceEngine } from './engine.js';
import { passed, type LivenessResult } from './liveness.js';
import { cosineSimilarity, type AnalyzedFace, type AnalyzeRequest, type DetectionProfile } from './pipeline.js';

export interface ImageLimits {
  maxBytes: number;
  maxPixels: number;
}

/** The server's liveness settings ([inference] liveness_*); requests can never change them. */
export interface LivenessPolicy {
  mode: 'normal' | 'observe';
  threshold: number;
  compareScope: 'both' | 'source' | 'target';
  onRegistration: boolean;
}

/** The 422 for a selected face that failed liveness in normal mode. */
export function livenessRejection(result: LivenessResult): ApiError {
  if (result.status === 'input_rejected') return Errors.livenessInputRejected(result.reason, result);
  return Errors.livenessFake(result);
}

/** Why normal-mode liveness blocks this face, as the registration rejection reason; null when it does not. */
export function livenessBlock(
  policy: LivenessPolicy | null,
  face: AnalyzedFace,
): 'liveness_fake' | 'liveness_input_rejected' | null {
  if (!policy || policy.mode !== 'normal' || !face.liveness || passed(face.liveness)) return null;
  return face.liveness.status === 'input_rejected' ? 'liveness_input_rejected' : 'liveness_fake';
}

export interface AnalyzedImage {
  width: number;
  height: number;
  faces: AnalyzedFace[];
}

/**
 * detect / compare / embeddings, independent of HTTP. Callers pass the detection profile of the
 * collection they work for; without one the server's profile applies.
 */
export class FaceService {
  constructor(
    private readonly engine: InferenceEngine,
    private readonly systemProfile: DetectionProfile,
    private readonly limits: ImageLimits,
    private readonly maxDetectedFaces: number,
    readonly defaultThreshold: number,
    readonly liveness: LivenessPolicy | null = null,
  ) {}

  private request(
    image: Uint8Array,
    profile: DetectionProfile,
    maxFaces: number,
    embed: AnalyzeRequest['embed'],
    liveness: 'all' | 'selected' | null,
  ): AnalyzeRequest {
    const p = this.liveness;
    return {
      image: { encoded: image },
      limits: this.limits,
      profile,
      maxFaces,
      embed,
      ...(p && liveness ? { liveness: { faces: liveness, mode: p.mode, threshold: p.threshold } } : {}),
    };
  }

  async detect(
    input: { image: Uint8Array; maxFaces?: number | null; profile?: DetectionProfile | null },
    signal?: AbortSignal,
  ): Promise<AnalyzedImage> {
    const cap = Math.min(input.maxFaces ?? this.maxDetectedFaces, this.maxDetectedFaces);
    const r = await this.engine.analyze(
      this.request(input.image, input.profile ?? this.systemProfile, cap, 'none', 'all'),
      signal,
    );
    return { width: r.width, height: r.height, faces: r.faces };
  }

  /**
   * The single selected face of an image with its embedding; 422 face_not_found when there is none. With
   * liveness on (and `checkLiveness`), a selected face that fails in normal mode is a 422 and is never
   * replaced by another face; observe mode returns the result on the face and carries on.
   */
  async embedOne(
    input: { image: Uint8Array; profile?: DetectionProfile | null; checkLiveness?: boolean },
    signal?: AbortSignal,
  ): Promise<AnalyzedImage & { face: AnalyzedFace & { embedding: Float32Array } }> {
    const r = await this.engine.analyze(
      this.request(
        input.image,
        input.profile ?? this.systemProfile,
        this.maxDetectedFaces,
        'selected',
        input.checkLiveness === false ? null : 'selected',
      ),
      signal,
    );
    const face = r.faces[r.selected];
    if (!face) throw Errors.faceNotFound();
    if (livenessBlock(this.liveness, face)) throw livenessRejection(face.liveness!);
    if (!face.embedding) {
      if (face.liveness) throw Errors.embeddingUnavailable(face.liveness);
      throw Errors.faceNotFound();
    }
    return {
      width: r.width,
      height: r.height,
      faces: r.faces,
      face: face as AnalyzedFace & { embedding: Float32Array },
    };
  }

  /**
   * Every face of an image (largest first), each with its embedding where one could be made, and the
   * index of the face the profile selects; 422 face_not_found when there is none. Liveness runs on every
   * face; in normal mode a face that fails it gets no embedding (see `faceProblem`), the others carry on.
   */
  async embedAll(
    input: { image: Uint8Array; profile?: DetectionProfile | null },
    signal?: AbortSignal,
  ): Promise<AnalyzedImage & { selected: number }> {
    const r = await this.engine.analyze(
      this.request(input.image, input.profile ?? this.systemProfile, this.maxDetectedFaces, 'all', 'all'),
      signal,
    );
    if (r.faces.length === 0) throw Errors.faceNotFound();
    return { width: r.width, height: r.height, faces: r.faces, selected: r.selected };
  }

  /** Why a face from `embedAll` cannot be searched (the code a single-face request would fail with), or null. */
  faceProblem(
    face: AnalyzedFace,
  ): { code: 'liveness_fake' | 'liveness_input_rejected' | 'embedding_unavailable'; message: string } | null {
    // The same catalogue errors a single-face request throws, reported per face instead.
    const e = livenessBlock(this.liveness, face)
      ? livenessRejection(face.liveness!)
      : face.embedding
        ? null
        : Errors.embeddingUnavailable(face.liveness ?? null);
    return e
      ? { code: e.code as 'liveness_fake' | 'liveness_input_rejected' | 'embedding_unavailable', message: e.message }
      : null;
  }

  async compare(
    input: { source: Uint8Array; target: Uint8Array; threshold?: number | null; profile?: DetectionProfile | null },
    signal?: AbortSignal,
  ) {
    const threshold = input.threshold ?? this.defaultThreshold;
    const scope = this.liveness?.compareScope ?? 'both';
    // Both sides run concurrently; with more than one inference worker they really run in parallel. When
    // both fail, the source's error is the answer whichever finished first: upstream checks the source first.
    const [sourceResult, targetResult] = await Promise.allSettled([
      this.embedOne({ image: input.source, profile: input.profile, checkLiveness: scope !== 'target' }, signal),
      this.embedOne({ image: input.target, profile: input.profile, checkLiveness: scope !== 'source' }, signal),
    ]);
    if (sourceResult.status === 'rejected') throw withSide(sourceResult.reason, 'source');
    if (targetResult.status === 'rejected') throw withSide(targetResult.reason, 'target');
    const source = sourceResult.value,
      target = targetResult.value;
    const similarity = cosineSimilarity(source.face.embedding, target.face.embedding);
    return { matched: similarity >= threshold, similarity, threshold, source, target };
  }
}

/** Tells the client which image failed (the contract's details.side). */
function withSide(e: unknown, side: 'source' | 'target'): unknown {
  if (e instanceof ApiError && e.status < 500) return e.withDetails({ side });
  return e;
}
