import test from 'ava';
import type { Candidate } from '../../src/inference/geometry.js';
import { boxStatistics, estimatePose, faceQuality } from '../../src/inference/quality.js';

const FRONTAL: [number, number][] = [
  [40, 50],
  [80, 50],
  [60, 70],
  [45, 90],
  [75, 90],
];
const close = (a: number, b: number, eps = 1e-9) => Math.abs(a - b) < eps;

test('estimatePose: frontal symmetric landmarks -> yaw 0, roll 0', (t) => {
  const p = estimatePose(FRONTAL);
  t.true(close(p.yaw, 0));
  t.true(close(p.roll, 0));
  // nose at (70-50)/(90-50) = 0.5 of the eye-mouth span -> (0.5 - 0.45) * 90 = 4.5
  t.true(close(p.pitch, 4.5), `pitch ${p.pitch}`);
});

test('estimatePose: rotating the whole face gives roll = angle', (t) => {
  for (const angle of [15, -25, 40]) {
    const r = (angle * Math.PI) / 180;
    const c = [60, 70];
    const rot = FRONTAL.map(([x, y]) => {
      const dx = x - c[0]!,
        dy = y - c[1]!;
      return [c[0]! + dx * Math.cos(r) - dy * Math.sin(r), c[1]! + dx * Math.sin(r) + dy * Math.cos(r)] as [
        number,
        number,
      ];
    });
    const p = estimatePose(rot);
    t.true(close(p.roll, angle, 1e-9), `angle ${angle}: roll ${p.roll}`);
  }
});

test('estimatePose: nose shifted right -> positive yaw proportional to eye distance', (t) => {
  const lm = FRONTAL.map((p) => [...p] as [number, number]);
  lm[2] = [70, 70]; // 10 px right of the eye midpoint; eye distance 40 -> 10/40*90 = 22.5
  const p = estimatePose(lm);
  t.true(close(p.yaw, 22.5), `yaw ${p.yaw}`);
  lm[2] = [50, 70];
  t.true(close(estimatePose(lm).yaw, -22.5));
});

test('estimatePose: coincident eyes give yaw 90 (degenerate)', (t) => {
  t.is(
    estimatePose([
      [50, 50],
      [50, 50],
      [55, 70],
      [45, 90],
      [75, 90],
    ]).yaw,
    90,
  );
});

function uniform(width: number, height: number, r: number, g: number, b: number): Uint8Array {
  const rgb = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i++) {
    rgb[i * 3] = r;
    rgb[i * 3 + 1] = g;
    rgb[i * 3 + 2] = b;
  }
  return rgb;
}

test('boxStatistics: uniform grey image -> zero Laplacian variance and brightness v/255', (t) => {
  const rgb = uniform(20, 16, 90, 90, 90);
  const s = boxStatistics(rgb, 20, 16, [2, 3, 15, 12]);
  t.true(close(s.brightness, 90 / 255, 1e-5), `${s.brightness}`);
  t.true(s.laplacianVariance < 1e-6, `${s.laplacianVariance}`);
});

test('boxStatistics: brightness uses BT.601 weights', (t) => {
  const rgb = uniform(8, 8, 255, 0, 0);
  t.true(close(boxStatistics(rgb, 8, 8, [0, 0, 8, 8]).brightness, 0.299, 1e-5));
  const g = uniform(8, 8, 0, 255, 0);
  t.true(close(boxStatistics(g, 8, 8, [0, 0, 8, 8]).brightness, 0.587, 1e-5));
});

test('boxStatistics: checkerboard has very high Laplacian variance', (t) => {
  const w = 16,
    h = 16;
  const rgb = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const v = (x + y) % 2 === 0 ? 255 : 0;
      rgb.fill(v, (y * w + x) * 3, (y * w + x) * 3 + 3);
    }
  const s = boxStatistics(rgb, w, h, [0, 0, w, h]);
  // Every Laplacian is +-4*255 = +-1020 with mean 0 -> variance 1020^2.
  t.true(close(s.laplacianVariance, 1020 * 1020, 1), `${s.laplacianVariance}`);
  t.true(close(s.brightness, 0.5, 1e-5));
});

test('boxStatistics: box is clamped to the image; box fully outside -> zeros', (t) => {
  const rgb = uniform(10, 10, 200, 200, 200);
  const s = boxStatistics(rgb, 10, 10, [-5, -5, 50, 50]);
  t.true(close(s.brightness, 200 / 255, 1e-5));
  t.deepEqual(boxStatistics(rgb, 10, 10, [20, 20, 30, 30]), { brightness: 0, laplacianVariance: 0 });
});

