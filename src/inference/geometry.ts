/** A detected face in image pixel coordinates (floats, before any rounding for the wire). */
export interface Candidate {
  /** x1, y1, x2, y2 */
  box: [number, number, number, number];
  score: number;
  /** Five [x, y] points: left eye, right eye, nose, left mouth corner, right mouth corner (image-left first). */
  landmarks: [number, number][];
}

export const boxArea = (b: readonly number[]): number => Math.max(0, b[2]! - b[0]!) * Math.max(0, b[3]! - b[1]!);

export function iou(a: readonly number[], b: readonly number[]): number {
  const w = Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!);
  const h = Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!);
  if (w <= 0 || h <= 0) return 0;
  const inter = w * h;
  return inter / (boxArea(a) + boxArea(b) - inter);
}

/**
 * Pairs detected faces with boxes whose identity the caller already knows (a monitor's settled tracks):
 * greedy, highest IoU first, one known box per face and one face per known box, only at `minIou` or more.
 * Returns, per face, the index of its known box or -1. Pure (both in image pixels, x1, y1, x2, y2).
 */
export function matchKnownBoxes(
  faces: readonly (readonly number[])[],
  known: readonly (readonly number[])[],
  minIou: number,
): number[] {
  const pairs: { f: number; k: number; v: number }[] = [];
  faces.forEach((fb, f) =>
    known.forEach((kb, k) => {
      const v = iou(fb, kb);
      if (v >= minIou) pairs.push({ f, k, v });
    }),
  );
  pairs.sort((a, b) => b.v - a.v || a.f - b.f || a.k - b.k);
  const out = faces.map(() => -1);
  const taken = new Set<number>();
  for (const p of pairs) {
    if (out[p.f] !== -1 || taken.has(p.k)) continue;
    out[p.f] = p.k;
    taken.add(p.k);
  }
  return out;
}

/**
 * Greedy non-maximum suppression, highest score first. Called ONCE over the candidates of every detector
 * input size together, so a face seen at two resolutions yields one result.
 */
export function nms<T extends Candidate>(candidates: T[], iouThreshold: number): T[] {
  const sorted = [...candidates].sort((a, b) => b.score - a.score);
  const kept: T[] = [];
  for (const c of sorted) {
    if (kept.every((k) => iou(k.box, c.box) <= iouThreshold)) kept.push(c);
  }
  return kept;
}

/** Clips the box to the image and the score to [0, 1]; drops boxes that end up empty. */
export function clipCandidate<T extends Candidate>(c: T, width: number, height: number): T | null {
  const [x1, y1, x2, y2] = c.box;
  const box: [number, number, number, number] = [
    Math.min(Math.max(x1, 0), width),
    Math.min(Math.max(y1, 0), height),
    Math.min(Math.max(x2, 0), width),
    Math.min(Math.max(y2, 0), height),
  ];
  if (box[2] - box[0] < 1 || box[3] - box[1] < 1) return null;
  return { ...c, box, score: Math.min(Math.max(c.score, 0), 1) };
}

/** Sorted by descending box area (the contract's face order); ties keep the higher score first. */
export const byAreaDesc = (a: Candidate, b: Candidate): number => boxArea(b.box) - boxArea(a.box) || b.score - a.score;

export type SingleFaceSelection = 'largest' | 'center_largest';

/**
 * Picks the one face used by compare/embeddings/search. Detection confidence plays no part; on an exact
 * tie the first face in area order wins, so `faces` must already be sorted by area.
 */
export function selectSingleFace<T extends Candidate>(
  faces: T[],
  strategy: SingleFaceSelection,
  width: number,
  height: number,
): T | null {
  let best: T | null = null;
  let bestScore = -Infinity;
  for (const f of faces) {
    const area = boxArea(f.box);
    let s = area;
    if (strategy === 'center_largest') {
      const cx = (f.box[0] + f.box[2]) / 2 - width / 2;
      const cy = (f.box[1] + f.box[3]) / 2 - height / 2;
      s = area - 2.0 * (cx * cx + cy * cy);
    }
    if (s > bestScore) {
      best = f;
      bestScore = s;
    }
  }
  return best;
}
