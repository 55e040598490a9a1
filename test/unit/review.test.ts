import test from 'ava';
import { NORM_TOLERANCE, embeddingProblem } from '../../src/collections/embeddingRule.js';
import {
  identityConflict,
  parseExternalEmbeddings,
  reviewImage,
  type ReviewGates,
  type ReviewMode,
} from '../../src/collections/review.js';
import type { AnalyzedFace } from '../../src/inference/pipeline.js';

const DIM = 4;
const GATES: ReviewGates = { minScore: 0.5, minQuality: 0.4, minFaceSize: 40, maxPoseDegrees: 45 };
const unit = (i = 0, dim = DIM) => {
  const v = new Float32Array(dim);
  v[i] = 1;
  return v;
};

const LM: [number, number][] = [
  [30, 40],
  [70, 40],
  [50, 60],
  [35, 80],
  [65, 80],
];

/** A face that passes every gate in standard mode; override what a test needs. */
function face(over: Partial<AnalyzedFace> = {}): AnalyzedFace {
  return {
    box: [10, 10, 110, 130],
    score: 0.9,
    landmarks: LM.map((p) => [...p] as [number, number]),
    quality: { score: 0.8, sharpness: 0.7, brightness: 0.6, pose: 0.9 },
    pose: { yaw: 5, pitch: -3, roll: 2 },
    embedding: unit(0),
    ...over,
  };
}

type Input = Parameters<typeof reviewImage>[0];
const review = (over: Partial<Input>) =>
  reviewImage({
    faces: [face()],
    selected: 0,
    mode: 'standard',
    gates: GATES,
    dimension: DIM,
    external: null,
    ...over,
  });
const reason = (over: Partial<Input>) => {
  const r = review(over);
  return 'reason' in r ? r.reason : 'accepted';
};

// ---- reviewImage ----

test('no faces -> face_not_found in every mode', (t) => {
  for (const mode of ['off', 'standard', 'strict'] as ReviewMode[])
    t.is(reason({ faces: [], mode }), 'face_not_found', mode);
  t.is(reason({ faces: [], mode: 'off', external: unit(1) }), 'face_not_found');
});

test('a passing face is accepted with its own embedding', (t) => {
  const f = face({ embedding: unit(2) });
  for (const mode of ['off', 'standard', 'strict'] as ReviewMode[]) {
    const r = review({ faces: [f], mode });
    t.false('reason' in r, mode);
    if ('face' in r) {
      t.is(r.face, f);
      t.is(r.embedding, f.embedding!);
    }
  }
});

test('multiple faces: rejected unless mode is off, where faces[selected] is used', (t) => {
  const a = face({ embedding: unit(0) }),
    b = face({ embedding: unit(1) });
  t.is(reason({ faces: [a, b], mode: 'standard', selected: 0 }), 'multiple_faces');
  t.is(reason({ faces: [a, b], mode: 'strict', selected: 1 }), 'multiple_faces');
  const r = review({ faces: [a, b], mode: 'off', selected: 1 });
  t.true('face' in r && r.face === b && r.embedding === b.embedding);
  const r0 = review({ faces: [a, b], mode: 'off', selected: 0 });
  t.true('face' in r0 && r0.face === a);
  // multiple_faces is checked before anything about the faces themselves.
  const bad = face({ embedding: new Float32Array(DIM), box: [0, 0, 1, 1], score: 0 });
  t.is(reason({ faces: [bad, bad], mode: 'standard' }), 'multiple_faces');
});

test('off with no valid selection -> face_not_found', (t) => {
  t.is(reason({ faces: [face(), face()], mode: 'off', selected: -1 }), 'face_not_found');
  t.is(reason({ faces: [face()], mode: 'off', selected: 3 }), 'face_not_found');
});

test('standard/strict use faces[0] regardless of selected', (t) => {
  const f = face();
  const r = review({ faces: [f], mode: 'standard', selected: -1 });
  t.true('face' in r && r.face === f);
});

