/**
 * Least-squares growth of samples taken every `everyS` seconds, over their last `windowS` seconds, per ten
 * minutes (in the samples' unit; null when the samples cover less than the window): the goal's "growth
 * after warm-up", less sensitive than the difference of two minutes' averages to the 5-10 MB that the
 * allocator's purging and the frames in flight move RSS by within a minute.
 */
export function growthPer10Min(samples: readonly number[], everyS: number, windowS = 600): number | null {
  const need = Math.floor(windowS / everyS) + 1;
  if (samples.length < Math.max(3, need)) return null;
  const ys = samples.slice(-need);
  const n = ys.length,
    mx = (n - 1) / 2,
    my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0,
    sxx = 0;
  ys.forEach((y, i) => {
    sxy += (i - mx) * (y - my);
    sxx += (i - mx) ** 2;
  });
  return (sxy / sxx / everyS) * 600;
}
