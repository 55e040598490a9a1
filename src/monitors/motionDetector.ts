/**
 * Motion on a small grey frame (the pipeline's `motion` branch: GRAY8 about 160x90), after Frigate's
 * ImprovedMotionDetector: contrast stretched to the running average of the 4th/96th percentiles, masked
 * pixels set to 0, a 3x3 blur, the absolute difference against a running average of past frames, a
 * threshold, one 3x3 dilation, and the bounding boxes of the connected blobs big enough to count. The
 * frame maths are small pure functions over typed arrays (unit-tested); `MotionDetector` keeps the state
 * between frames (the average, the contrast history, calibration).
 */

/** A box in motion-frame pixels: x, y, width, height, and the blob's pixel count. */
export interface PixelBox {
  x: number;
  y: number;
  w: number;
  h: number;
  pixels: number;
}
/** Normalised [left, top, width, height] in 0..1, like a detection's box. */
export type NormBox = [number, number, number, number];

export interface MotionSettings {
  /** Difference from the average (0..255, after contrast stretching) above which a pixel moved. */
  threshold: number;
  /** A blob smaller than this fraction of the motion frame is noise. */
  minArea: number;
  /** Weight of each new frame in the running average (Frigate's frame_alpha). */
  frameAlpha: number;
  /** Stretch each frame's 4th..96th percentile range (averaged over 50 frames) to 0..255. */
  improveContrast: boolean;
  /** More than this share of the frame moving at once is a lighting change: recalibrate instead. */
  lightningThreshold: number;
}

/** [lo, hi]: the grey levels at the `low` and `high` percentiles (0..100) of `grey`, from a histogram. */
export function percentileRange(grey: Uint8Array, low: number, high: number): [number, number] {
  const hist = new Uint32Array(256);
  for (let i = 0; i < grey.length; i++) hist[grey[i]!]!++;
  const at = (p: number) => {
    const rank = Math.min(grey.length - 1, Math.floor((p / 100) * grey.length));
    let seen = 0;
    for (let v = 0; v < 256; v++) {
      seen += hist[v]!;
      if (seen > rank) return v;
    }
    return 255;
  };
  return [at(low), at(high)];
}

/** Maps lo..hi to 0..255 (clipped) into `out`, through a 256-entry table. */
export function stretchContrast(src: Uint8Array, lo: number, hi: number, out: Uint8Array): void {
  const span = hi - lo;
  if (!(span > 0)) {
    out.set(src);
    return;
  }
  const lut = new Uint8Array(256);
  for (let v = 0; v < 256; v++) lut[v] = Math.min(255, Math.max(0, ((v - lo) * 255) / span));
  for (let i = 0; i < src.length; i++) out[i] = lut[src[i]!]!;
}

/** A [1 2 1]/4 blur in each direction (edges clamped): a cheap Gaussian of sigma ~0.7 against pixel noise. */
export function blur3x3(src: Uint8Array, w: number, h: number, out: Uint8Array, tmp: Uint16Array): void {
  for (let y = 0; y < h; y++) {
    const r = y * w;
    for (let x = 0; x < w; x++) {
      const l = src[r + (x > 0 ? x - 1 : 0)]!,
        c = src[r + x]!,
        rt = src[r + (x < w - 1 ? x + 1 : x)]!;
      tmp[r + x] = l + 2 * c + rt;
    }
  }
  for (let y = 0; y < h; y++) {
    const up = (y > 0 ? y - 1 : 0) * w,
      r = y * w,
      down = (y < h - 1 ? y + 1 : y) * w;
    for (let x = 0; x < w; x++) out[r + x] = (tmp[up + x]! + 2 * tmp[r + x]! + tmp[down + x]! + 8) >> 4;
  }
}

/** out[i] = 1 where |frame - average| > threshold (the average rounded, as OpenCV's convertScaleAbs), else 0; returns how many pixels moved. */
export function differenceMask(frame: Uint8Array, average: Float32Array, threshold: number, out: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < frame.length; i++) {
    const d = frame[i]! - ((average[i]! + 0.5) | 0);
    const moved = d > threshold || d < -threshold ? 1 : 0;
    out[i] = moved;
    n += moved;
  }
  return n;
}

/**
 * A 3x3 dilation of a 0/1 mask (closes the small holes and gaps inside a moving shape), as a horizontal then
 * a vertical 3-wide maximum; `tmp` is scratch of w*h.
 */
