import type { Candidate } from './geometry.js';

export interface Pose {
  yaw: number;
  pitch: number;
  roll: number;
}
export interface FaceQuality {
  score: number;
  sharpness: number;
  brightness: number;
  pose: number;
}

const clamp01 = (v: number): number => (Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : 0);
const round6 = (v: number): number => Math.round(v * 1e6) / 1e6;
const deg = (r: number): number => (r * 180) / Math.PI;

/** Head pose in degrees estimated from the five landmarks (the reference's heuristic, §3.6). */
export function estimatePose(lm: readonly [number, number][]): Pose {
  const [le, re, nose, lmouth, rmouth] = lm as [
    [number, number],
    [number, number],
    [number, number],
    [number, number],
    [number, number],
  ];
  const roll = deg(Math.atan2(re[1] - le[1], re[0] - le[0]));
  const eyeMidX = (le[0] + re[0]) / 2,
    eyeMidY = (le[1] + re[1]) / 2;
  const eyeDist = Math.hypot(re[0] - le[0], re[1] - le[1]);
  const mouthMidY = (lmouth[1] + rmouth[1]) / 2;
  const yaw = eyeDist > 1e-6 ? ((nose[0] - eyeMidX) / eyeDist) * 90 : 90;
  const span = mouthMidY - eyeMidY;
  const pitch = Math.abs(span) > 1e-6 ? ((nose[1] - eyeMidY) / span - 0.45) * 90 : 90;
  return { yaw, pitch, roll };
}

/** Grey pixels kept for reuse up to this many (4 MB); a larger box gets a buffer of its own. */
const KEPT_GRAY_PIXELS = 1 << 20;
let keptGray = new Float32Array(0);

/**
 * A grey buffer of at least `n` pixels, reused between calls (nothing awaits while one is in use). A fresh
 * Float32Array per face is zero-filled memory, which jemalloc hands out by purging pages (madvise), each
 * purge a TLB flush on every core running one of the daemon's threads.
 */
function grayBuffer(n: number): Float32Array {
  if (n <= keptGray.length) return keptGray;
  if (n > KEPT_GRAY_PIXELS) return new Float32Array(n);
  keptGray = new Float32Array(Math.min(KEPT_GRAY_PIXELS, Math.max(n, 2 * keptGray.length)));
  return keptGray;
}

/** Mean brightness and Laplacian variance of the face box, computed on grey (BT.601, as cv2's BGR2GRAY). */
export function boxStatistics(
  rgb: Uint8Array,
  width: number,
  height: number,
  box: readonly number[],
): { brightness: number; laplacianVariance: number } {
  const x1 = Math.max(0, Math.floor(box[0]!)),
    y1 = Math.max(0, Math.floor(box[1]!));
  const x2 = Math.min(width, Math.ceil(box[2]!)),
    y2 = Math.min(height, Math.ceil(box[3]!));
  const w = x2 - x1,
    h = y2 - y1;
  if (w <= 0 || h <= 0) return { brightness: 0, laplacianVariance: 0 };
  const gray = grayBuffer(w * h);
  let sum = 0;
  for (let y = 0; y < h; y++) {
    let p = ((y1 + y) * width + x1) * 3;
    for (let x = 0; x < w; x++, p += 3) {
      const g = 0.299 * rgb[p]! + 0.587 * rgb[p + 1]! + 0.114 * rgb[p + 2]!;
      gray[y * w + x] = g;
      sum += g;
    }
  }
  // 4-neighbour Laplacian (cv2.Laplacian ksize=1) with reflected borders (BORDER_REFLECT_101).
  const at = (x: number, y: number): number => {
    const xx = x < 0 ? Math.min(-x, w - 1) : x >= w ? Math.max(2 * w - x - 2, 0) : x;
    const yy = y < 0 ? Math.min(-y, h - 1) : y >= h ? Math.max(2 * h - y - 2, 0) : y;
    return gray[yy * w + xx]!;
  };
  // The sums stay plain locals: updated from a closure they would live in its context, and every update
  // would box a new heap number (two per pixel: about 3 MB of garbage per group photo, measured).
  let lsum = 0,
    lsq = 0;
  for (let y = 0; y < h; y++) {
    const interiorRow = y > 0 && y < h - 1;
    for (let x = 0; x < w; x++) {
      const i = y * w + x;
      // Interior pixels (almost all of them) index directly; only the border needs reflection.
      const l =
        interiorRow && x > 0 && x < w - 1
          ? gray[i - 1]! + gray[i + 1]! + gray[i - w]! + gray[i + w]! - 4 * gray[i]!
          : at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1) - 4 * gray[i]!;
      lsum += l;
      lsq += l * l;
    }
  }
  const n = w * h;
  const mean = lsum / n;
  return { brightness: sum / n / 255, laplacianVariance: Math.max(0, lsq / n - mean * mean) };
}

/** The public quality block (§3.6): every value clamped to [0, 1] and rounded to 6 decimals. */
export function faceQuality(
  face: Candidate,
  stats: { brightness: number; laplacianVariance: number },
  pose: Pose,
): FaceQuality {
  const sharpness = 1 - Math.exp(-stats.laplacianVariance / 100);
  const w = face.box[2] - face.box[0],
    h = face.box[3] - face.box[1];
  const worstAngle = Math.max(Math.abs(pose.yaw), Math.abs(pose.pitch), Math.abs(pose.roll));
  const score =
    0.35 * face.score +
    0.25 * sharpness +
    0.15 * (1 - Math.abs(stats.brightness - 0.5) / 0.5) +
    0.15 * clamp01(Math.min(w, h) / 80) +
    0.1 * (1 - worstAngle / 90);
  return {
    score: round6(clamp01(score)),
    sharpness: round6(clamp01(sharpness)),
    brightness: round6(clamp01(stats.brightness)),
    pose: round6(clamp01(1 - Math.min(1, (Math.abs(pose.yaw) + Math.abs(pose.pitch) + Math.abs(pose.roll)) / 135))),
  };
}
