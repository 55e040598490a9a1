import { seededRandom } from '../../bench/seededRandom.js';

/** mulberry32 (bench/seededRandom.ts). */
export const prng = seededRandom;

/** `n` seeded unit vectors of `dim` values (uniform components, normalised). */
export function unitVectors(n: number, seed: number, dim = 512): Float32Array[] {
  const rand = prng(seed);
  return Array.from({ length: n }, () => {
    const v = Float32Array.from({ length: dim }, () => rand() - 0.5);
    let s = 0;
    for (const x of v) s += x * x;
    const norm = Math.sqrt(s);
    return v.map((x) => x / norm);
  });
}