export function dilate3x3(src: Uint8Array, w: number, h: number, out: Uint8Array, tmp: Uint8Array): void {
  for (let y = 0; y < h; y++) {
    const r = y * w;
    for (let x = 0; x < w; x++)
      tmp[r + x] = src[r + x]! | (x > 0 ? src[r + x - 1]! : 0) | (x < w - 1 ? src[r + x + 1]! : 0);
  }
  for (let y = 0; y < h; y++) {
    const r = y * w;
    for (let x = 0; x < w; x++)
      out[r + x] = tmp[r + x]! | (y > 0 ? tmp[r + x - w]! : 0) | (y < h - 1 ? tmp[r + x + w]! : 0);
  }
}

/**
 * The 8-connected blobs of a 0/1 mask as bounding boxes with their pixel counts (an iterative flood fill
 * with one reusable stack: no recursion, no allocation per pixel). `labels` is scratch of w*h.
 */
export function blobs(mask: Uint8Array, w: number, h: number, labels: Int32Array, stack: Int32Array): PixelBox[] {
  labels.fill(0);
  const out: PixelBox[] = [];
  let next = 0;
  for (let start = 0; start < w * h; start++) {
    if (!mask[start] || labels[start]) continue;
    const label = ++next;
    let top = 0;
    stack[top++] = start;
    labels[start] = label;
    let x0 = w,
      y0 = h,
      x1 = -1,
      y1 = -1,
      pixels = 0;
    while (top > 0) {
      const p = stack[--top]!;
      const px = p % w,
        py = (p - px) / w;
      pixels++;
      if (px < x0) x0 = px;
      if (px > x1) x1 = px;
      if (py < y0) y0 = py;
      if (py > y1) y1 = py;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = py + dy;
        if (ny < 0 || ny >= h) continue;
        for (let dx = -1; dx <= 1; dx++) {
          const nx = px + dx;
          if (nx < 0 || nx >= w) continue;
          const q = ny * w + nx;
          if (mask[q] && !labels[q]) {
            labels[q] = label;
            stack[top++] = q;
          }
        }
      }
    }
    out.push({ x: x0, y: y0, w: x1 - x0 + 1, h: y1 - y0 + 1, pixels });
  }
  return out;
}

/** average = (1 - alpha) * average + alpha * frame (OpenCV's accumulateWeighted). */
export function accumulate(average: Float32Array, frame: Uint8Array, alpha: number): void {
  for (let i = 0; i < frame.length; i++) average[i]! += alpha * (frame[i]! - average[i]!);
}

/** Pixels where `mask` is 1 become 0, in place: they match the average (0 there too) and never move. */
export function applyMask(frame: Uint8Array, mask: Uint8Array): void {
  for (let i = 0; i < frame.length; i++) if (mask[i]) frame[i] = 0;
}

/** What one motion frame showed. */
export interface MotionResult {
  /** Moving blobs big enough to count, normalised to the frame. */
  regions: NormBox[];
  /** Share of the frame that moved (every blob, counted before the area filter). */
  share: number;
  /** The detector is (re)learning the scene (its first frames, after a lighting change): no regions. */
  calibrating: boolean;
}

/** Contrast ranges averaged over this many frames, so one frame's outlier does not flicker the stretch. */
const CONTRAST_FRAMES = 50;
/** Alpha while calibrating: the average catches up with a new scene in a few frames. */
const CALIBRATION_ALPHA = 0.2;
/** A difference that persists this many frames is folded into the average (a parked car stops "moving"). */
const PERSISTENT_FRAMES = 10;

/**
 * The stateful part: the running average of past frames, the contrast history and calibration. Not the
 * gate's decision (MotionGate): only what moved in each frame. The mask (motion_mask, rasterised to the
 * motion frame by the caller) is kept per frame size; a change of size (new caps) restarts calibration.
 */
export class MotionDetector {
  private w = 0;
  private h = 0;
  private average: Float32Array | null = null;
  private work = new Uint8Array(0);
  private blurred = new Uint8Array(0);
  private moved = new Uint8Array(0);
  private dilated = new Uint8Array(0);
  private tmp = new Uint16Array(0);
  private labels = new Int32Array(0);
  private stack = new Int32Array(0);
  private readonly contrast: [number, number][] = [];
  private contrastIndex = 0;
  private calibrating = true;
  private persistent = 0;
  private mask: Uint8Array | null = null;

