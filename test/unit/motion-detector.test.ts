import test from 'ava';
import {
  accumulate,
  applyMask,
  blobs,
  blur3x3,
  differenceMask,
  dilate3x3,
  MotionDetector,
  percentileRange,
  stretchContrast,
  type MotionSettings,
} from '../../src/monitors/motionDetector.js';

const W = 160,
  H = 90;
const SETTINGS: MotionSettings = {
  threshold: 30,
  minArea: 0.0007,
  frameAlpha: 0.01,
  improveContrast: true,
  lightningThreshold: 0.8,
};

/** A grey scene with a fixed texture (so contrast stretching has a range), plus optional bright squares. */
function scene(squares: { x: number; y: number; side: number }[] = [], noise = 0, seed = 1): Uint8Array {
  const f = new Uint8Array(W * H);
  let s = seed;
  const rand = () => ((s = (s * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  for (let y = 0; y < H; y++)
    for (let x = 0; x < W; x++) f[y * W + x] = Math.max(0, Math.min(255, 60 + ((x * 7 + y * 3) % 80) + noise * rand()));
  for (const q of squares)
    for (let y = q.y; y < q.y + q.side; y++) for (let x = q.x; x < q.x + q.side; x++) f[y * W + x] = 250;
  return f;
}

test('percentileRange reads the 4th and 96th percentiles from a histogram', (t) => {
  const f = new Uint8Array(100);
  for (let i = 0; i < 100; i++) f[i] = i;
  t.deepEqual(percentileRange(f, 4, 96), [4, 96]);
  t.deepEqual(percentileRange(new Uint8Array(10).fill(7), 4, 96), [7, 7]);
});

test('stretchContrast maps lo..hi to 0..255 and clips; a flat range copies', (t) => {
  const out = new Uint8Array(4);
  stretchContrast(Uint8Array.from([10, 20, 30, 40]), 20, 30, out);
  t.deepEqual([...out], [0, 0, 255, 255]);
  stretchContrast(Uint8Array.from([10, 25, 30, 40]), 20, 30, out);
  t.is(out[1], 127);
  stretchContrast(Uint8Array.from([1, 2, 3, 4]), 5, 5, out);
  t.deepEqual([...out], [1, 2, 3, 4]);
});

test('blur3x3 keeps a flat image and spreads a single bright pixel to its neighbours', (t) => {
  const w = 5,
    h = 5;
  const out = new Uint8Array(w * h),
    tmp = new Uint16Array(w * h);
  blur3x3(new Uint8Array(w * h).fill(100), w, h, out, tmp);
  t.true(out.every((v) => v === 100));
  const dot = new Uint8Array(w * h);
  dot[12] = 160;
  blur3x3(dot, w, h, out, tmp);
  t.is(out[12], 40); // 160 * 4/16
  t.is(out[7], 20); // 160 * 2/16
  t.is(out[6], 10); // 160 * 1/16
  t.is(out[0], 0);
});

test('differenceMask marks pixels further than the threshold from the average', (t) => {
  const out = new Uint8Array(3);
  t.is(differenceMask(Uint8Array.from([100, 131, 69]), Float32Array.from([100, 100, 100]), 30, out), 2);
  t.deepEqual([...out], [0, 1, 1]);
});

test('dilate3x3 grows a pixel into its 3x3 neighbourhood, clipped at the edges', (t) => {
  const w = 4,
    h = 3;
  const src = new Uint8Array(w * h),
    out = new Uint8Array(w * h);
  src[0] = 1;
  dilate3x3(src, w, h, out, new Uint8Array(w * h));
  t.deepEqual([...out], [1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0]);
});

test('blobs: 8-connected components with their bounding boxes and pixel counts', (t) => {
  const w = 6,
    h = 4;
  // prettier-ignore
  const mask = Uint8Array.from([
    1, 1, 0, 0, 0, 0,
    0, 0, 1, 0, 0, 1,
    0, 0, 0, 0, 0, 1,
    0, 0, 0, 0, 0, 0,
  ]);
  const found = blobs(mask, w, h, new Int32Array(w * h), new Int32Array(w * h));
  t.deepEqual(found, [
    { x: 0, y: 0, w: 3, h: 2, pixels: 3 }, // diagonal neighbours join
    { x: 5, y: 1, w: 1, h: 2, pixels: 2 },
  ]);
  t.deepEqual(blobs(new Uint8Array(w * h), w, h, new Int32Array(w * h), new Int32Array(w * h)), []);
});

test('accumulate is a weighted running average; applyMask zeroes masked pixels', (t) => {
  const avg = Float32Array.from([0, 100]);
  accumulate(avg, Uint8Array.from([100, 0]), 0.25);
  t.deepEqual([...avg], [25, 75]);
  const f = Uint8Array.from([5, 6, 7]);
  applyMask(f, Uint8Array.from([0, 1, 0]));
  t.deepEqual([...f], [5, 0, 7]);
});

/** A detector that has learnt the static scene. */
function calibrated(settings = SETTINGS, mask: Uint8Array | null = null): MotionDetector {
  const d = new MotionDetector(settings, () => mask);
  for (let i = 0; i < 5; i++) d.detect(scene([], 3, i + 1), W, H);
  return d;
}

test('a static scene with sensor noise shows no motion once calibrated', (t) => {
  const d = new MotionDetector(SETTINGS);
  const first = d.detect(scene([], 3, 1), W, H);
  t.true(first.calibrating, 'the first frame is the scene');
  for (let i = 2; i < 30; i++) {
    const r = d.detect(scene([], 3, i), W, H);
    t.deepEqual(r.regions, [], `frame ${i}`);
  }
  t.false(d.detect(scene([], 3, 99), W, H).calibrating);
});

test('a moving object gives one region around it, normalised to the frame', (t) => {
  const d = calibrated();
  const r = d.detect(scene([{ x: 40, y: 20, side: 12 }], 3, 50), W, H);
  t.is(r.regions.length, 1, JSON.stringify(r));
  const [l, top, w, h] = r.regions[0]!;
  // The square is 40..51 x 20..31; the blur and the dilation widen it by a pixel or two each side.
  t.true(l >= 36 / W && l <= 40 / W, String(l * W));
  t.true(top >= 16 / H && top <= 20 / H, String(top * H));
  t.true(w * W >= 12 && w * W <= 18, String(w * W));
  t.true(h * H >= 12 && h * H <= 18, String(h * H));
  t.true(r.share > 0 && r.share < 0.05);
});

test('the area threshold drops blobs smaller than min_area; the threshold sets the sensitivity', (t) => {
  // A 2x2 speck: (2+2)^2 = 16 pixels after blur and dilation, 0.11 % of the frame.
  const speck = scene([{ x: 80, y: 40, side: 2 }], 3, 60);
  t.is(calibrated().detect(speck, W, H).regions.length, 1);
  t.is(calibrated({ ...SETTINGS, minArea: 0.005 }).detect(speck, W, H).regions.length, 0);
  // A faint change (+10 grey levels, about +30 after the contrast stretch of this 60..140 scene) moves only under a low threshold.
  const faint = scene([], 0, 1).map((v, i) => (i % W >= 60 && i % W < 80 && i / W >= 30 && i / W < 50 ? v + 10 : v));
  t.is(calibrated({ ...SETTINGS, threshold: 60 }).detect(faint, W, H).regions.length, 0);
  t.is(calibrated({ ...SETTINGS, threshold: 10 }).detect(faint, W, H).regions.length, 1);
});

test('motion inside the mask never counts', (t) => {
  const mask = new Uint8Array(W * H);
  for (let y = 10; y < 40; y++) for (let x = 30; x < 70; x++) mask[y * W + x] = 1;
  const d = calibrated(SETTINGS, mask);
  t.deepEqual(d.detect(scene([{ x: 40, y: 20, side: 12 }], 3, 70), W, H).regions, []);
  t.is(d.detect(scene([{ x: 100, y: 50, side: 12 }], 3, 71), W, H).regions.length, 1, 'outside the mask it does');
});

test('a lighting change over most of the frame recalibrates instead of reporting motion', (t) => {
  const d = calibrated();
  const bright = scene([], 3, 80).map((v) => 255 - v);
  const r = d.detect(bright, W, H);
  t.true(r.calibrating);
  t.deepEqual(r.regions, []);
  // The average catches up within a few frames, then (once the contrast history has followed) the scene is quiet.
  let last = r;
  for (let i = 0; i < 40 && last.calibrating; i++)
    last = d.detect(
      scene([], 3, 81 + i).map((v) => 255 - v),
      W,
      H,
    );
  t.false(last.calibrating);
  const later = Array.from({ length: 80 }, (_, i) =>
    d.detect(
      scene([], 3, 200 + i).map((v) => 255 - v),
      W,
      H,
    ),
  );
  t.deepEqual(
    later.slice(-10).map((x) => x.regions.length),
    Array(10).fill(0),
  );
});

test('a new frame size restarts the detector (its first frame is the scene again)', (t) => {
  const d = calibrated();
  const small = new Uint8Array(80 * 45).fill(90);
  t.true(d.detect(small, 80, 45).calibrating);
});
