/** 2x3 affine matrix [a, b, tx, c, d, ty] mapping (x, y) -> (a x + b y + tx, c x + d y + ty). */
export type Affine = [number, number, number, number, number, number];

/** The ArcFace 112x112 five-point template (left eye, right eye, nose, left mouth, right mouth). */
export const ARCFACE_TEMPLATE_112: readonly [number, number][] = [
  [38.2946, 51.6963],
  [73.5318, 51.5014],
  [56.0252, 71.7366],
  [41.5493, 92.3655],
  [70.7299, 92.2041],
];

/**
 * Least-squares 4-DOF similarity transform (Umeyama without reflection) from `src` to `dst` points, the
 * same estimate as skimage's SimilarityTransform for the 2-D case. Returns null for degenerate input.
 */
export function estimateSimilarity(src: readonly [number, number][], dst: readonly [number, number][]): Affine | null {
  const n = src.length;
  if (n < 2 || n !== dst.length) return null;
  let sx = 0,
    sy = 0,
    dx = 0,
    dy = 0;
  for (let i = 0; i < n; i++) {
    sx += src[i]![0];
    sy += src[i]![1];
    dx += dst[i]![0];
    dy += dst[i]![1];
  }
  sx /= n;
  sy /= n;
  dx /= n;
  dy /= n;
  // For 2-D similarity, the optimum has closed form: a = sum(x'u + y'v)/sum(|p|^2), b = sum(x'v - y'u)/sum(|p|^2)
  // with p = src - mean(src) and (u, v) = dst - mean(dst).
  let num1 = 0,
    num2 = 0,
    den = 0;
  for (let i = 0; i < n; i++) {
    const px = src[i]![0] - sx,
      py = src[i]![1] - sy;
    const u = dst[i]![0] - dx,
      v = dst[i]![1] - dy;
    num1 += px * u + py * v;
    num2 += px * v - py * u;
    den += px * px + py * py;
  }
  if (!(den > 1e-12)) return null;
  const a = num1 / den,
    b = num2 / den;
  if (!Number.isFinite(a) || !Number.isFinite(b) || a * a + b * b < 1e-12) return null;
  // x' = a x - b y + tx ; y' = b x + a y + ty
  return [a, -b, dx - (a * sx - b * sy), b, a, dy - (b * sx + a * sy)];
}

export function invertAffine(m: Affine): Affine | null {
  const [a, b, tx, c, d, ty] = m;
  const det = a * d - b * c;
  if (!(Math.abs(det) > 1e-12)) return null;
  const ia = d / det,
    ib = -b / det,
    ic = -c / det,
    id = a / det;
  return [ia, ib, -(ia * tx + ib * ty), ic, id, -(ic * tx + id * ty)];
}

export interface TensorLayout {
  /** Order in which the RGB source channels are written to the tensor planes. */
  channelOrder: 'rgb' | 'bgr';
  mean: number;
  std: number;
}

/**
 * Warps an RGB image through `m` (source -> output) into a planar float tensor of outW x outH with
 * bilinear sampling and a black border, normalising as (v - mean) / std on the way. Doing the warp and
 * the normalisation in one pass avoids an intermediate image.
 */
export function warpToTensor(
  rgb: Uint8Array,
  width: number,
  height: number,
  m: Affine,
  outW: number,
  outH: number,
  layout: TensorLayout,
  out: Float32Array = new Float32Array(3 * outW * outH),
  offset = 0,
): Float32Array {
  const inv = invertAffine(m);
  if (!inv) throw new Error('degenerate alignment transform');
  const [a, b, tx, c, d, ty] = inv;
  const plane = outW * outH;
  const order = layout.channelOrder === 'rgb' ? [0, 1, 2] : [2, 1, 0];
  const scale = 1 / layout.std;
  const stride = width * 3;
  for (let y = 0; y < outH; y++) {
    for (let x = 0; x < outW; x++) {
      const sx = a * x + b * y + tx;
      const sy = c * x + d * y + ty;
      const x0 = Math.floor(sx),
        y0 = Math.floor(sy);
      const fx = sx - x0,
        fy = sy - y0;
      const o = offset + y * outW + x;
      for (let k = 0; k < 3; k++) {
        const ch = order[k]!;
        // Each of the four taps outside the image contributes black, as cv2.warpAffine's BORDER_CONSTANT.
        const p00 = x0 >= 0 && y0 >= 0 && x0 < width && y0 < height ? rgb[y0 * stride + x0 * 3 + ch]! : 0;
        const p10 = x0 + 1 >= 0 && y0 >= 0 && x0 + 1 < width && y0 < height ? rgb[y0 * stride + (x0 + 1) * 3 + ch]! : 0;
        const p01 = x0 >= 0 && y0 + 1 >= 0 && x0 < width && y0 + 1 < height ? rgb[(y0 + 1) * stride + x0 * 3 + ch]! : 0;
        const p11 =
          x0 + 1 >= 0 && y0 + 1 >= 0 && x0 + 1 < width && y0 + 1 < height
            ? rgb[(y0 + 1) * stride + (x0 + 1) * 3 + ch]!
            : 0;
        const v = (p00 * (1 - fx) + p10 * fx) * (1 - fy) + (p01 * (1 - fx) + p11 * fx) * fy;
        out[o + k * plane] = (v - layout.mean) * scale;
      }
    }
  }
  return out;
}

/**
 * How far five detected landmarks are from a face shape: the RMS distance, in pixels of the 112x112
 * template, between the template and the landmarks mapped onto it by their best similarity transform.
 * About 1-3 px for frontal faces; large values mean the points do not form a face (a misdetection, a
 * strong turn or landmarks guessed on a blurred face). Infinity when no transform exists.
 */
export function alignmentError(
  landmarks: readonly [number, number][],
  template: readonly [number, number][] = ARCFACE_TEMPLATE_112,
): number {
  const m = estimateSimilarity(landmarks, template);
  if (!m || landmarks.length !== template.length) return Infinity;
  let sq = 0;
  for (let i = 0; i < landmarks.length; i++) {
    const [x, y] = landmarks[i]!;
    sq += (m[0] * x + m[1] * y + m[2] - template[i]![0]) ** 2 + (m[3] * x + m[4] * y + m[5] - template[i]![1]) ** 2;
  }
  return Math.sqrt(sq / landmarks.length);
}
