import test from 'ava';
import {
  clopperPearson,
  dPrime,
  histogram,
  logGamma,
  minImpostorsFor,
  openSet,
  operatingPoint,
  quantile,
  rank1,
  regularizedBeta,
  rocAuc,
  summarize,
  tarAtFar,
  thresholdAbove,
  wilson,
} from '../../bench/quality/metrics.js';

const close = (t: import('ava').ExecutionContext, got: number, want: number, eps = 1e-6, what = '') =>
  t.true(Math.abs(got - want) < eps, `${what} ${got} vs ${want}`);

test('logGamma matches factorials and Γ(1/2) = √π', (t) => {
  close(t, logGamma(5), Math.log(24), 1e-12);
  close(t, logGamma(11), Math.log(3628800), 1e-10);
  close(t, logGamma(0.5), 0.5 * Math.log(Math.PI), 1e-12);
});

test('regularizedBeta equals the binomial sum it stands for', (t) => {
  // I_x(a, n-a+1) = P(Binomial(n, x) >= a): for x = 0.5, a = 2, n = 4: (6 + 4 + 1) / 16.
  close(t, regularizedBeta(0.5, 2, 3), 11 / 16, 1e-12);
  close(t, regularizedBeta(0.3, 1, 1), 0.3, 1e-12); // uniform
  close(t, regularizedBeta(0.9, 3, 1), 0.729, 1e-12); // x^a when b = 1
  t.is(regularizedBeta(0, 2, 2), 0);
  t.is(regularizedBeta(1, 2, 2), 1);
});

test('Clopper-Pearson: closed forms at k = 0 and k = n, and the textbook 5/10 interval', (t) => {
  const none = clopperPearson(0, 10);
  t.is(none.low, 0);
  close(t, none.high, 1 - 0.025 ** (1 / 10), 1e-9, 'upper at k=0');
  const all = clopperPearson(52, 52);
  close(t, all.low, 0.025 ** (1 / 52), 1e-9, 'lower at k=n');
  t.is(all.high, 1);
  const half = clopperPearson(5, 10);
  close(t, half.low, 0.187086, 1e-6, 'low');
  close(t, half.high, 0.812914, 1e-6, 'high');
  t.throws(() => clopperPearson(3, 2));
});

test('Clopper-Pearson is wider than Wilson (it is conservative) and both contain the estimate', (t) => {
  for (const [k, n] of [
    [1, 20],
    [17, 20],
    [96, 104],
    [3, 1876],
  ] as const) {
    const cp = clopperPearson(k, n),
      w = wilson(k, n);
    t.true(cp.high - cp.low > w.high - w.low, `${k}/${n}: CP ${JSON.stringify(cp)} Wilson ${JSON.stringify(w)}`);
    t.true(w.low <= k / n && k / n <= w.high);
    t.true(cp.low <= k / n && k / n <= cp.high);
  }
  close(t, wilson(5, 10).low, 0.236593, 1e-6);
});

test('ROC AUC: perfect, reversed, ties and a small worked example', (t) => {
  t.is(rocAuc([0.9, 0.8], [0.1, 0.2]), 1);
  t.is(rocAuc([0.1, 0.2], [0.9, 0.8]), 0);
  t.is(rocAuc([0.5, 0.5], [0.5]), 0.5);
  // 0.9 beats both impostors, 0.5 beats 0.1 only: 3 of 4 pairs.
  t.is(rocAuc([0.9, 0.5], [0.6, 0.1]), 0.75);
  // A tie counts half: (0.5 + 1) / 2.
  t.is(rocAuc([0.5], [0.5, 0.2]), 0.75);
  t.true(Number.isNaN(rocAuc([], [0.1])));
});

test('thresholdAbove gives the smallest 4-decimal value strictly above the score', (t) => {
  close(t, thresholdAbove(0.3999999), 0.4, 1e-12);
  close(t, thresholdAbove(0.4), 0.4001, 1e-12);
  close(t, thresholdAbove(-0.25), -0.2499, 1e-12);
  for (const v of [0.123456, 0.9, 0.35, 0.4381]) t.true(thresholdAbove(v) > v);
});