test('invalid_landmarks only applies to external vectors', (t) => {
  const broken: [number, number][][] = [
    LM.slice(0, 4),
    [...LM, [1, 1]],
    [[NaN, 1], ...LM.slice(1)],
    [[1, Infinity], ...LM.slice(1)],
    [[1] as unknown as [number, number], ...LM.slice(1)],
  ];
  for (const landmarks of broken) {
    t.is(reason({ faces: [face({ landmarks })], external: unit(1) }), 'invalid_landmarks');
    t.is(
      reason({ faces: [face({ landmarks })], external: null }),
      'accepted',
      'server embeddings do not look at landmarks',
    );
  }
  // Checked before the embedding and before the quality gates, also in off mode.
  t.is(
    reason({ faces: [face({ landmarks: LM.slice(0, 3), box: [0, 0, 5, 5] })], external: new Float32Array(DIM) }),
    'invalid_landmarks',
  );
  t.is(reason({ faces: [face({ landmarks: LM.slice(0, 3) })], external: unit(1), mode: 'off' }), 'invalid_landmarks');
});

test('an external vector replaces the face embedding', (t) => {
  const ext = unit(3);
  const r = review({ external: ext });
  t.true('embedding' in r && r.embedding === ext);
  // Even when the face has no server embedding at all.
  const r2 = review({ faces: [face({ embedding: undefined })], external: ext });
  t.true('embedding' in r2 && r2.embedding === ext);
});

test('invalid_embedding (server) vs invalid_external_embedding', (t) => {
  t.is(reason({ faces: [face({ embedding: undefined })] }), 'invalid_embedding');
  t.is(reason({ faces: [face({ embedding: new Float32Array(DIM) })] }), 'invalid_embedding');
  t.is(reason({ faces: [face({ embedding: unit(0, DIM + 1) })] }), 'invalid_embedding');
  t.is(reason({ faces: [face({ embedding: Float32Array.from([0.5, 0.5, 0.5, 0.6]) })] }), 'invalid_embedding');
  t.is(reason({ external: new Float32Array(DIM) }), 'invalid_external_embedding');
  t.is(reason({ external: unit(0, 8) }), 'invalid_external_embedding');
  t.is(reason({ external: Float32Array.from([NaN, 0, 0, 1]) }), 'invalid_external_embedding');
  // A bad server embedding does not matter when an external one is given, and vice versa.
  t.is(reason({ faces: [face({ embedding: new Float32Array(DIM) })], external: unit(1) }), 'accepted');
  t.is(
    reason({ faces: [face({ embedding: unit(1) })], external: Float32Array.from([2, 0, 0, 0]) }),
    'invalid_external_embedding',
  );
  // The embedding is checked before the quality gates, and in off mode too.
  t.is(reason({ faces: [face({ embedding: undefined, box: [0, 0, 5, 5], score: 0 })] }), 'invalid_embedding');
  t.is(reason({ faces: [face({ embedding: undefined })], mode: 'off' }), 'invalid_embedding');
});

test('off stops before the quality gates', (t) => {
  const awful = face({
    box: [0, 0, 5, 5],
    score: 0.01,
    pose: { yaw: 90, pitch: 90, roll: 90 },
    quality: { score: 0, sharpness: 0, brightness: 0, pose: 0 },
  });
  t.is(reason({ faces: [awful], mode: 'off' }), 'accepted');
  t.is(reason({ faces: [awful], mode: 'standard' }), 'face_too_small');
  t.is(reason({ faces: [awful], mode: 'strict' }), 'face_too_small');
});

test('face_too_small uses the shorter side against minFaceSize (strictly below)', (t) => {
  t.is(reason({ faces: [face({ box: [10, 10, 49.9, 200] })] }), 'face_too_small', 'width 39.9');
  t.is(reason({ faces: [face({ box: [10, 10, 200, 49] })] }), 'face_too_small', 'height 39');
  t.is(reason({ faces: [face({ box: [10, 10, 50, 50] })] }), 'accepted', 'exactly 40x40');
  t.is(reason({ faces: [face({ box: [10, 20, 50, 300] })] }), 'accepted', '40 wide, tall');
});

test('low_detection_score is strictly below minScore', (t) => {
  t.is(reason({ faces: [face({ score: 0.49 })] }), 'low_detection_score');
  t.is(reason({ faces: [face({ score: 0.5 })] }), 'accepted');
});

test('extreme_pose: |yaw|, |pitch| or |roll| above maxPoseDegrees', (t) => {
  for (const pose of [
    { yaw: 45.1, pitch: 0, roll: 0 },
    { yaw: -46, pitch: 0, roll: 0 },
    { yaw: 0, pitch: -45.5, roll: 0 },
    { yaw: 0, pitch: 0, roll: 60 },
    { yaw: 0, pitch: 0, roll: -90 },
  ]) {
    t.is(reason({ faces: [face({ pose })] }), 'extreme_pose', JSON.stringify(pose));
  }
  t.is(reason({ faces: [face({ pose: { yaw: 45, pitch: -45, roll: 45 } })] }), 'accepted', 'exactly at the limit');
});