  constructor(
    private settings: MotionSettings,
    /** The motion mask for a w x h frame (1 = ignored), or null for none; called again when the size changes. */
    private maskFor: (w: number, h: number) => Uint8Array | null = () => null,
  ) {}

  /** New settings or mask apply from the next frame; a new mask restarts calibration (the average changes). */
  configure(settings: MotionSettings, maskFor?: (w: number, h: number) => Uint8Array | null): void {
    this.settings = settings;
    if (maskFor) {
      this.maskFor = maskFor;
      this.w = 0; // re-sizes (and re-masks) on the next frame
    }
  }

  private resize(w: number, h: number): void {
    const n = w * h;
    this.w = w;
    this.h = h;
    this.average = null;
    this.work = new Uint8Array(n);
    this.blurred = new Uint8Array(n);
    this.moved = new Uint8Array(n);
    this.dilated = new Uint8Array(n);
    this.tmp = new Uint16Array(n);
    this.labels = new Int32Array(n);
    this.stack = new Int32Array(n);
    // Filled with the first frame's range (below), so the stretch then moves in 1/50 steps: a face coming into
    // the scene shifts the percentiles, and a sudden new stretch would make every pixel "move".
    this.contrast.length = 0;
    this.contrastIndex = 0;
    this.calibrating = true;
    this.persistent = 0;
    this.mask = this.maskFor(w, h);
  }

  detect(grey: Uint8Array, w: number, h: number): MotionResult {
    if (w !== this.w || h !== this.h) this.resize(w, h);
    const s = this.settings;
    const frame = this.work;
    if (s.improveContrast) {
      const [lo, hi] = percentileRange(grey, 4, 96);
      // A frame of one grey level says nothing about the range: skipped, as Frigate does.
      if (lo < hi) {
        if (!this.contrast.length) for (let i = 0; i < CONTRAST_FRAMES; i++) this.contrast.push([lo, hi]);
        this.contrast[this.contrastIndex] = [lo, hi];
        this.contrastIndex = (this.contrastIndex + 1) % CONTRAST_FRAMES;
      }
      if (this.contrast.length) {
        const avgLo = this.contrast.reduce((a, c) => a + c[0], 0) / CONTRAST_FRAMES;
        const avgHi = this.contrast.reduce((a, c) => a + c[1], 0) / CONTRAST_FRAMES;
        stretchContrast(grey, avgLo, avgHi, frame);
      } else frame.set(grey);
    } else frame.set(grey);
    if (this.mask) applyMask(frame, this.mask);
    blur3x3(frame, w, h, this.blurred, this.tmp);
    if (!this.average) {
      // The first frame is the scene.
      this.average = Float32Array.from(this.blurred);
      return { regions: [], share: 0, calibrating: true };
    }
    // Nothing moved (an empty scene, most of the time): no dilation, no blobs.
    const moved = differenceMask(this.blurred, this.average, s.threshold, this.moved);
    if (moved) dilate3x3(this.moved, w, h, this.dilated, this.work); // `work` (the stretched frame) is done with
    const all = moved ? blobs(this.dilated, w, h, this.labels, this.stack) : [];
    const total = w * h;
    const movingPixels = all.reduce((a, b) => a + b.pixels, 0);
    const share = movingPixels / total;
    const minPixels = s.minArea * total;
    const counted = all.filter((b) => b.pixels >= minPixels && b.pixels > 0);
    // Calibrated once little moves; a flash (lighting, IR switch, PTZ) moving most of the frame recalibrates.
    if (this.calibrating && share < 0.05 && counted.length <= 4) this.calibrating = false;
    if (share > s.lightningThreshold) this.calibrating = true;
    const alpha = this.calibrating ? CALIBRATION_ALPHA : s.frameAlpha;
    if (counted.length > 0) {
      // A difference is averaged in only once it persists: a passer-by does not become the background.
      if (++this.persistent >= PERSISTENT_FRAMES) accumulate(this.average, this.blurred, alpha);
    } else {
      this.persistent = 0;
      accumulate(this.average, this.blurred, alpha);
    }
    if (this.calibrating) return { regions: [], share, calibrating: true };
    return {
      regions: counted.map((b): NormBox => [b.x / w, b.y / h, b.w / w, b.h / h]),
      share,
      calibrating: false,
    };
  }
}
