import test from 'ava';
import { growthPer10Min } from '../../bench/memoryTrend.js';

test('growthPer10Min: the least-squares slope over the last window, per ten minutes', (t) => {
  // 1 MB per minute, sampled every 5 s for 30 minutes: 10 MB per ten minutes whatever the window.
  const steady = Array.from({ length: 361 }, (_, i) => 600 + i / 12);
  t.true(Math.abs(growthPer10Min(steady, 5)! - 10) < 1e-9);
  // Warm-up then flat: only the last ten minutes count.
  const warm = Array.from({ length: 361 }, (_, i) => (i < 240 ? 600 + i / 6 : 640));
  t.true(Math.abs(growthPer10Min(warm, 5)!) < 1e-9);
  t.true(growthPer10Min(warm, 5, 1800)! > 10);
  // Noise that alternates around a flat line does not read as growth.
  const noisy = Array.from({ length: 121 }, (_, i) => 630 + (i % 2 ? 8 : -8));
  t.true(Math.abs(growthPer10Min(noisy, 5)!) < 0.2);
  t.is(growthPer10Min(steady.slice(0, 100), 5), null, 'a run shorter than the window has no such growth');
  t.true(Math.abs(growthPer10Min(steady.slice(0, 100), 5, 300)! - 10) < 1e-9);
});