const face = (score: number, box: [number, number, number, number] = [10, 10, 110, 130]): Candidate => ({
  box,
  score,
  landmarks: FRONTAL,
});

test('faceQuality: values in [0,1] and rounded to 6 decimals', (t) => {
  const cases: [
    Candidate,
    { brightness: number; laplacianVariance: number },
    { yaw: number; pitch: number; roll: number },
  ][] = [
    [
      face(0.87654321),
      { brightness: 0.4321987, laplacianVariance: 37.123 },
      { yaw: 12.3456, pitch: -7.891, roll: 3.1415 },
    ],
    [face(1.5), { brightness: 1.7, laplacianVariance: 1e9 }, { yaw: 0, pitch: 0, roll: 0 }],
    [face(-1, [0, 0, 2, 2]), { brightness: -0.5, laplacianVariance: 0 }, { yaw: 400, pitch: -300, roll: 200 }],
  ];
  for (const [f, s, p] of cases) {
    const q = faceQuality(f, s, p);
    for (const [k, v] of Object.entries(q)) {
      t.true(v >= 0 && v <= 1, `${k}=${v}`);
      t.is(Math.round(v * 1e6) / 1e6, v, `${k} not rounded: ${v}`);
    }
  }
  const q = faceQuality(...cases[0]!);
  t.is(q.brightness, 0.432199);
  t.is(q.sharpness, Math.round((1 - Math.exp(-0.37123)) * 1e6) / 1e6);
  t.is(q.pose, Math.round((1 - (12.3456 + 7.891 + 3.1415) / 135) * 1e6) / 1e6);
});

test('faceQuality: score is monotonic in detection score', (t) => {
  const stats = { brightness: 0.5, laplacianVariance: 50 };
  const pose = { yaw: 5, pitch: 5, roll: 5 };
  let prev = -Infinity;
  for (const s of [0, 0.1, 0.3, 0.5, 0.7, 0.9, 1]) {
    const q = faceQuality(face(s), stats, pose).score;
    t.true(q > prev, `score ${s}: ${q} <= ${prev}`);
    prev = q;
  }
  // Weight is 0.35 per unit of detection score.
  const d = faceQuality(face(0.9), stats, pose).score - faceQuality(face(0.5), stats, pose).score;
  t.true(close(d, 0.14, 2e-6), `${d}`);
});

test('faceQuality: sharper, better-lit and more frontal faces score higher', (t) => {
  const base = faceQuality(face(0.8), { brightness: 0.5, laplacianVariance: 50 }, { yaw: 0, pitch: 0, roll: 0 }).score;
  t.true(faceQuality(face(0.8), { brightness: 0.5, laplacianVariance: 5 }, { yaw: 0, pitch: 0, roll: 0 }).score < base);
  t.true(
    faceQuality(face(0.8), { brightness: 0.1, laplacianVariance: 50 }, { yaw: 0, pitch: 0, roll: 0 }).score < base,
  );
  t.true(
    faceQuality(face(0.8), { brightness: 0.5, laplacianVariance: 50 }, { yaw: 30, pitch: 0, roll: 0 }).score < base,
  );
  t.true(
    faceQuality(face(0.8, [0, 0, 20, 20]), { brightness: 0.5, laplacianVariance: 50 }, { yaw: 0, pitch: 0, roll: 0 })
      .score < base,
  );
});

test('boxStatistics: the same box gives the same values whatever was measured before (the grey buffer is reused)', (t) => {
  // A noisy image: every box has its own brightness and Laplacian variance.
  const w = 1100,
    h = 1000;
  const rgb = new Uint8Array(w * h * 3);
  let seed = 7;
  for (let i = 0; i < rgb.length; i++) rgb[i] = seed = ((seed * 1103515245 + 12345) % 2147483648) % 256;
  const boxes = [
    [10, 20, 60, 90],
    [0, 0, w, h],
    [5, 5, 400, 300],
    [300, 200, 331, 241],
    [0, 0, 1050, 999],
  ];
  const alone = boxes.map((b) => boxStatistics(rgb, w, h, b));
  // Larger boxes first, then smaller: a smaller box must not read what a larger one left behind.
  const reversed = [...boxes]
    .reverse()
    .map((b) => boxStatistics(rgb, w, h, b))
    .reverse();
  t.deepEqual(reversed, alone);
  const small = boxStatistics(uniform(40, 40, 90, 90, 90), 40, 40, [0, 0, 40, 40]);
  t.true(small.laplacianVariance < 1e-6 && close(small.brightness, 90 / 255, 1e-5), JSON.stringify(small));
});
