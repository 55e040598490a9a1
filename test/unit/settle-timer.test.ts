import test from 'ava';
import { SettleTimer, settleWait } from '../../src/search/settleTimer.js';

test('settleWait: quiet after the last change, but never later than the longest deferral after the first', (t) => {
  t.is(settleWait({ since: 0, lastChange: 0 }, 0, 3000, 600_000), 3000);
  t.is(settleWait({ since: 0, lastChange: 2000 }, 2500, 3000, 600_000), 2500, 'a later change pushes it back');
  t.is(settleWait({ since: 0, lastChange: 5000 }, 8000, 3000, 600_000), 0, 'quiet long enough: now');
  t.is(settleWait({ since: 0, lastChange: 599_000 }, 599_500, 3000, 600_000), 500, 'capped by the deferral');
});

/** A hand-driven clock: timers fire when advance() passes their time. */
function manualClock() {
  let now = 0;
  const timers: { at: number; fn: () => void }[] = [];
  return {
    now: () => now,
    after: (ms: number, fn: () => void) => void timers.push({ at: now + ms, fn }),
    advance(ms: number) {
      const until = now + ms;
      for (;;) {
        timers.sort((a, b) => a.at - b.at);
        const next = timers[0];
        if (!next || next.at > until) break;
        timers.shift();
        now = next.at;
        next.fn();
      }
      now = until;
    },
  };
}

test('SettleTimer starts once per run of changes, after they stop, and not while busy or when gone', (t) => {
  const clock = manualClock();
  let starts = 0;
  let busy = false;
  let live = true;
  const timer = new SettleTimer({
    quietMs: 3000,
    maxDeferMs: 600_000,
    start: () => starts++,
    live: () => live,
    busy: () => busy,
    now: clock.now,
    after: clock.after,
  });
  for (let i = 0; i < 5; i++) {
    timer.touch();
    clock.advance(1000);
  }
  t.is(starts, 0, 'a change every second keeps it waiting');
  t.true(timer.pending);
  clock.advance(2000);
  t.is(starts, 1, 'one start for the five changes, 3 s after the last');
  t.false(timer.pending);

  busy = true;
  timer.touch();
  clock.advance(10_000);
  t.is(starts, 1, 'busy: waits');
  busy = false;
  clock.advance(500);
  t.is(starts, 2);

  for (let i = 0; i < 700; i++) {
    timer.touch();
    clock.advance(1000);
  }
  t.is(starts, 3, 'changes that never stop still get it after the longest deferral');

  timer.touch();
  live = false;
  clock.advance(5000);
  t.is(starts, 3, 'dropped when what it was for is gone');
  t.false(timer.pending);
});
