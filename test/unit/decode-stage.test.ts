import test from 'ava';
import sharp from 'sharp';
import { oneBitPng } from '../helpers/shared.js';
import { DecodeStage } from '../../src/inference/decodeStage.js';
import { resolveThreading } from '../../src/inference/engine.js';

const LIMITS = { maxBytes: 1e8, maxPixels: 4e7 };
const LIFTED = { timeoutMs: 2000, maxSide: 1e9, maxAspectRatio: 1e9 };

test('a queued decode whose request is aborted never starts; a running one releases its caller and then its slot', async (t) => {
  const stage = new DecodeStage({ ...LIFTED, concurrency: 1 });
  const slow = new AbortController();
  const running = stage.decode(oneBitPng(1, 39_000_000), LIMITS, slow.signal);
  const queuedAbort = new AbortController();
  const queued = stage.decode(
    await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
      .png()
      .toBuffer(),
    LIMITS,
    queuedAbort.signal,
  );
  t.like(stage.stats(), { decoding: 1, decode_waiting: 1 });
  queuedAbort.abort(new Error('client gone'));
  await t.throwsAsync(queued, { message: 'client gone' });
  t.like(stage.stats(), { decoding: 1, decode_waiting: 0 });
  slow.abort(new Error('deadline'));
  await t.throwsAsync(running, { message: 'deadline' });
  t.like(stage.stats(), { decodes_abandoned: 1 });
  // The abandoned decode holds its slot until sharp's timeout stops it; then the stage is free again.
  const next = await stage.decode(
    await sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } })
      .png()
      .toBuffer(),
    LIMITS,
  );
  t.is(next.width, 8);
  t.like(stage.stats(), { decoding: 0, decodes_timed_out: 1 });
});

test('threading auto: on the CPU provider one single-threaded worker per core holding two jobs, and two-thread sessions for a lone job; other providers a worker more, one job each; explicit values win', (t) => {
  t.deepEqual(resolveThreading('auto', 'auto', 1), {
    workers: 1,
    intraOpThreads: 1,
    aloneIntraOpThreads: null,
    jobsPerWorker: 1,
  });
  t.deepEqual(resolveThreading('auto', 'auto', 2), {
    workers: 2,
    intraOpThreads: 1,
    aloneIntraOpThreads: 2,
    jobsPerWorker: 2,
  });
  t.deepEqual(resolveThreading('auto', 'auto', 4), {
    workers: 4,
    intraOpThreads: 1,
    aloneIntraOpThreads: 2,
    jobsPerWorker: 2,
  });
  t.deepEqual(resolveThreading('auto', 'auto', 2, false), {
    workers: 3,
    intraOpThreads: 1,
    aloneIntraOpThreads: null,
    jobsPerWorker: 1,
  });
  t.deepEqual(resolveThreading('auto', 2, 4), {
    workers: 2,
    intraOpThreads: 2,
    aloneIntraOpThreads: null,
    jobsPerWorker: 2,
  });
  t.deepEqual(resolveThreading(1, 'auto', 2), {
    workers: 1,
    intraOpThreads: 2,
    aloneIntraOpThreads: null,
    jobsPerWorker: 1,
  });
  t.deepEqual(resolveThreading(2, 'auto', 2), {
    workers: 2,
    intraOpThreads: 1,
    aloneIntraOpThreads: 2,
    jobsPerWorker: 1,
  });
  t.deepEqual(resolveThreading(3, 1, 2), {
    workers: 3,
    intraOpThreads: 1,
    aloneIntraOpThreads: null,
    jobsPerWorker: 1,
  });
  // One worker holding two jobs shares the cores with its own second job: one thread per job, two for a lone one.
  t.deepEqual(resolveThreading(1, 'auto', 2, true, 2), {
    workers: 1,
    intraOpThreads: 1,
    aloneIntraOpThreads: 2,
    jobsPerWorker: 2,
  });
  t.deepEqual(resolveThreading('auto', 'auto', 2, true, 1), {
    workers: 2,
    intraOpThreads: 1,
    aloneIntraOpThreads: 2,
    jobsPerWorker: 1,
  });
});
