import { detectionProfileOf } from '../collections/collectionService.js';
import type { CollectionT } from '../contract/collections.js';
import type { SearchMatch } from '../collections/searchService.js';
import { livenessBlock, type LivenessPolicy } from '../inference/faceService.js';
import { faceObservation } from '../inference/observation.js';
import type { AnalyzedFace, AnalyzeRequest, AnalyzeResult } from '../inference/pipeline.js';
import type { FaceObservationT } from '../contract/faces.js';
import type { Frame } from './frameSource.js';
import type { MonitorPersonT } from '../contract/monitors.js';
import type { MonitorRecord } from './model.js';
import type { Detection, FaceKind } from './tracker.js';

/** What the frame processor needs from the rest of the daemon (the shared engine, collections and search). */
export interface FrameProcessorDeps {
  /** A function request is built when a worker is free (see InferenceEngine.analyze). */
  analyze(request: AnalyzeRequest | (() => AnalyzeRequest), signal: AbortSignal): Promise<AnalyzeResult>;
  /** The collection, throwing 404 / 409 collection_model_mismatch like every model-bound use. */
  collection(id: string): CollectionT;
  identify(collection: CollectionT, embeddings: Float32Array[], threshold: number): (SearchMatch | null)[];
  maxDetectedFaces: number;
  /** The server's liveness policy when the addon is enabled: normal mode blocks failing faces. */
  liveness: LivenessPolicy | null;
}

export interface FacePayload { face: FaceObservationT; person: MonitorPersonT | null; similarity: number | null; matched_face_id: string | null; threshold: number }

/** One processed frame: every face with what it is, ready for the tracker. */
export interface ProcessedFrame { detections: Detection<FacePayload>[]; threshold: number }

/**
 * What a face is for tracking and the state: liveness-blocked in normal mode (never searched: the
 * pipeline gave it no embedding), else matched or unknown. Observe mode only reports liveness.
 */
export function classifyFace(face: AnalyzedFace, match: SearchMatch | null, liveness: LivenessPolicy | null): FaceKind {
  if (livenessBlock(liveness, face)) return 'liveness_blocked';
  return match ? 'matched' : 'unknown';
}

/** Detect, embed and identify every face of one frame against the monitor's collection. */
export class FrameProcessor {
  constructor(private readonly deps: FrameProcessorDeps) {}

  /**
   * `frame` may be a function: it is called when an inference worker is free and returns the frame to use
   * then (the newest one), so a frame never ages in the queue for a worker. `frame` in the result is the
   * one processed.
   */
  async process(frame: Frame | (() => Frame), record: MonitorRecord, signal: AbortSignal): Promise<ProcessedFrame & { frame: Frame }> {
    const { deps } = this;
    // Read per frame: a patch of the collection's threshold or detection profile applies at once.
    const collection = deps.collection(record.collection_id);
    const threshold = record.match_threshold ?? collection.default_threshold;
    let used = typeof frame === 'function' ? null : frame;
    const request = (f: Frame): AnalyzeRequest => ({
      image: { raw: f.data, width: f.width, height: f.height }, limits: { maxBytes: Number.MAX_SAFE_INTEGER, maxPixels: Number.MAX_SAFE_INTEGER },
      profile: detectionProfileOf(collection), maxFaces: deps.maxDetectedFaces, embed: 'all',
      ...(deps.liveness ? { liveness: { faces: 'all' as const, mode: deps.liveness.mode, threshold: deps.liveness.threshold } } : {}),
    });
    const r = await deps.analyze(typeof frame === 'function' ? () => request((used = frame())) : request(frame), signal);
    if (!used) throw new Error('the frame callback was not called');
    if (signal.aborted) return { detections: [], threshold, frame: used };
    // Faces without an embedding (blocked by normal-mode liveness) are never searched.
    const searchable = r.faces.filter((f) => f.embedding);
    const found = deps.identify(collection, searchable.map((f) => f.embedding!), threshold);
    const matchOf = new Map(searchable.map((f, i) => [f, found[i] ?? null]));
    const detections = r.faces.map((face): Detection<FacePayload> => {
      const match = matchOf.get(face) ?? null;
      const kind = classifyFace(face, match, deps.liveness);
      const obs = faceObservation(face, r.width, r.height);
      const m = kind === 'matched' ? match : null;
      return {
        box: [obs.bbox.normalized.left, obs.bbox.normalized.top, obs.bbox.normalized.width, obs.bbox.normalized.height], kind, personId: m?.person.id ?? null,
        payload: {
          face: obs, threshold, similarity: m ? m.similarity : null, matched_face_id: m?.matched_face_id ?? null,
          person: m ? { id: m.person.id, name: m.person.name, external_id: m.person.external_id } : null,
        },
      };
    });
    return { detections, threshold, frame: used };
  }
}
