import test from 'ava';
import { cosineSimilarity } from '../../src/inference/pipeline.js';

/** Seeded unit vectors stored as float32, as the recognizer's embeddings are. */
function unitVectors(count: number, dim: number, seed: number): Float32Array[] {
  let s = seed >>> 0;
  const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1;
  return Array.from({ length: count }, () => {
    const v = Float32Array.from({ length: dim }, rand);
    const n = Math.hypot(...v);
    return v.map((x) => x / n);
  });
}

test('a face compared with itself is exactly 1, for every float32 unit vector', (t) => {
  const vs = unitVectors(2000, 512, 7);
  const off = vs.filter((v) => cosineSimilarity(v, v.slice()) !== 1);
  t.is(off.length, 0, `${off.length} of ${vs.length} self-comparisons were not 1`);
});

test('other pairs keep their dot product to 1e-8, clipped to [-1, 1]', (t) => {
  const vs = unitVectors(400, 512, 11);
  for (let i = 0; i + 1 < vs.length; i += 2) {
    const a = vs[i]!,
      b = vs[i + 1]!;
    let dot = 0;
    for (let j = 0; j < a.length; j++) dot += a[j]! * b[j]!;
    t.true(Math.abs(cosineSimilarity(a, b) - dot) < 1e-8);
  }
  const v = vs[0]!;
  t.is(
    cosineSimilarity(
      v,
      v.map((x) => -x),
    ),
    -1,
  );
});
