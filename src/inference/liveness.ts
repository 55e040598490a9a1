/**
 * Passive liveness with the Silent-Face MiniFASNet ensemble. Each model sees the face box enlarged by its
 * context scale (2.7x, 4.0x), resized to 80x80, raw BGR 0..255; the live score is the mean softmax
 * probability of the "real" class. The maths here is pure; the sessions live in the inference worker.
 */
import type { LivenessModelSpec } from '../models/catalog.js';
import { estimateSimilarity, invertAffine } from './alignment.js';

export interface LivenessResult {
  status: 'ok' | 'input_rejected';
  is_live: boolean | null;
  live_score: number | null;
  /** English retry guidance, only for input_rejected. */
  reason?: string;
}

export type Box = [number, number, number, number];

/** The reference's wording, so clients that show `reason` read the same text. */
export const REASON_OUT_OF_FRAME =
  'Insufficient image area around the face for liveness detection. Move the face toward the center, step back from the camera, or use a less tightly cropped image.';
export const REASON_BAD_LANDMARKS =
  'The face landmarks are unusable for liveness detection. Face the camera directly with the whole face visible and retry.';

/**
 * The reference's 80x80 liveness framing of the five landmarks. Its out-of-bounds share is our input gate:
 * above MAX_OUTSIDE_FRACTION outside the image, the result is input_rejected and no model runs. (The
 * models themselves get Silent-Face's box crops, the input they were trained on.)
 */
export const LIVENESS_TEMPLATE_80: readonly [number, number][] = [
  [32.03, 38.06],
  [47.89, 37.98],
  [40.01, 47.08],
  [33.5, 56.36],
  [46.63, 56.29],
];
export const MAX_OUTSIDE_FRACTION = 0.3;

const round6 = (v: number) => Math.round(v * 1e6) / 1e6;

/**
 * Share of the 80x80 template framing (landmarks mapped onto LIVENESS_TEMPLATE_80 by a similarity
 * transform) whose source pixels fall outside the image: the reference's warped all-ones mask, computed
 * at pixel centres. Null when the landmarks give no usable transform.
 */
export function templateOutsideFraction(
  landmarks: readonly [number, number][],
  width: number,
  height: number,
): number | null {
  const m = estimateSimilarity(landmarks, LIVENESS_TEMPLATE_80);
  const inv = m && invertAffine(m);
  if (!inv) return null;
  const [a, b, tx, c, d, ty] = inv;
  let outside = 0;
  for (let y = 0; y < 80; y++) {
    for (let x = 0; x < 80; x++) {
      const sx = a * x + b * y + tx,
        sy = c * x + d * y + ty;
      if (!(sx >= -0.5 && sy >= -0.5 && sx <= width - 0.5 && sy <= height - 0.5)) outside++;
    }
  }
  return outside / 6400;
}

/**
 * Silent-Face's `_get_new_box`: the box scaled by `scale` (reduced so it fits the image), centred on the
 * face and shifted back inside the frame. Returns inclusive integer pixel bounds [left, top, right, bottom].
 */
export function contextCrop(box: Box, width: number, height: number, scale: number): [number, number, number, number] {
  const [x1, y1, x2, y2] = box;
  const bw = x2 - x1,
    bh = y2 - y1;
  const s = Math.min((height - 1) / bh, (width - 1) / bw, scale);
  const nw = bw * s,
    nh = bh * s;
  const cx = x1 + bw / 2,
    cy = y1 + bh / 2;
  let left = cx - nw / 2,
    top = cy - nh / 2,
    right = cx + nw / 2,
    bottom = cy + nh / 2;
  if (left < 0) {
    right -= left;
    left = 0;
  }
  if (top < 0) {
    bottom -= top;
    top = 0;
  }
  if (right > width - 1) {
    left -= right - width + 1;
    right = width - 1;
  }
  if (bottom > height - 1) {
    top -= bottom - height + 1;
    bottom = height - 1;
  }
  return [Math.trunc(left), Math.trunc(top), Math.trunc(right), Math.trunc(bottom)];
}

