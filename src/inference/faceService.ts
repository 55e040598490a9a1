import { ApiError, Messages } from '../errors.js';
import type { InferenceEngine } from './engine.js';
import { cosineSimilarity, type AnalyzedFace, type AnalyzeRequest, type DetectionProfile } from './pipeline.js';

export interface ImageLimits { maxBytes: number; maxPixels: number }

/** Resolves the detection profile for an optional collection (404 unknown, 409 model mismatch). */
export interface DetectionProfiles {
  resolve(collectionId: string | undefined | null): DetectionProfile;
}

export interface AnalyzedImage { width: number; height: number; faces: AnalyzedFace[] }

/** detect / compare / embeddings, independent of HTTP. */
export class FaceService {
  constructor(
    private readonly engine: InferenceEngine,
    private readonly profiles: DetectionProfiles,
    private readonly limits: ImageLimits,
    private readonly maxDetectedFaces: number,
    readonly defaultThreshold: number,
  ) {}

  private request(image: Uint8Array, profile: DetectionProfile, maxFaces: number, embed: AnalyzeRequest['embed']): AnalyzeRequest {
    return { image: { encoded: image }, limits: this.limits, profile, maxFaces, embed };
  }

  async detect(input: { image: Uint8Array; maxFaces?: number | null; collectionId?: string | null }, signal?: AbortSignal): Promise<AnalyzedImage> {
    const profile = this.profiles.resolve(input.collectionId);
    const cap = Math.min(input.maxFaces ?? this.maxDetectedFaces, this.maxDetectedFaces);
    const r = await this.engine.analyze(this.request(input.image, profile, cap, 'none'), signal);
    return { width: r.width, height: r.height, faces: r.faces };
  }

  /** The single selected face of an image with its embedding; 422 face_not_found when there is none. */
  async embedOne(input: { image: Uint8Array; collectionId?: string | null }, signal?: AbortSignal): Promise<AnalyzedImage & { face: AnalyzedFace & { embedding: Float32Array } }> {
    const profile = this.profiles.resolve(input.collectionId);
    const r = await this.engine.analyze(this.request(input.image, profile, this.maxDetectedFaces, 'selected'), signal);
    const face = r.faces[r.selected];
    if (!face?.embedding) throw new ApiError(422, 'face_not_found', Messages.faceNotFound);
    return { width: r.width, height: r.height, faces: r.faces, face: face as AnalyzedFace & { embedding: Float32Array } };
  }

  async compare(input: { source: Uint8Array; target: Uint8Array; threshold?: number | null; collectionId?: string | null }, signal?: AbortSignal) {
    const threshold = input.threshold ?? this.defaultThreshold;
    // Both sides run concurrently; with more than one inference worker they really run in parallel.
    const [source, target] = await Promise.all([
      this.embedOne({ image: input.source, collectionId: input.collectionId }, signal).catch((e: unknown) => { throw withSide(e, 'source'); }),
      this.embedOne({ image: input.target, collectionId: input.collectionId }, signal).catch((e: unknown) => { throw withSide(e, 'target'); }),
    ]);
    const similarity = cosineSimilarity(source.face.embedding, target.face.embedding);
    return { matched: similarity >= threshold, similarity, threshold, source, target };
  }
}

/** Tells the client which image failed (the contract's details.side). */
function withSide(e: unknown, side: 'source' | 'target'): unknown {
  if (e instanceof ApiError && e.status < 500) return new ApiError(e.status, e.code, e.message, { ...e.details, side }, e.headers);
  return e;
}
