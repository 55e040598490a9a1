import test from 'ava';
import { TensorPool } from '../../src/inference/pipeline.js';

test('a tensor pool hands back a buffer of the asked length, keeps at most perLength per length and the newest lengths', (t) => {
  const pool = new TensorPool(2, 2);
  const a = pool.take(12);
  const b = pool.take(12);
  t.not(a, b, 'two takes without a give are two buffers');
  t.is(a.length, 12);
  pool.give(a);
  pool.give(a);
  t.is(pool.held(), 1, 'the same buffer is kept once');
  t.is(pool.take(12), a, 'a given buffer is taken again');
  t.not(pool.take(12), a, 'and only once');
  pool.give(a);
  pool.give(b);
  pool.give(new Float32Array(12));
  t.is(pool.held(), 2, 'at most two of one length');
  pool.give(new Float32Array(5));
  pool.give(new Float32Array(7));
  t.is(pool.held(), 2, 'the oldest length (12) is dropped when a third one comes');
  t.not(pool.take(12), a);
  t.is(pool.take(5).length, 5);
});
