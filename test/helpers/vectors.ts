/** mulberry32: a small seeded PRNG so every run sees the same vectors. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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
