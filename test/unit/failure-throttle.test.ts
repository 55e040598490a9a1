import test from 'ava';
import { FailureThrottle } from '../../src/auth/failureThrottle.js';

test('an address past its failure budget is blocked until its window ends; others are not', (t) => {
  let now = 1_000_000;
  const th = new FailureThrottle({ maxFailures: 3, windowMs: 60_000, now: () => now });
  for (let i = 0; i < 3; i++) {
    t.is(th.blockedFor('10.0.0.1'), 0);
    th.failed('10.0.0.1');
  }
  t.is(th.blockedFor('10.0.0.1'), 60);
  t.is(th.blockedFor('10.0.0.2'), 0);
  now += 59_001;
  t.is(th.blockedFor('10.0.0.1'), 1);
  now += 1_000;
  t.is(th.blockedFor('10.0.0.1'), 0);
  th.failed('10.0.0.1');
  t.is(th.blockedFor('10.0.0.1'), 0, 'a new window starts from zero');
});

test('a success clears the address; the table is bounded', (t) => {
  const th = new FailureThrottle({ maxFailures: 1, windowMs: 60_000, maxAddresses: 100 });
  th.failed('a');
  t.true(th.blockedFor('a') > 0);
  th.succeeded('a');
  t.is(th.blockedFor('a'), 0);
  for (let i = 0; i < 1000; i++) th.failed(`addr-${i}`);
  t.is(th.blockedFor('addr-0'), 0, 'the oldest entries were dropped');
  t.true(th.blockedFor('addr-999') > 0);
});
