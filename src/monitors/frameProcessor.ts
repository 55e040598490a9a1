import { detectionProfileOf } from '../collections/collectionService.js';
import type { CollectionT } from '../contract/collections.js';
import type { SearchMatch } from '../collections/searchService.js';
import { livenessBlock, type LivenessPolicy } from '../inference/faceService.js';
import { faceObservation } from '../inference/observation.js';
import type { AnalyzedFace, AnalyzeRequest, AnalyzeResult } from '../inference/pipeline.js';
import type { FaceObservationT } from '../contract/faces.js';
import type { IdentityBasisT } from '../contract/identity.js';
import type { Frame } from './frameSource.js';
import type { MonitorPersonT } from '../contract/monitors.js';
import type { MonitorRecord } from './model.js';
import type { Detection, FaceKind } from './tracker.js';
import type { NormBox } from './motionDetector.js';
import { copyCrop, cropRect, regionProfile, toFrame, type PixelRect } from './regionCrop.js';
import { faceDropReason } from './zones.js';

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
  /** [monitors] trim_letterbox: the detector runs over the frame, not over the letterbox fill below it. */
  trimLetterbox: boolean;
  /** The `k` persons most similar to an embedding, best first, at any similarity (track-level identity). */
  rank?(collection: CollectionT, embedding: Float32Array, k: number): SearchMatch[];
}

/** A person a track's template was compared with (TrackFaces). */
export interface RankedMatch {
  person: MonitorPersonT;
  similarity: number;
  matched_face_id: string;
}

/**
 * `identifiedAt` (wall clock ms): when this identity was last searched from an embedding; a face whose
 * identity was carried over from its settled track keeps the track's time (see KnownTrack).
 */
export interface FacePayload {
  face: FaceObservationT;
  person: MonitorPersonT | null;
  similarity: number | null;
  matched_face_id: string | null;
  threshold: number;
  identifiedAt?: number;
  /** This frame's embedding (never in events or the state): the track's frame bank pools it. */
  embedding?: Float32Array;
  /** Why the face has its identity (track-level identity, see TrackFaces). */
  identity?: IdentityBasisT;
}

/**
 * One processed frame: every face with what it is, ready for the tracker; `embedded` faces were embedded
 * and searched, `reused` ones took the identity of their settled track instead.
 */
export interface ProcessedFrame {
  detections: Detection<FacePayload>[];
  threshold: number;
  embedded?: number;
  reused?: number;
  /** Faces dropped by the monitor's face_mask or min_face_size (never searched nor tracked). */
  ignored?: number;
  /** Ranks a track's template against the collection (absent without a search to rank with). */
  rank?: (embedding: Float32Array, k: number) => RankedMatch[];
}

/**
 * A confirmed, recently identified track (MonitorActivity.knownTracks): a face detected in nearly the same
 * box (IoU >= KNOWN_IOU) in the next frame is not embedded again, it keeps this identity. `box` is normalised
 * [left, top, width, height] like Detection's.
 */
export interface KnownTrack {
  box: [number, number, number, number];
  personId: string;
  payload: FacePayload;
}

/**
 * A face must overlap its settled track's last box by at least this IoU to skip its embedding: a face that
 * moved or changed size more than that (or a new face elsewhere) is embedded and searched as usual.
 */