/** Why this face cannot be evaluated, or null. Checked before any model runs. */
export function livenessInputProblem(
  box: Box,
  landmarks: readonly [number, number][],
  width: number,
  height: number,
): string | null {
  const finite =
    box.every(Number.isFinite) &&
    landmarks.length === 5 &&
    landmarks.every(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  if (!finite || !(box[2] - box[0] >= 2) || !(box[3] - box[1] >= 2)) return REASON_BAD_LANDMARKS;
  // Eyes on top of each other or outside the face box mean a degenerate detection.
  const [le, re] = landmarks as [[number, number], [number, number]];
  if (Math.hypot(re[0] - le[0], re[1] - le[1]) < 1) return REASON_BAD_LANDMARKS;
  const outside = templateOutsideFraction(landmarks, width, height);
  if (outside === null) return REASON_BAD_LANDMARKS;
  if (outside > MAX_OUTSIDE_FRACTION) return REASON_OUT_OF_FRAME;
  return null;
}

/**
 * The two source indices and the weight of the second, for each of `outN` samples over `inN` source
 * pixels: cv2 INTER_LINEAR's half-pixel centres, clamped at the edges.
 */
export function linearTaps(outN: number, inN: number): { i0: Int32Array; i1: Int32Array; w: Float64Array } {
  const i0 = new Int32Array(outN),
    i1 = new Int32Array(outN),
    w = new Float64Array(outN);
  const scale = inN / outN;
  for (let o = 0; o < outN; o++) {
    const f = Math.max(0, (o + 0.5) * scale - 0.5);
    const a = Math.min(Math.floor(f), inN - 1);
    i0[o] = a;
    i1[o] = Math.min(a + 1, inN - 1);
    w[o] = Math.min(1, f - a);
  }
  return { i0, i1, w };
}

/**
 * cv2.resize(INTER_LINEAR) of the inclusive crop to outW x outH, written as planar float (raw 0..255) in
 * the model's channel order. The column taps are computed once, not once per row.
 */
export function cropToTensor(
  rgb: Uint8Array,
  width: number,
  crop: [number, number, number, number],
  outW: number,
  outH: number,
  order: 'rgb' | 'bgr',
  out = new Float32Array(3 * outW * outH),
): Float32Array {
  const [left, top, right, bottom] = crop;
  const cols = linearTaps(outW, right - left + 1),
    rows = linearTaps(outH, bottom - top + 1);
  const plane = outW * outH;
  const chans = order === 'rgb' ? [0, 1, 2] : [2, 1, 0];
  const stride = width * 3;
  for (let y = 0; y < outH; y++) {
    const wy = rows.w[y]!;
    const r0 = (top + rows.i0[y]!) * stride,
      r1 = (top + rows.i1[y]!) * stride;
    for (let x = 0; x < outW; x++) {
      const wx = cols.w[x]!;
      const c0 = (left + cols.i0[x]!) * 3,
        c1 = (left + cols.i1[x]!) * 3;
      const o = y * outW + x;
      for (let k = 0; k < 3; k++) {
        const c = chans[k]!;
        const top2 = rgb[r0 + c0 + c]! * (1 - wx) + rgb[r0 + c1 + c]! * wx;
        const bot2 = rgb[r1 + c0 + c]! * (1 - wx) + rgb[r1 + c1 + c]! * wx;
        out[o + k * plane] = top2 * (1 - wy) + bot2 * wy;
      }
    }
  }
  return out;
}

/** Softmax probability of `cls` from raw logits; NaN when the logits are not finite. */
export function classProbability(logits: ArrayLike<number>, cls: number): number {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]!);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i]! - max);
  const p = Math.exp(logits[cls]! - max) / sum;
  return Number.isFinite(p) ? p : NaN;
}

/** The verdict from the ensemble's probabilities; the threshold is inclusive and applied before rounding. */
export function livenessVerdict(probabilities: number[], threshold: number): LivenessResult {
  const score = probabilities.reduce((a, b) => a + b, 0) / probabilities.length;
  return { status: 'ok', is_live: score >= threshold, live_score: round6(score) };
}

export const rejected = (reason: string): LivenessResult => ({
  status: 'input_rejected',
  is_live: null,
  live_score: null,
  reason,
});

export const passed = (r: LivenessResult | undefined): boolean => r?.status === 'ok' && r.is_live === true;

export type { LivenessModelSpec };
