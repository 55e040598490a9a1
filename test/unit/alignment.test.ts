import test from 'ava';
import {
  alignmentError,
  ARCFACE_TEMPLATE_112,
  estimateSimilarity,
  invertAffine,
  warpToTensor,
  type Affine,
} from '../../src/inference/alignment.js';

const apply = (m: Affine, [x, y]: readonly [number, number]): [number, number] => [
  m[0] * x + m[1] * y + m[2],
  m[3] * x + m[4] * y + m[5],
];

function similarity(angleDeg: number, scale: number, tx: number, ty: number): Affine {
  const r = (angleDeg * Math.PI) / 180;
  const a = scale * Math.cos(r),
    b = scale * Math.sin(r);
  return [a, -b, tx, b, a, ty];
}

const SRC: [number, number][] = [
  [10, 20],
  [60, 18],
  [35, 45],
  [15, 70],
  [58, 72],
];

function assertAffineClose(t: import('ava').ExecutionContext, got: Affine | null, want: Affine, eps: number): void {
  t.not(got, null);
  for (let i = 0; i < 6; i++) t.true(Math.abs(got![i]! - want[i]!) < eps, `element ${i}: ${got![i]} vs ${want[i]}`);
}

test('estimateSimilarity recovers a known similarity (rotate 30°, scale 1.7, translate) exactly', (t) => {
  const truth = similarity(30, 1.7, -12.5, 40.25);
  const dst = SRC.map((p) => apply(truth, p));
  assertAffineClose(t, estimateSimilarity(SRC, dst), truth, 1e-9);
});

test('estimateSimilarity recovers a transform onto the ArcFace template', (t) => {
  // Build "detected" landmarks as the pre-image of the template under a known similarity.
  const truth = similarity(-17, 0.45, 20, -33);
  const inv = invertAffine(truth)!;
  const detected = ARCFACE_TEMPLATE_112.map((p) => apply(inv, p));
  const est = estimateSimilarity(detected, ARCFACE_TEMPLATE_112);
  assertAffineClose(t, est, truth, 1e-9);
  for (let i = 0; i < 5; i++) {
    const [x, y] = apply(est!, detected[i]!);
    t.true(Math.abs(x - ARCFACE_TEMPLATE_112[i]![0]) < 1e-9 && Math.abs(y - ARCFACE_TEMPLATE_112[i]![1]) < 1e-9);
  }
});

test('estimateSimilarity: the identity mapping of the template gives the identity', (t) => {
  assertAffineClose(t, estimateSimilarity(ARCFACE_TEMPLATE_112, ARCFACE_TEMPLATE_112), [1, 0, 0, 0, 1, 0], 1e-12);
});

test('estimateSimilarity is a least-squares fit: noisy points stay close', (t) => {
  const truth = similarity(30, 1.7, 5, -7);
  const noise: [number, number][] = [
    [0.3, -0.2],
    [-0.25, 0.1],
    [0.05, 0.3],
    [-0.2, -0.15],
    [0.1, -0.05],
  ];
  const dst = SRC.map((p, i) => {
    const [x, y] = apply(truth, p);
    return [x + noise[i]![0], y + noise[i]![1]] as [number, number];
  });
  const est = estimateSimilarity(SRC, dst)!;
  t.not(est, null);
  const scale = Math.hypot(est[0], est[3]);
  const angle = (Math.atan2(est[3], est[0]) * 180) / Math.PI;
  t.true(Math.abs(scale - 1.7) < 0.01, `scale ${scale}`);
  t.true(Math.abs(angle - 30) < 0.5, `angle ${angle}`);
  // Residuals are of the order of the noise, not bigger.
  let sq = 0;
  for (let i = 0; i < 5; i++) {
    const [x, y] = apply(est, SRC[i]!);
    sq += (x - dst[i]![0]) ** 2 + (y - dst[i]![1]) ** 2;
  }
  t.true(Math.sqrt(sq / 5) < 0.4);
  // It is a similarity: a == d and b == -c.
  t.true(Math.abs(est[0] - est[4]) < 1e-12 && Math.abs(est[1] + est[3]) < 1e-12);
});

test('estimateSimilarity returns null for degenerate input', (t) => {
  const same: [number, number][] = [
    [5, 5],
    [5, 5],
    [5, 5],
    [5, 5],
    [5, 5],
  ];
  t.is(estimateSimilarity(same, ARCFACE_TEMPLATE_112), null);
  t.is(estimateSimilarity([[1, 2]], [[3, 4]]), null); // fewer than 2 points
  t.is(estimateSimilarity(SRC, SRC.slice(0, 4)), null); // length mismatch
  // Destination collapsed to a point: zero scale.
  t.is(estimateSimilarity(SRC, same), null);
});