export const KNOWN_IOU = 0.5;

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
  /** The whole frame, when only a region of it goes to the detector (reused: no new memory per frame). */
  private scratch = new Uint8Array(0);

  constructor(private readonly deps: FrameProcessorDeps) {}

  /** The crop's pixels, copied out of the frame when a worker takes them (see regionCrop.ts). */
  private cropSource(f: Frame, crop: PixelRect) {
    return {
      byteLength: crop.width * crop.height * 3,
      copyInto: (target: Uint8Array) => {
        let whole: Uint8Array;
        if (f.copyInto) {
          const n = f.width * f.height * 3;
          if (this.scratch.length !== n) this.scratch = new Uint8Array(n);
          f.copyInto(this.scratch);
          whole = this.scratch;
        } else whole = f.data;
        copyCrop(whole, f.width, crop, target);
      },
    };
  }

  /**
   * `frame` may be a function: it is called when an inference worker is free and returns the frame to use
   * then (the newest one), so a frame never ages in the queue for a worker. `frame` in the result is the
   * one processed. `region` (normalised): the detector runs on that part of the frame only (the motion
   * gate's region of interest; see regionCrop.ts); faces come back in the whole frame's coordinates.
   */
  async process(
    frame: Frame | (() => Frame),
    record: MonitorRecord,
    signal: AbortSignal,
    knownTracks: KnownTrack[] = [],
    region: NormBox | null = null,
  ): Promise<ProcessedFrame & { frame: Frame }> {
    const { deps } = this;
    // Read per frame: a patch of the collection's threshold or detection profile applies at once.
    const collection = deps.collection(record.collection_id);
    const threshold = record.match_threshold ?? collection.default_threshold;
    // With liveness on every face is checked and embedded every frame (a blocked face must stay blocked);
    // an identity found under another threshold is searched again.
    const known = deps.liveness ? [] : knownTracks.filter((k) => k.payload.threshold === threshold);
    let used = typeof frame === 'function' ? null : frame;
    let crop: PixelRect | null = null;
    const request = (f: Frame): AnalyzeRequest => {
      crop = region ? cropRect(region, f.width, f.height) : null;
      const c = crop ?? { x: 0, y: 0, width: f.width, height: f.height };
      return {
        // The frame stays the session's (preview, event snapshots); the engine moves a copy to the worker.
        image: crop
          ? { pixels: this.cropSource(f, crop), width: crop.width, height: crop.height }
          : f.copyInto
            ? {
                pixels: { byteLength: f.width * f.height * 3, copyInto: (target: Uint8Array) => f.copyInto!(target) },
                width: f.width,
                height: f.height,
              }
            : { raw: f.data, width: f.width, height: f.height },
        limits: { maxBytes: Number.MAX_SAFE_INTEGER, maxPixels: Number.MAX_SAFE_INTEGER },
        profile: crop
          ? regionProfile(detectionProfileOf(collection), f.width, f.height, crop)
          : detectionProfileOf(collection),
        maxFaces: deps.maxDetectedFaces,
        embed: 'all',
        trimLetterbox: deps.trimLetterbox,
        ...(deps.liveness
          ? { liveness: { faces: 'all' as const, mode: deps.liveness.mode, threshold: deps.liveness.threshold } }
          : {}),
        ...(known.length > 0
          ? {
              known: {
                // In the pixels of the image the detector gets (the crop's when cropped).
                boxes: known.map(
                  ({ box: [l, t, w, h] }) =>
                    [l * f.width - c.x, t * f.height - c.y, (l + w) * f.width - c.x, (t + h) * f.height - c.y] as [
                      number,
                      number,
                      number,
                      number,
                    ],
                ),
                minIou: KNOWN_IOU,
              },
            }
          : {}),
      };
    };
    let r: AnalyzeResult;
    try {
      r = await deps.analyze(typeof frame === 'function' ? () => request((used = frame())) : request(frame), signal);
    } catch (e) {
      used?.settle?.(false);
      throw e;
    }
    if (!used) throw new Error('the frame callback was not called');
    const W = used.width,
      H = used.height;
    // Faces in the whole frame's pixels; those in the face mask or below min_face_size are dropped here.
    const inFrame = crop ? r.faces.map((f) => toFrame(f, crop!)) : r.faces;
    const faces = inFrame.filter((f) => {
      const w = f.box[2] - f.box[0],
        h = f.box[3] - f.box[1];
      return (
        faceDropReason(
          [f.box[0] / W, f.box[1] / H, w / W, h / H],
          Math.min(w, h),
          record.face_mask,
          record.min_face_size,
        ) === null
      );
    });
    const ignored = inFrame.length - faces.length;
    // A frame with faces may become an event snapshot (enter now, exit later): its pixels must stay readable.
    used.settle?.(!signal.aborted && faces.length > 0);
    if (signal.aborted) return { detections: [], threshold, frame: used };
    // Faces without an embedding (blocked by normal-mode liveness) are never searched.
    const searchable = faces.filter((f) => f.embedding);
    const found = deps.identify(
      collection,
      searchable.map((f) => f.embedding!),
      threshold,
    );
    const matchOf = new Map(searchable.map((f, i) => [f, found[i] ?? null]));
    const identifiedAt = Date.now();
    let reused = 0;
    const detections = faces.map((face): Detection<FacePayload> => {
      const k = face.known !== undefined ? known[face.known] : undefined;
      if (k) {
        // Its settled track's identity, with this frame's box, landmarks and quality.
        reused++;
        const obs = faceObservation(face, W, H);
        return {
          box: [
            obs.bbox.normalized.left,
            obs.bbox.normalized.top,
            obs.bbox.normalized.width,
            obs.bbox.normalized.height,
          ],
          kind: 'matched',
          personId: k.personId,
          payload: { ...k.payload, face: obs },
        };
      }
      const match = matchOf.get(face) ?? null;
      const kind = classifyFace(face, match, deps.liveness);
      const obs = faceObservation(face, W, H);
      const m = kind === 'matched' ? match : null;
      return {
        box: [obs.bbox.normalized.left, obs.bbox.normalized.top, obs.bbox.normalized.width, obs.bbox.normalized.height],
        kind,
        personId: m?.person.id ?? null,
        payload: {
          face: obs,
          threshold,
          similarity: m ? m.similarity : null,
          matched_face_id: m?.matched_face_id ?? null,
          person: m ? { id: m.person.id, name: m.person.name, external_id: m.person.external_id } : null,
          ...(face.embedding ? { identifiedAt, embedding: face.embedding } : {}),
        },
      };
    });
    const rank = deps.rank?.bind(deps);
    return {
      detections,
      threshold,
      frame: used,
      embedded: searchable.length,
      reused,
      ignored,
      ...(rank
        ? {
            rank: (e: Float32Array, k: number) =>
              rank(collection, e, k).map((m) => ({
                person: { id: m.person.id, name: m.person.name, external_id: m.person.external_id },
                similarity: m.similarity,
                matched_face_id: m.matched_face_id,
              })),
          }
        : {}),
    };
  }
}
