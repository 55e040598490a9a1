import test from 'ava';
import { OTHER_ADDRESSES, RefusalLog } from '../../src/http/refusalLog.js';

// Issue 36.1: a flood of refused keys wrote one log line per 429. The first refusal of an address in an
// interval keeps its line; the rest become one line per address with their count.
test('the first refusal of an address in an interval is logged, the rest are counted and reported once per address', async (t) => {
  const reported: [string, number, number][] = [];
  const log = new RefusalLog((a, n, s) => reported.push([a, n, s]), 50);
  const lines = Array.from({ length: 1000 }, (_, i) => log.note(i % 2 ? '10.0.0.1' : '10.0.0.2')).filter(Boolean);
  t.is(lines.length, 2, 'one line each for the two addresses');
  t.true(log.note('10.0.0.3'));
  await new Promise((r) => setTimeout(r, 120));
  t.deepEqual(
    reported.sort((a, b) => a[0].localeCompare(b[0])),
    [
      ['10.0.0.1', 499, 0.05],
      ['10.0.0.2', 499, 0.05],
    ],
    'an address refused once has nothing more to report',
  );
  t.true(log.note('10.0.0.1'), 'a new interval logs the first refusal again');
  log.flush();
});

test('past maxAddresses in one interval, other addresses are counted together and never logged one by one', (t) => {
  const reported: [string, number][] = [];
  const log = new RefusalLog((a, n) => reported.push([a, n]), 60_000, 3);
  t.deepEqual(
    ['a', 'b', 'c', 'd', 'e', 'a'].map((a) => log.note(a)),
    [true, true, true, false, false, false],
  );
  log.flush();
  t.deepEqual(reported, [
    ['a', 1],
    [OTHER_ADDRESSES, 2],
  ]);
});
