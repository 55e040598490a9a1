import test from 'ava';
import { CoalescingRun } from '../../src/system/coalescingRun.js';

test('CoalescingRun: one run at a time, requests during a run share one more after it, errors kept', async (t) => {
  let runs = 0;
  let release!: () => void;
  let fail = false;
  const r = new CoalescingRun(async () => {
    runs++;
    await new Promise<void>((resolve) => (release = resolve));
    if (fail) throw new Error('busy');
  });
  const first = r.request();
  const second = r.request();
  const third = r.request();
  t.is(second, third, 'requests during a run share the one after it');
  t.is(runs, 1);
  release();
  await first;
  await Promise.resolve();
  t.is(runs, 2, 'the queued run started when the first ended');
  fail = true;
  release();
  await second;
  t.is((r.lastError as Error).message, 'busy', 'a failed run is kept, not thrown');
  await r.idle();
  t.is(runs, 2);
});
