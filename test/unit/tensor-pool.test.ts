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
  t.is(pool.take(12), a, 'a given buffer is taken again');
  t.not(pool.take(12), a, 'and only once, though it was given twice');
  const c = new Float32Array(12);
  pool.give(a);
  pool.give(b);
  pool.give(c);
  t.is(pool.take(12), b, 'the last kept first');
  t.is(pool.take(12), a);
  const fresh = pool.take(12);
  t.true(fresh !== c && fresh !== a && fresh !== b, 'a third of one length was not kept');
  pool.give(a);
  pool.give(new Float32Array(5));
  pool.give(new Float32Array(7));
  t.not(pool.take(12), a, 'the oldest length (12) is dropped when a third length comes');
  t.is(pool.take(5).length, 5);
});
