/**
 * Verification and identification statistics for the quality bench: ROC AUC, TAR at a target FAR with
 * exact binomial intervals, rank-1 identification and score summaries. Pure functions on plain arrays.
 */

export interface Interval {
  low: number;
  high: number;
}

const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(x) for x > 0 (Lanczos, g = 7; ~15 significant digits). */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let a = LANCZOS[0]!;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += LANCZOS[i]! / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

/** Continued fraction of the incomplete beta function (modified Lentz). */
function betaFraction(a: number, b: number, x: number): number {
  const tiny = 1e-300;
  const qab = a + b,
    qap = a + 1,
    qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < tiny) d = tiny;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 500; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-15) break;
  }
  return h;
}

/** The regularised incomplete beta function I_x(a, b), the CDF of Beta(a, b) at x. */
export function regularizedBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log1p(-x));
  // The fraction converges fast on the side of the mean; use the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) elsewhere.
  return x < (a + 1) / (a + b + 2) ? (front * betaFraction(a, b, x)) / a : 1 - (front * betaFraction(b, a, 1 - x)) / b;
}

/** The p-quantile of Beta(a, b), by bisection on the CDF (monotone; 100 halvings reach double precision). */
export function betaQuantile(p: number, a: number, b: number): number {
  let lo = 0,
    hi = 1;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (regularizedBeta(mid, a, b) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * Clopper-Pearson ("exact") interval for k successes in n trials: the Beta quantiles that invert the
 * binomial test. Conservative (coverage is at least the nominal level), and defined at k = 0 and k = n,
 * where the normal approximation breaks down — which is exactly where TAR near 1 and FAR near 0 live.
 */
export function clopperPearson(k: number, n: number, confidence = 0.95): Interval {
  if (!(n > 0) || k < 0 || k > n) throw new Error(`clopperPearson needs 0 <= k <= n, n > 0 (k=${k}, n=${n})`);
  const alpha = 1 - confidence;
  return {
    low: k === 0 ? 0 : betaQuantile(alpha / 2, k, n - k + 1),
    high: k === n ? 1 : betaQuantile(1 - alpha / 2, k + 1, n - k),
  };
}

/** Wilson score interval (closed form; used only to cross-check Clopper-Pearson in tests and notes). */
export function wilson(k: number, n: number, z = 1.959963984540054): Interval {
  const p = k / n,
    z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/**
 * ROC AUC = P(genuine > impostor) + ½ P(genuine = impostor), the Mann-Whitney U statistic over all
 * genuine x impostor pairs, computed from average ranks in O(n log n).
 */
export function rocAuc(genuine: readonly number[], impostor: readonly number[]): number {
  if (genuine.length === 0 || impostor.length === 0) return NaN;
  const all = [...genuine.map((v) => ({ v, g: true })), ...impostor.map((v) => ({ v, g: false }))].sort(
    (a, b) => a.v - b.v,
  );
  let rankSum = 0;
  for (let i = 0; i < all.length;) {
    let j = i;
    while (j < all.length && all[j]!.v === all[i]!.v) j++;
    const avgRank = (i + 1 + j) / 2; // ranks i+1 .. j share their mean
    for (let k = i; k < j; k++) if (all[k]!.g) rankSum += avgRank;
    i = j;
  }
  const n1 = genuine.length,
    n0 = impostor.length;
  return (rankSum - (n1 * (n1 + 1)) / 2) / (n1 * n0);
}

/** Rule of three: with n impostor pairs and no false accept, FAR <= 3/n at 95 %; below 3/n nothing can be claimed. */
export const minImpostorsFor = (far: number): number => Math.ceil(3 / far);

export interface OperatingPoint {
  far_target: number;
  /** Accept when similarity >= threshold (inclusive, as the service matches). */
  threshold: number;
  impostors: number;
  false_accepts: number;
  far: number;
  /** Clopper-Pearson 95 % upper bound of the FAR actually achieved at `threshold`. */
  far_upper95: number;
  genuine: number;
  true_accepts: number;
  tar: number;
  tar_ci95: Interval;
  /** false when there are fewer than 3/FAR impostor pairs: the threshold is then just above the highest impostor. */
  supported: boolean;
}

/** The smallest multiple of 1e-4 strictly above v: a threshold that is printable and excludes v. */
export const thresholdAbove = (v: number): number => Math.floor(v * 1e4 + 1e-9) / 1e4 + 1e-4;

/**
 * TAR at a target FAR. The threshold is placed just above the (k+1)-th highest impostor score, with
 * k = floor(FAR * impostors) false accepts allowed, so the empirical FAR never exceeds the target
 * (ties included). With fewer than 3/FAR impostors the target is not measurable: k is then 0 and the
 * point is marked unsupported.
 */
export function tarAtFar(genuine: readonly number[], impostor: readonly number[], far: number): OperatingPoint {
  const imp = [...impostor].sort((a, b) => b - a);
  const supported = imp.length >= minImpostorsFor(far);
  const k = Math.floor(far * imp.length);
  const threshold = k < imp.length ? thresholdAbove(imp[k]!) : -1;
  return operatingPoint(genuine, imp, threshold, far, supported);
}

/** TAR and FAR at a fixed threshold (inclusive), with their intervals. */
export function operatingPoint(
  genuine: readonly number[],
  impostor: readonly number[],
  threshold: number,
  farTarget = NaN,
  supported = true,
): OperatingPoint {
  const falseAccepts = impostor.filter((s) => s >= threshold).length;
  const trueAccepts = genuine.filter((s) => s >= threshold).length;
  return {
    far_target: farTarget,
    threshold,
    impostors: impostor.length,
    false_accepts: falseAccepts,
    far: impostor.length ? falseAccepts / impostor.length : NaN,
    far_upper95: impostor.length ? clopperPearson(falseAccepts, impostor.length).high : NaN,
    genuine: genuine.length,
    true_accepts: trueAccepts,
    tar: genuine.length ? trueAccepts / genuine.length : NaN,
    tar_ci95: genuine.length ? clopperPearson(trueAccepts, genuine.length) : { low: NaN, high: NaN },
    supported,
  };
}

export interface ScoreSummary {
  n: number;
  mean: number;
  sd: number;
  min: number;
  p05: number;
  p50: number;
  p95: number;
  max: number;
}

/** Linear-interpolated quantile of an ascending array. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos),
    hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export function summarize(xs: readonly number[]): ScoreSummary {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  const mean = n ? s.reduce((a, b) => a + b, 0) / n : NaN;
  const sd = n > 1 ? Math.sqrt(s.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1)) : NaN;
  return {
    n,
    mean,
    sd,
    min: s[0] ?? NaN,
    p05: quantile(s, 0.05),
    p50: quantile(s, 0.5),
    p95: quantile(s, 0.95),
    max: s[n - 1] ?? NaN,
  };
}

/** Counts per bin of width (hi - lo) / bins; values outside [lo, hi) land in the first or last bin. */
export function histogram(xs: readonly number[], lo: number, hi: number, bins: number): number[] {
  const out = new Array<number>(bins).fill(0);
  for (const v of xs) out[Math.min(bins - 1, Math.max(0, Math.floor(((v - lo) / (hi - lo)) * bins)))]!++;
  return out;
}

/** d' = |mean_g - mean_i| / sqrt((sd_g² + sd_i²) / 2): separation in pooled standard deviations. */
export function dPrime(genuine: readonly number[], impostor: readonly number[]): number {
  const g = summarize(genuine),
    i = summarize(impostor);
  return Math.abs(g.mean - i.mean) / Math.sqrt((g.sd ** 2 + i.sd ** 2) / 2);
}

/**
 * Rank-1 identification: each probe is correct when its best-scoring gallery entry carries its own
 * label. `scores[p][g]` is the similarity of probe p to gallery entry g; NaN means "not comparable"
 * (e.g. the probe's own source photo) and is skipped; a probe with no finite score is a miss.
 */
export function rank1(
  scores: readonly (readonly number[])[],
  probeLabels: readonly string[],
  galleryLabels: readonly string[],
): { correct: number; total: number } {
  let correct = 0;
  scores.forEach((row, p) => {
    let best = -Infinity,
      bestLabel: string | null = null;
    row.forEach((s, g) => {
      if (Number.isFinite(s) && s > best) {
        best = s;
        bestLabel = galleryLabels[g]!;
      }
    });
    if (bestLabel !== null && bestLabel === probeLabels[p]) correct++;
  });
  return { correct, total: scores.length };
}

export interface OpenSetPoint {
  threshold: number;
  /** Detection and identification rate: mated probes whose own identity scores best and at/above the threshold. */
  dir: number;
  dir_ci95: Interval;
  mated: number;
  /** False positive identification rate: probes of people not in the gallery whose best score reaches the threshold. */
  fpir: number;
  fpir_ci95: Interval;
  non_mated: number;
}

/**
 * Open-set identification (a search against a gallery that does not contain everyone), as ISO/IEC
 * 19795-1 counts it: a mated probe succeeds when its best genuine score beats every impostor and reaches
 * the threshold; a non-mated probe is a false positive when anything reaches it.
 */
export function openSet(
  mated: readonly { bestGenuine: number; bestImpostor: number }[],
  nonMatedBest: readonly number[],
  threshold: number,
): OpenSetPoint {
  const hits = mated.filter((p) => p.bestGenuine >= threshold && p.bestGenuine > p.bestImpostor).length;
  const falsePositives = nonMatedBest.filter((s) => s >= threshold).length;
  return {
    threshold,
    dir: hits / mated.length,
    dir_ci95: clopperPearson(hits, mated.length),
    mated: mated.length,
    fpir: falsePositives / nonMatedBest.length,
    fpir_ci95: clopperPearson(falsePositives, nonMatedBest.length),
    non_mated: nonMatedBest.length,
  };
}
