import type { AnalyzedFace } from './pipeline.js';
import type { FaceObservationT } from '../contract/faces.js';

const round = (v: number, places: number) => {
  const f = 10 ** places;
  return Math.round(v * f) / f;
};
const clampInt = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.round(v)));

/** Engine face -> wire FaceObservation: integer pixel box clamped to the image, normalised box to 8 places, landmarks to 3. */
export function faceObservation(
  face: AnalyzedFace,
  width: number,
  height: number,
  opts: { embedding?: boolean } = {},
): FaceObservationT {
  const x1 = clampInt(face.box[0], 0, width),
    y1 = clampInt(face.box[1], 0, height);
  const x2 = clampInt(face.box[2], 0, width),
    y2 = clampInt(face.box[3], 0, height);
  const obs: FaceObservationT = {
    bbox: {
      pixels: { x: x1, y: y1, width: x2 - x1, height: y2 - y1 },
      normalized: {
        left: round(face.box[0] / width, 8),
        top: round(face.box[1] / height, 8),
        width: round((face.box[2] - face.box[0]) / width, 8),
        height: round((face.box[3] - face.box[1]) / height, 8),
      },
    },
    landmarks: face.landmarks.map(([x, y]) => [round(x, 3), round(y, 3)]),
    detection_score: round(face.score, 6),
    quality: { ...face.quality },
  };
  if (face.liveness) obs.liveness = { ...face.liveness };
  if (opts.embedding && face.embedding) obs.embedding = Array.from(face.embedding, (v) => round(v, 8));
  return obs;
}

export const processingMs = (startedAt: number) => round(performance.now() - startedAt, 3);