test('low_quality is strictly below minQuality and uses quality.score only', (t) => {
  t.is(reason({ faces: [face({ quality: { score: 0.39, sharpness: 1, brightness: 1, pose: 1 } })] }), 'low_quality');
  t.is(reason({ faces: [face({ quality: { score: 0.4, sharpness: 0, brightness: 0, pose: 0 } })] }), 'accepted');
});

test('quality gates run in order: size, detection score, pose, quality', (t) => {
  const small = { box: [0, 0, 10, 10] as [number, number, number, number] };
  const lowScore = { score: 0.1 };
  const pose = { pose: { yaw: 80, pitch: 0, roll: 0 } };
  const lowQ = { quality: { score: 0.1, sharpness: 0, brightness: 0, pose: 0 } };
  for (const mode of ['standard', 'strict'] as ReviewMode[]) {
    t.is(reason({ mode, faces: [face({ ...small, ...lowScore, ...pose, ...lowQ })] }), 'face_too_small');
    t.is(reason({ mode, faces: [face({ ...lowScore, ...pose, ...lowQ })] }), 'low_detection_score');
    t.is(reason({ mode, faces: [face({ ...pose, ...lowQ })] }), 'extreme_pose');
    t.is(reason({ mode, faces: [face({ ...lowQ })] }), 'low_quality');
  }
});

// ---- identityConflict ----

test('identityConflict: bootstrap, tie, strictly-better and no other person', (t) => {
  t.false(identityConflict(null, 0.9), 'first sample of a person bootstraps');
  t.false(identityConflict(null, null));
  t.false(identityConflict(0.7, null), 'no other person');
  t.true(identityConflict(0.7, 0.7), 'a tie is rejected');
  t.true(identityConflict(0.7, 0.71));
  t.false(identityConflict(0.71, 0.7));
  t.false(identityConflict(0, -0.1));
  t.true(identityConflict(-0.2, -0.2));
});

// ---- embeddingProblem ----

test('embeddingProblem: accepts unit vectors, rejects wrong length', (t) => {
  t.is(embeddingProblem(unit(0), DIM), null);
  t.is(embeddingProblem([0.5, 0.5, 0.5, 0.5], DIM), null);
  t.is(embeddingProblem([0.6, -0.8], 2), null);
  t.is(embeddingProblem(unit(0, 3), DIM), 'expected 4 values, got 3');
  t.is(embeddingProblem([], DIM), 'expected 4 values, got 0');
  t.is(embeddingProblem(unit(0, 5), DIM), 'expected 4 values, got 5');
});

test('embeddingProblem: non-finite values and the zero vector', (t) => {
  t.is(embeddingProblem([NaN, 0, 0, 1], DIM), 'non-finite value');
  t.is(embeddingProblem([1, Infinity, 0, 0], DIM), 'non-finite value');
  t.is(embeddingProblem([1, 0, 0, -Infinity], DIM), 'non-finite value');
  // Finite in float64 but not in float32.
  t.is(embeddingProblem([1e39, 0, 0, 0], DIM), 'non-finite value');
  t.is(embeddingProblem([0, 0, 0, 0], DIM), 'zero vector');
  t.is(embeddingProblem([0, -0, 0, 0], DIM), 'zero vector');
  // Underflows to zero in float32.
  t.is(embeddingProblem([1e-50, 0, 0, 0], DIM), 'zero vector');
});

test('embeddingProblem: norm tolerance 2e-4 boundary (float32 values)', (t) => {
  t.is(NORM_TOLERANCE, 2e-4);
  const ulp = 2 ** -23;
  // The largest float32 with f - 1 <= 2e-4, and the next one up.
  let inside = Math.fround(1 + 2e-4);
  if (inside - 1 > 2e-4) inside -= ulp;
  const outside = inside + ulp;
  t.true(inside - 1 <= 2e-4 && outside - 1 > 2e-4);
  t.is(embeddingProblem([inside, 0, 0, 0], DIM), null);
  t.regex(embeddingProblem([outside, 0, 0, 0], DIM) ?? '', /^norm 1\.000200 is not 1 ± 0\.0002$/);
  // Below 1 (ulp is 2^-24 there).
  let low = Math.fround(1 - 2e-4);
  if (1 - low > 2e-4) low += 2 ** -24;
  t.true(1 - low <= 2e-4 && 1 - (low - 2 ** -24) > 2e-4);
  t.is(embeddingProblem([low, 0, 0, 0], DIM), null);
  t.truthy(embeddingProblem([low - 2 ** -24, 0, 0, 0], DIM));
  // Comfortably inside / outside with the norm spread over components.
  t.is(embeddingProblem([0.5, 0.5, 0.5, 0.50005], DIM), null);
  t.regex(embeddingProblem([0.5, 0.5, 0.5, 0.501], DIM) ?? '', /^norm 1\.000500/);
  t.regex(embeddingProblem([2, 0, 0, 0], DIM) ?? '', /^norm 2\.000000/);
});

