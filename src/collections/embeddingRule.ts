/**
 * The rule for a stored embedding (registration's review and the bulk import share it). Its own module
 * with no imports, so the import's parse worker loads it without the inference modules.
 */

/** |norm - 1| above this means the vector was not L2-normalised (the reference's tolerance). */
export const NORM_TOLERANCE = 2e-4;

/** Why a vector is unusable as a stored embedding of dimension `dim`, or null when it is fine. */
export function embeddingProblem(v: ArrayLike<number>, dim: number): string | null {
  const r = checkEmbedding(v, dim);
  return typeof r === 'string' ? r : null;
}

/**
 * The one embedding rule: the problem (as embeddingProblem words it), or the vector's L2 norm when it is
 * fine (the bulk import normalises with it instead of a second pass over the values).
 */
export function checkEmbedding(v: ArrayLike<number>, dim: number): string | number {
  if (v.length !== dim) return `expected ${dim} values, got ${v.length}`;
  let sq = 0;
  for (let i = 0; i < v.length; i++) {
    const x = Math.fround(v[i]!);
    if (!Number.isFinite(x)) return 'non-finite value';
    sq += x * x;
  }
  const norm = Math.sqrt(sq);
  if (norm === 0) return 'zero vector';
  if (Math.abs(norm - 1) > NORM_TOLERANCE) return `norm ${norm.toFixed(6)} is not 1 ± ${NORM_TOLERANCE}`;
  return norm;
}
