import { CLOSE_UP_MAX_SIDE, type AnalyzedFace, type DetectionProfile } from '../inference/pipeline.js';
import { LETTERBOX_STRIDE, placeInCanvas } from '../inference/detectors.js';
import type { NormBox } from './motionDetector.js';

/**
 * Running the face detector on one region of a frame (MotionGate's region of interest) instead of the
 * whole frame. The region is cut out of the frame at full resolution and the detector's letterboxed sizes
 * run over it at the scale they would have over the whole frame: faces look exactly as large to the
 * detector as without the crop, so what it finds is the same, and its work shrinks with the region's area
 * (a quarter of the frame: about a quarter of the detector's pixels, and of the resize before it). The
 * close-up sizes (sides <= 160, for faces that fill the image) run over the region as configured: cheap.
 * Faces come back in the region's pixels and are moved to the frame's.
 */

/** A pixel rectangle of the frame. */
export interface PixelRect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Smallest crop side: below it the detector lacks context around a face. */
const MIN_SIDE = 64;

/** The region in whole pixels of a width x height frame, at least MIN_SIDE a side (grown about its centre). */
export function cropRect(region: NormBox, width: number, height: number): PixelRect {
  const side = (start: number, length: number, total: number): [number, number] => {
    let a = Math.floor(start * total),
      b = Math.ceil((start + length) * total);
    const min = Math.min(total, MIN_SIDE);
    if (b - a < min) {
      const grow = min - (b - a);
      a -= Math.floor(grow / 2);
      b += Math.ceil(grow / 2);
    }
    if (a < 0) [a, b] = [0, b - a];
    if (b > total) [a, b] = [Math.max(0, a - (b - total)), total];
    return [a, b - a];
  };
  const [x, w] = side(region[0], region[2], width);
  const [y, h] = side(region[1], region[3], height);
  return { x, y, width: w, height: h };
}

/**
 * The detection profile for a crop: each letterboxed size becomes the crop's size at that size's scale over
 * the whole frame, rounded up to the detector's stride (at least one stride); close-up sizes stay.
 */
export function regionProfile(
  profile: DetectionProfile,
  frameW: number,
  frameH: number,
  crop: PixelRect,
): DetectionProfile {
  const up = (v: number) => Math.max(LETTERBOX_STRIDE, Math.ceil(v / LETTERBOX_STRIDE) * LETTERBOX_STRIDE);
  const sizes = profile.input_sizes.map(([sw, sh]): [number, number] => {
    if (Math.max(sw, sh) <= CLOSE_UP_MAX_SIDE) return [sw, sh];
    const { scale } = placeInCanvas(frameW, frameH, sw, sh, 0);
    return [Math.min(sw, up(crop.width * scale)), Math.min(sh, up(crop.height * scale))];
  });
  // Two sizes may round to the same canvas: one run is enough.
  const unique = sizes.filter((s, i) => sizes.findIndex((o) => o[0] === s[0] && o[1] === s[1]) === i);
  return { ...profile, input_sizes: unique };
}

/** Copies the crop's rows of a packed RGB frame into `out` (crop.width * crop.height * 3 bytes). */
export function copyCrop(frame: Uint8Array, frameW: number, crop: PixelRect, out: Uint8Array): void {
  const row = crop.width * 3;
  for (let y = 0; y < crop.height; y++) {
    const from = ((crop.y + y) * frameW + crop.x) * 3;
    out.set(frame.subarray(from, from + row), y * row);
  }
}

/** A face found in the crop, in the frame's pixels. */
export function toFrame(face: AnalyzedFace, crop: PixelRect): AnalyzedFace {
  const { x, y } = crop;
  return {
    ...face,
    box: [face.box[0] + x, face.box[1] + y, face.box[2] + x, face.box[3] + y],
    landmarks: face.landmarks.map(([lx, ly]) => [lx + x, ly + y] as [number, number]),
  };
}