// ---- parseExternalEmbeddings ----

test('parseExternalEmbeddings: non-JSON and non-array JSON -> null', (t) => {
  for (const text of ['', 'nope', '[1,2', '{"a":1}', '1', '"[]"', 'null', 'true'])
    t.is(parseExternalEmbeddings(text, DIM), null, text);
  t.deepEqual(parseExternalEmbeddings('[]', DIM), []);
});

test('parseExternalEmbeddings: per-vector problems do not fail the others', (t) => {
  const out = parseExternalEmbeddings(
    JSON.stringify([
      [1, 0, 0, 0],
      [true, 0, 0, 0],
      ['1', 0, 0, 0],
      [1, 0, 0],
      null,
      5,
      { 0: 1 },
      [[1], 0, 0, 0],
      [0, 0, 0, 0],
      [2, 0, 0, 0],
      [0, 1, 0, 0],
    ]),
    DIM,
  );
  t.truthy(out);
  t.is(out!.length, 11);
  t.true(out![0] instanceof Float32Array);
  for (const i of [1, 2, 4, 5, 6, 7])
    t.deepEqual(out![i], { problem: 'each vector must be an array of numbers' }, `element ${i}`);
  t.deepEqual(out![3], { problem: 'expected 4 values, got 3' });
  t.deepEqual(out![8], { problem: 'zero vector' });
  t.deepEqual(out![9], { problem: 'norm 2.000000 is not 1 ± 0.0002' });
  t.true(out![10] instanceof Float32Array);
  t.deepEqual(Array.from(out![10] as Float32Array), [0, 1, 0, 0]);
});

test('parseExternalEmbeddings: an overflowing JSON number is a non-finite problem', (t) => {
  t.deepEqual(parseExternalEmbeddings('[[1e400, 0, 0, 0]]', DIM), [{ problem: 'non-finite value' }]);
});

test('parseExternalEmbeddings: valid vectors are renormalised to unit length as Float32Array', (t) => {
  const raw = [0.5003, 0.5, 0.5, -0.5]; // norm ~1.00015: inside the tolerance but not unit
  const out = parseExternalEmbeddings(JSON.stringify([raw]), DIM)!;
  const v = out[0];
  t.true(v instanceof Float32Array);
  const f = v as Float32Array;
  let sq = 0;
  for (const x of f) sq += x * x;
  t.true(Math.abs(Math.sqrt(sq) - 1) < 1e-6, `norm ${Math.sqrt(sq)}`);
  const n = Math.sqrt(raw.reduce((s, x) => s + Math.fround(x) ** 2, 0));
  raw.forEach((x, i) => t.is(f[i], Math.fround(Math.fround(x) / n)));
  t.not(f[0], Math.fround(0.5003), 'actually rescaled');
  t.true(f[0]! < 0.5003 && f[1]! < 0.5);
  t.is(embeddingProblem(f, DIM), null);
  // Higher dimension, random-ish direction with norm off by 1e-4.
  const dim = 512;
  const w = Array.from({ length: dim }, (_, i) => Math.sin(i * 1.7 + 0.3));
  const wn = Math.sqrt(w.reduce((s, x) => s + x * x, 0));
  const scaled = w.map((x) => (x / wn) * (1 + 1e-4));
  const [u] = parseExternalEmbeddings(JSON.stringify([scaled]), dim)!;
  t.true(u instanceof Float32Array);
  let sq2 = 0;
  for (const x of u as Float32Array) sq2 += x * x;
  t.true(Math.abs(Math.sqrt(sq2) - 1) < 1e-6);
  t.true(Math.abs((u as Float32Array)[0]! - w[0]! / wn) < 1e-6);
});