test('invertAffine round trip', (t) => {
  const m: Affine = [1.2, -0.4, 7, 0.3, 0.9, -3];
  const inv = invertAffine(m)!;
  t.not(inv, null);
  for (const p of [
    [0, 0],
    [10, -4],
    [123.5, 77.25],
  ] as [number, number][]) {
    const [x, y] = apply(inv, apply(m, p));
    t.true(Math.abs(x - p[0]) < 1e-9 && Math.abs(y - p[1]) < 1e-9);
  }
  t.is(invertAffine([1, 2, 0, 2, 4, 0]), null); // singular
});

// 3x2 RGB image: distinct values per pixel and channel.
function testImage(): { rgb: Uint8Array; width: number; height: number } {
  const width = 3,
    height = 2;
  const rgb = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const p = (y * width + x) * 3;
      rgb[p] = 10 + 10 * x + 50 * y; // R
      rgb[p + 1] = 100 + x + y * 5; // G
      rgb[p + 2] = 200 + 3 * x + 7 * y; // B
    }
  return { rgb, width, height };
}

test('warpToTensor: identity transform reproduces normalised pixels in rgb planes', (t) => {
  const { rgb, width, height } = testImage();
  const layout = { channelOrder: 'rgb' as const, mean: 127.5, std: 128 };
  const out = warpToTensor(rgb, width, height, [1, 0, 0, 0, 1, 0], width, height, layout);
  const plane = width * height;
  t.is(out.length, 3 * plane);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const p = (y * width + x) * 3;
      for (let k = 0; k < 3; k++)
        t.true(Math.abs(out[k * plane + y * width + x]! - (rgb[p + k]! - 127.5) / 128) < 1e-6);
    }
});

test('warpToTensor: bgr order writes blue to the first plane', (t) => {
  const { rgb, width, height } = testImage();
  const layout = { channelOrder: 'bgr' as const, mean: 0, std: 1 };
  const out = warpToTensor(rgb, width, height, [1, 0, 0, 0, 1, 0], width, height, layout);
  const plane = width * height;
  for (let i = 0; i < plane; i++) {
    t.is(out[i], rgb[i * 3 + 2]); // B
    t.is(out[plane + i], rgb[i * 3 + 1]); // G
    t.is(out[2 * plane + i], rgb[i * 3]); // R
  }
});

test('warpToTensor: a translation shifts pixels and out-of-image samples are (0-mean)/std', (t) => {
  const { rgb, width, height } = testImage();
  const layout = { channelOrder: 'rgb' as const, mean: 127.5, std: 127.5 };
  // source -> output: shift right by 1 pixel, output 4x2.
  const out = warpToTensor(rgb, width, height, [1, 0, 1, 0, 1, 0], 4, 2, layout);
  const plane = 8;
  for (let y = 0; y < 2; y++) {
    for (let k = 0; k < 3; k++)
      t.true(Math.abs(out[k * plane + y * 4]! - -1) < 1e-6, 'column 0 maps from x=-1 (outside)');
    for (let x = 1; x < 4; x++) {
      const p = (y * width + (x - 1)) * 3;
      for (let k = 0; k < 3; k++) t.true(Math.abs(out[k * plane + y * 4 + x]! - (rgb[p + k]! - 127.5) / 127.5) < 1e-6);
    }
  }
});

test('warpToTensor: half-pixel shift blends neighbours bilinearly', (t) => {
  const width = 2,
    height = 1;
  const rgb = new Uint8Array([0, 0, 0, 100, 200, 50]);
  const out = warpToTensor(rgb, width, height, [1, 0, -0.5, 0, 1, 0], 1, 1, { channelOrder: 'rgb', mean: 0, std: 1 });
  t.deepEqual([...out], [50, 100, 25]);
});

test('warpToTensor writes at the given offset of a shared buffer and throws for degenerate transforms', (t) => {
  const { rgb, width, height } = testImage();
  const buf = new Float32Array(2 * 3 * width * height).fill(NaN);
  warpToTensor(
    rgb,
    width,
    height,
    [1, 0, 0, 0, 1, 0],
    width,
    height,
    { channelOrder: 'rgb', mean: 0, std: 1 },
    buf,
    3 * width * height,
  );
  t.true(Number.isNaN(buf[0]!));
  t.is(buf[3 * width * height], rgb[0]);
  t.throws(() => warpToTensor(rgb, width, height, [0, 0, 0, 0, 0, 0], 2, 2, { channelOrder: 'rgb', mean: 0, std: 1 }));
});

test('alignmentError: 0 for any similarity image of the template, grows with distortion, Infinity when degenerate', (t) => {
  const moved = ARCFACE_TEMPLATE_112.map((p) => apply(similarity(25, 3.1, 400, -20), p));
  t.true(alignmentError(moved) < 1e-9);
  // Push the nose 10 template pixels sideways (roughly what a strongly turned head does).
  const turned = ARCFACE_TEMPLATE_112.map(([x, y], i) => [i === 2 ? x + 10 : x, y] as [number, number]);
  const e = alignmentError(turned);
  t.true(e > 3 && e < 10, `error ${e}`);
  t.is(
    alignmentError([
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
      [1, 1],
    ]),
    Infinity,
  );
});
