import test from 'ava';
import {
  decideIdentity,
  poolTemplate,
  qualityWeight,
  runnerUp,
  TrackFrameBank,
} from '../../src/monitors/trackIdentity.js';

const unit = (...v: number[]) => {
  const n = Math.hypot(...v);
  return Float32Array.from(v.map((x) => x / n));
};
const close = (a: ArrayLike<number>, b: ArrayLike<number>, eps = 1e-6) =>
  a.length === b.length && Array.from(a).every((x, i) => Math.abs(x - b[i]!) < eps);

test('the bank keeps the best frames by quality, best first, and makes crops only for kept frames', (t) => {
  const bank = new TrackFrameBank<string>(3);
  const crops: number[] = [];
  const offer = (q: number, at: number) =>
    bank.offer({ embedding: unit(1, 0), quality: q, at }, () => {
      crops.push(at);
      return `crop${at}`;
    });
  t.true(offer(0.5, 1));
  t.true(offer(0.2, 2));
  t.true(offer(0.9, 3));
  t.false(offer(0.1, 4), 'worse than every kept frame of a full bank');
  t.true(offer(0.6, 5));
  t.deepEqual(
    bank.frames.map((f) => f.quality),
    [0.9, 0.6, 0.5],
  );
  t.deepEqual(crops, [1, 2, 3, 5], 'frame 4 was never cropped');
  t.is(bank.frames[0]!.crop, 'crop3');
  t.is(bank.seen, 5);
  t.is(bank.bestQuality, 0.9);
  t.true(bank.wouldKeep(0.5), 'a tie with the worst kept frame is kept (the newer frame)');
  t.false(bank.wouldKeep(0.49));
});

test('pooling: the quality-weighted mean of unit embeddings, renormalised', (t) => {
  const a = unit(1, 0, 0),
    b = unit(0, 1, 0);
  t.true(close(poolTemplate([{ embedding: a, quality: 0.5 }]), a), 'one frame is its own template');
  t.true(
    close(
      poolTemplate([
        { embedding: a, quality: 0.5 },
        { embedding: b, quality: 0.5 },
      ]),
      unit(1, 1, 0),
    ),
  );
  // Weights 0.75 and 0.25: the direction (3, 1) renormalised.
  t.true(
    close(
      poolTemplate([
        { embedding: a, quality: 0.75 },
        { embedding: b, quality: 0.25 },
      ]),
      unit(3, 1, 0),
    ),
  );
  t.true(
    close(
      poolTemplate(
        [
          { embedding: a, quality: 0.75 },
          { embedding: b, quality: 0.25 },
        ],
        () => 1,
      ),
      unit(1, 1, 0),
    ),
    'plain mean',
  );
  const pooled = poolTemplate([
    { embedding: unit(1, 2, 3), quality: 0.3 },
    { embedding: unit(3, -1, 2), quality: 0.8 },
  ]);
  t.true(Math.abs(Math.hypot(...pooled) - 1) < 1e-6, 'unit length');
  t.true(
    close(
      poolTemplate([
        { embedding: a, quality: 1 },
        { embedding: unit(-1, 0, 0), quality: 1 },
      ]),
      a,
    ),
    'cancelled: the first frame',
  );
  t.throws(() => poolTemplate([]));
});

test('noise that differs between frames cancels in the template', (t) => {
  // A person's direction plus independent noise per frame: the template is closer to it than the frames are.
  const dim = 64;
  const person = unit(...Array.from({ length: dim }, (_, i) => Math.sin(i + 1)));
  let seed = 7;
  const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
  const frames = Array.from({ length: 8 }, () => ({
    embedding: unit(...Array.from(person, (v) => v + 0.25 * rnd())),
    quality: 0.6,
  }));
  const cos = (x: Float32Array) => x.reduce((s, v, i) => s + v * person[i]!, 0);
  const pooled = cos(poolTemplate(frames));
  t.true(
    frames.every((f) => pooled > cos(f.embedding)),
    `template ${pooled}`,
  );
});

test('quality weights are floored and finite', (t) => {
  t.is(qualityWeight(0.8), 0.8);
  t.is(qualityWeight(0), 0.05);
  t.is(qualityWeight(Number.NaN), 0.05);
});

test('identity decisions: the first takes the threshold, later ones need the hysteresis to change', (t) => {
  const thr = 0.4,
    h = 0.03;
  const r = (...xs: [string, number][]) => xs.map(([personId, similarity]) => ({ personId, similarity }));
  // First decision.
  t.is(decideIdentity(undefined, r(['ann', 0.41]), thr, h), 'ann');
  t.is(decideIdentity(undefined, r(['ann', 0.39]), thr, h), null);
  t.is(decideIdentity(undefined, [], thr, h), null);
  // Unknown -> person only clearly above the threshold.
  t.is(decideIdentity(null, r(['ann', 0.42]), thr, h), null);
  t.is(decideIdentity(null, r(['ann', 0.431]), thr, h), 'ann');
  // A person stays while within the hysteresis below the threshold.
  t.is(decideIdentity('ann', r(['ann', 0.38]), thr, h), 'ann');
  t.is(decideIdentity('ann', r(['ann', 0.369]), thr, h), null);
  t.is(decideIdentity('ann', r(['bob', 0.2]), thr, h), null, 'ann not ranked at all: below');
  // Another person must beat the current one by the hysteresis.
  t.is(decideIdentity('ann', r(['bob', 0.5], ['ann', 0.48]), thr, h), 'ann');
  t.is(decideIdentity('ann', r(['bob', 0.52], ['ann', 0.48]), thr, h), 'bob');
  // The current person fell away and another reaches the threshold: that one.
  t.is(decideIdentity('ann', r(['bob', 0.41], ['ann', 0.3]), thr, h), 'bob');
});

test('a template hovering at the threshold does not flap', (t) => {
  const thr = 0.4,
    h = 0.03;
  let current: string | null | undefined;
  const changes: (string | null)[] = [];
  for (const s of [0.405, 0.395, 0.41, 0.385, 0.402, 0.398, 0.39, 0.404]) {
    const next = decideIdentity(current, [{ personId: 'ann', similarity: s }], thr, h);
    if (next !== current) changes.push(next);
    current = next;
  }
  t.deepEqual(changes, ['ann'], 'decided once, never dropped inside the band');
});

test('the runner-up margin of a decision', (t) => {
  const ranked = [
    { personId: 'ann', similarity: 0.6 },
    { personId: 'bob', similarity: 0.35 },
  ];
  t.deepEqual(runnerUp('ann', ranked), { runnerUp: ranked[1]!, margin: 0.25 });
  t.deepEqual(runnerUp('ann', ranked.slice(0, 1)), { runnerUp: null, margin: null });
  t.deepEqual(runnerUp(null, ranked), { runnerUp: ranked[0]!, margin: null });
});
