import test from 'ava';
import { ApiError } from '../../src/contract/errors.js';
import { ConcurrencyLimiter } from '../../src/inference/limiter.js';

const tick = () => new Promise<void>((r) => setImmediate(r));

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

test('constructor rejects capacity below 1', (t) => {
  t.throws(() => new ConcurrencyLimiter(0));
  t.throws(() => new ConcurrencyLimiter(Number.NaN));
  t.notThrows(() => new ConcurrencyLimiter(1));
});

test('capacity is respected under many concurrent run() calls', async (t) => {
  const limiter = new ConcurrencyLimiter(3);
  let active = 0,
    maxActive = 0,
    done = 0;
  const jobs = Array.from({ length: 40 }, (_, i) =>
    limiter.run(async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      t.true(limiter.stats().active <= 3);
      await new Promise((r) => setTimeout(r, i % 3));
      await tick();
      active--;
      done++;
      return i;
    }),
  );
  const results = await Promise.all(jobs);
  t.deepEqual(
    results,
    Array.from({ length: 40 }, (_, i) => i),
  );
  t.is(maxActive, 3);
  t.is(done, 40);
  t.deepEqual(limiter.stats(), { max_concurrency: 3, active: 0, waiting: 0, peak_active: 3 });
});

test('waiters are granted in FIFO order', async (t) => {
  const limiter = new ConcurrencyLimiter(1);
  const gate = deferred();
  const order: number[] = [];
  const first = limiter.run(async () => {
    order.push(0);
    await gate.promise;
  });
  const rest = [1, 2, 3, 4, 5].map((i) =>
    limiter.run(async () => {
      order.push(i);
    }),
  );
  await tick();
  t.deepEqual(order, [0]);
  t.is(limiter.stats().waiting, 5);
  gate.resolve();
  await Promise.all([first, ...rest]);
  t.deepEqual(order, [0, 1, 2, 3, 4, 5]);
});

test('a new caller does not jump the queue while waiters exist', async (t) => {
  const limiter = new ConcurrencyLimiter(1);
  const release = await limiter.acquire();
  const order: string[] = [];
  const waiter = limiter.acquire().then((r) => {
    order.push('waiter');
    r();
  });
  release();
  // A slot is free right now, but the queued waiter must get it before a newcomer.
  const late = limiter.acquire().then((r) => {
    order.push('late');
    r();
  });
  await Promise.all([waiter, late]);
  t.deepEqual(order, ['waiter', 'late']);
});

test('an aborted waiter leaves the queue and rejects with the signal reason', async (t) => {
  const limiter = new ConcurrencyLimiter(1);
  const release = await limiter.acquire();
  const ac = new AbortController();
  const ran: string[] = [];
  const aborted = limiter.run(async () => {
    ran.push('aborted');
  }, ac.signal);
  const other = limiter.run(async () => {
    ran.push('other');
  });
  await tick();
  t.is(limiter.stats().waiting, 2);
  const reason = new Error('client went away');
  ac.abort(reason);
  const err = await t.throwsAsync(aborted);
  t.is(err, reason);
  t.is(limiter.stats().waiting, 1);
  release();
  await other;
  t.deepEqual(ran, ['other']);
  t.deepEqual(limiter.stats(), { max_concurrency: 1, active: 0, waiting: 0, peak_active: 1 });
});

test('an abort with a non-Error reason rejects with ApiError request_timeout', async (t) => {
  const limiter = new ConcurrencyLimiter(1);
  const release = await limiter.acquire();
  const ac = new AbortController();
  const p = limiter.acquire(ac.signal);
  ac.abort('just a string');
  const err = await t.throwsAsync(p);
  t.true(err instanceof ApiError);
  t.is((err as ApiError).code, 'request_timeout');
  t.is((err as ApiError).status, 503);
  release();
  t.is(limiter.stats().active, 0);
});

test('an already-aborted signal rejects immediately without taking a slot', async (t) => {
  const limiter = new ConcurrencyLimiter(2);
  const ac = new AbortController();
  const reason = new Error('deadline');
  ac.abort(reason);
  let ran = false;
  await t.throwsAsync(
    limiter.run(async () => {
      ran = true;
    }, ac.signal),
    { is: reason },
  );
  t.false(ran);
  t.deepEqual(limiter.stats(), { max_concurrency: 2, active: 0, waiting: 0, peak_active: 0 });
});

test('an abort after the slot was granted has no effect on the holder', async (t) => {
  const limiter = new ConcurrencyLimiter(1);
  const release = await limiter.acquire();
  const ac = new AbortController();
  const p = limiter.acquire(ac.signal);
  release();
  const release2 = await p;
  ac.abort(new Error('late'));
  t.is(limiter.stats().active, 1);
  release2();
  t.is(limiter.stats().active, 0);
});

test('stats track active, waiting and peak; release is idempotent; fn errors release the slot', async (t) => {
  const limiter = new ConcurrencyLimiter(2);
  t.deepEqual(limiter.stats(), { max_concurrency: 2, active: 0, waiting: 0, peak_active: 0 });
  const r1 = await limiter.acquire();
  const r2 = await limiter.acquire();
  const third = limiter.acquire();
  await tick();
  t.deepEqual(limiter.stats(), { max_concurrency: 2, active: 2, waiting: 1, peak_active: 2 });
  r1();
  r1(); // double release must not free a second slot
  const r3 = await third;
  t.deepEqual(limiter.stats(), { max_concurrency: 2, active: 2, waiting: 0, peak_active: 2 });
  r2();
  r3();
  t.is(limiter.stats().active, 0);
  await t.throwsAsync(
    limiter.run(async () => {
      throw new Error('boom');
    }),
    { message: 'boom' },
  );
  t.deepEqual(limiter.stats(), { max_concurrency: 2, active: 0, waiting: 0, peak_active: 2 });
});

test('issue 36.1: a priority waiter (a camera frame) is granted before every ordinary waiter (uploads), in FIFO order among priority waiters', async (t) => {
  const limiter = new ConcurrencyLimiter(1);
  const release = await limiter.acquire();
  const order: string[] = [];
  const take = (name: string, priority: boolean) =>
    limiter.run(
      async () => {
        order.push(name);
      },
      undefined,
      { priority },
    );
  const all = [
    take('upload 1', false),
    take('upload 2', false),
    take('camera 1', true),
    take('upload 3', false),
    take('camera 2', true),
  ];
  await tick();
  t.is(limiter.stats().waiting, 5);
  release();
  await Promise.all(all);
  t.deepEqual(order, ['camera 1', 'camera 2', 'upload 1', 'upload 2', 'upload 3']);
});
