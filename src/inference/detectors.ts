import type { Candidate } from './geometry.js';

/**
 * Where the resized image sits in the detector's input canvas: canvas = image * scale + (padX, padY).
 * Decoders map their outputs back through this, so letterboxing and context padding share one path.
 */
export interface Placement {
  scale: number;
  padX: number;
  padY: number;
}

/** Model outputs as flat arrays, in the session's output order (SCRFD) or keyed by name (YuNet). */
export type OutputArrays = { name: string; data: Float32Array }[];

const STRIDES = [8, 16, 32] as const;

function toImage(p: Placement, x: number, y: number): [number, number] {
  return [(x - p.padX) / p.scale, (y - p.padY) / p.scale];
}

/**
 * SCRFD (det_500m / det_2.5g / det_10g with keypoints): 9 outputs by position, scores then boxes then
 * keypoints for strides 8/16/32, two anchors per cell, distances in stride units. Scores are sigmoids.
 */
export function decodeScrfd(
  outputs: OutputArrays,
  inputW: number,
  inputH: number,
  threshold: number,
  place: Placement,
): Candidate[] {
  if (outputs.length < 9) throw new Error(`SCRFD model must have 9 outputs with keypoints (has ${outputs.length})`);
  const found: Candidate[] = [];
  STRIDES.forEach((s, si) => {
    const scores = outputs[si]!.data,
      boxes = outputs[si + 3]!.data,
      kps = outputs[si + 6]!.data;
    const cols = Math.ceil(inputW / s);
    for (let i = 0; i < scores.length; i++) {
      const score = scores[i]!;
      if (score < threshold) continue;
      const anchor = i >> 1;
      const cx = (anchor % cols) * s,
        cy = Math.floor(anchor / cols) * s;
      const [x1, y1] = toImage(place, cx - boxes[i * 4]! * s, cy - boxes[i * 4 + 1]! * s);
      const [x2, y2] = toImage(place, cx + boxes[i * 4 + 2]! * s, cy + boxes[i * 4 + 3]! * s);
      const landmarks: [number, number][] = [];
      for (let k = 0; k < 5; k++)
        landmarks.push(toImage(place, cx + kps[i * 10 + 2 * k]! * s, cy + kps[i * 10 + 2 * k + 1]! * s));
      found.push({ box: [x1, y1, x2, y2], score, landmarks });
    }
  });
  return found;
}

/** YuNet (OpenCV Zoo): cls/obj/bbox/kps per stride, one anchor per cell, as cv2.FaceDetectorYN decodes it. */
export function decodeYunet(
  outputs: OutputArrays,
  inputW: number,
  inputH: number,
  threshold: number,
  place: Placement,
): Candidate[] {
  const byName = new Map(outputs.map((o) => [o.name, o.data]));
  const found: Candidate[] = [];
  const clamp01 = (v: number): number => Math.min(1, Math.max(0, v));
  for (const s of STRIDES) {
    const cls = byName.get(`cls_${s}`),
      obj = byName.get(`obj_${s}`),
      bbox = byName.get(`bbox_${s}`),
      kps = byName.get(`kps_${s}`);
    if (!cls || !obj || !bbox || !kps) throw new Error(`YuNet model is missing outputs for stride ${s}`);
    const cols = Math.floor(inputW / s);
    for (let i = 0; i < cls.length; i++) {
      const score = Math.sqrt(clamp01(cls[i]!) * clamp01(obj[i]!));
      if (score < threshold) continue;
      const row = Math.floor(i / cols),
        col = i % cols;
      const cx = (col + bbox[i * 4]!) * s,
        cy = (row + bbox[i * 4 + 1]!) * s;
      const w = Math.exp(bbox[i * 4 + 2]!) * s,
        h = Math.exp(bbox[i * 4 + 3]!) * s;
      const [x1, y1] = toImage(place, cx - w / 2, cy - h / 2);
      const [x2, y2] = toImage(place, cx + w / 2, cy + h / 2);
      const landmarks: [number, number][] = [];
      for (let k = 0; k < 5; k++)
        landmarks.push(toImage(place, (kps[i * 10 + 2 * k]! + col) * s, (kps[i * 10 + 2 * k + 1]! + row) * s));
      found.push({ box: [x1, y1, x2, y2], score, landmarks });
    }
  }
  return found;
}

/**
 * Fits a width x height image into an inputW x inputH canvas keeping its aspect ratio. `margin` is the
 * fraction of the canvas left empty on each side: 0 gives the reference's top-left letterbox; a margin
 * puts black context around the image, which SCRFD needs to find a face that fills the whole frame.
 */
export function placeInCanvas(
  width: number,
  height: number,
  inputW: number,
  inputH: number,
  margin = 0,
): Placement & { resizedW: number; resizedH: number } {
  const availW = inputW * (1 - 2 * margin),
    availH = inputH * (1 - 2 * margin);
  // The limiting side is set exactly; computing it as floor(side * scale) can lose a pixel to rounding.
  const widthLimited = availW / width <= availH / height;
  const resizedW = Math.max(
    1,
    Math.min(inputW, widthLimited ? Math.floor(availW) : Math.floor((width * availH) / height)),
  );
  const resizedH = Math.max(
    1,
    Math.min(inputH, widthLimited ? Math.floor((height * availW) / width) : Math.floor(availH)),
  );
  const padX = margin > 0 ? Math.floor((inputW - resizedW) / 2) : 0;
  const padY = margin > 0 ? Math.floor((inputH - resizedH) / 2) : 0;
  // The scale actually applied, from the integer resize (what the reference calls det_scale = new_h / h).
  return { scale: resizedH / height, padX, padY, resizedW, resizedH };
}

/** The detectors' largest stride: a trimmed letterbox canvas is a multiple of it. */
export const LETTERBOX_STRIDE = 32;

/**
 * The detector input for one profile size: where the image sits (placeInCanvas) and the canvas the model
 * runs over. `margin` > 0 (close-up sizes) always keeps the whole canvas (the context is the point); with
 * `trim` a letterboxed size (margin 0) is cut to the image rounded up to LETTERBOX_STRIDE, so the model
 * does not run over the fill below (or beside) a wide (or tall) image; the anchor grid over the image is
 * unchanged.
 */
export function detectorCanvas(
  width: number,
  height: number,
  size: [number, number],
  margin: number,
  trim: boolean,
): { w: number; h: number; place: Placement & { resizedW: number; resizedH: number } } {
  const [sw, sh] = size;
  const place = placeInCanvas(width, height, sw, sh, margin);
  if (!trim || margin > 0) return { w: sw, h: sh, place };
  const up = (v: number) => Math.ceil(v / LETTERBOX_STRIDE) * LETTERBOX_STRIDE;
  return { w: Math.min(sw, up(place.padX + place.resizedW)), h: Math.min(sh, up(place.padY + place.resizedH)), place };
}