test('TAR at FAR allows floor(FAR x impostors) false accepts and no more', (t) => {
  const impostor = Array.from({ length: 1000 }, (_, i) => i / 1000); // 0.000 .. 0.999
  const genuine = [0.995, 0.98, 0.5];
  const p = tarAtFar(genuine, impostor, 1e-2);
  t.is(p.false_accepts, 10, 'scores 0.990 .. 0.999');
  close(t, p.threshold, 0.9891, 1e-12);
  t.is(p.true_accepts, 1);
  close(t, p.tar, 1 / 3, 1e-12);
  t.true(p.supported);
  t.deepEqual(p.tar_ci95, clopperPearson(1, 3));
  const strict = tarAtFar(genuine, impostor, 1e-3);
  t.false(strict.supported, '1000 impostors cannot measure FAR 1e-3');
  t.is(strict.false_accepts, 1);
  t.is(minImpostorsFor(1e-3), 3000);
});

test('TAR at FAR never splits tied impostor scores above the allowance', (t) => {
  const impostor = [0.5, 0.5, 0.5, ...new Array(97).fill(0.1)];
  const p = tarAtFar([0.6, 0.5], impostor, 1e-2);
  t.is(p.false_accepts, 0, 'accepting one 0.5 would accept all three');
  t.true(p.threshold > 0.5);
  t.is(p.true_accepts, 1);
});

test('operatingPoint is inclusive at the threshold, as the service matches', (t) => {
  const p = operatingPoint([0.4, 0.39], [0.4, 0.1], 0.4);
  t.is(p.true_accepts, 1);
  t.is(p.false_accepts, 1);
  close(t, p.far_upper95, clopperPearson(1, 2).high, 1e-12);
});

test('rank1 skips non-comparable entries and counts a probe with none as a miss', (t) => {
  const gallery = ['a', 'b', 'a'];
  const scores = [
    [NaN, 0.2, 0.9], // probe a: best is gallery 2 (a) -> correct
    [0.1, NaN, 0.3], // probe b: best is gallery 2 (a) -> wrong
    [NaN, NaN, NaN], // nothing comparable -> miss
  ];
  t.deepEqual(rank1(scores, ['a', 'b', 'a'], gallery), { correct: 1, total: 3 });
});

test('summary statistics, quantiles, histogram and d-prime', (t) => {
  t.is(quantile([1, 2, 3, 4], 0.5), 2.5);
  const s = summarize([4, 1, 3, 2]);
  t.like(s, { n: 4, mean: 2.5, min: 1, max: 4, p50: 2.5 });
  close(t, s.sd, Math.sqrt(5 / 3), 1e-12);
  t.deepEqual(histogram([-5, 0, 0.49, 0.5, 0.99, 7], 0, 1, 2), [3, 3]);
  close(t, dPrime([1, 3], [-1, 1]), 2 / Math.sqrt(2), 1e-12);
});

test('openSet: a mated hit needs the right identity on top and the threshold; non-mated probes count at the threshold', (t) => {
  const mated = [
    { bestGenuine: 0.6, bestImpostor: 0.2 }, // hit
    { bestGenuine: 0.6, bestImpostor: 0.7 }, // someone else ranks first: miss
    { bestGenuine: 0.3, bestImpostor: 0.1 }, // below the threshold: miss
    { bestGenuine: 0.4, bestImpostor: 0.1 }, // exactly at it: hit (inclusive)
  ];
  const p = openSet(mated, [0.39, 0.4, 0.1], 0.4);
  t.is(p.dir, 0.5);
  t.deepEqual(p.dir_ci95, clopperPearson(2, 4));
  t.is(p.fpir, 1 / 3);
  t.like(p, { mated: 4, non_mated: 3 });
});
