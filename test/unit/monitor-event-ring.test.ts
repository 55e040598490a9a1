import test from 'ava';
import { EventRing, formatEventPosition, parseEventPosition } from '../../src/monitors/eventRing.js';

const ring = (capacity: number, n: number, epoch = 'e1') => {
  const r = new EventRing<{ sequence: number }>(epoch, capacity);
  for (let i = 0; i < n; i++) r.push((sequence) => ({ sequence }));
  return r;
};
const seqs = (p: { events: { sequence: number }[] }) => p.events.map((e) => e.sequence);

test('no cursor: the newest events; the cursor points at the latest', (t) => {
  const p = ring(10, 15).page(null, 3);
  t.deepEqual(seqs(p), [13, 14, 15]);
  t.like(p, {
    oldest_sequence: 6,
    latest_sequence: 15,
    has_more: false,
    truncated: false,
    stream_reset: false,
    next: { epoch: 'e1', sequence: 15 },
  });
  const empty = ring(10, 0).page(null, 5);
  t.like(empty, { events: [], oldest_sequence: null, latest_sequence: 0, next: { epoch: 'e1', sequence: 0 } });
});

test('a cursor in the same epoch pages forward with has_more, and stays put when nothing is new', (t) => {
  const r = ring(100, 7);
  const a = r.page({ epoch: 'e1', sequence: 2 }, 3);
  t.deepEqual(seqs(a), [3, 4, 5]);
  t.true(a.has_more);
  t.is(a.next.sequence, 5);
  const b = r.page(a.next, 3);
  t.deepEqual(seqs(b), [6, 7]);
  t.false(b.has_more);
  const c = r.page(b.next, 3);
  t.deepEqual(c.events, []);
  t.deepEqual(c.next, { epoch: 'e1', sequence: 7 });
  r.push((sequence) => ({ sequence }));
  t.deepEqual(seqs(r.page(c.next, 3)), [8]);
});

test('truncated when events fell out of the ring before they were read', (t) => {
  const r = ring(5, 12); // holds 8..12
  t.true(r.page({ epoch: 'e1', sequence: 3 }, 10).truncated);
  t.deepEqual(seqs(r.page({ epoch: 'e1', sequence: 3 }, 10)), [8, 9, 10, 11, 12]);
  t.false(r.page({ epoch: 'e1', sequence: 7 }, 10).truncated, 'after = oldest - 1 missed nothing');
});

test('a cursor from another epoch: stream_reset and the newest events', (t) => {
  const p = ring(10, 4, 'e2').page({ epoch: 'e1', sequence: 99 }, 2);
  t.true(p.stream_reset);
  t.deepEqual(seqs(p), [3, 4]);
  t.deepEqual(p.next, { epoch: 'e2', sequence: 4 });
});

test('resize keeps the newest events', (t) => {
  const r = ring(10, 10);
  r.resize(3);
  t.is(r.size, 3);
  t.deepEqual(seqs(r.page(null, 10)), [8, 9, 10]);
  r.resize(20);
  r.push((sequence) => ({ sequence }));
  t.deepEqual(seqs(r.page(null, 10)), [8, 9, 10, 11]);
});

test('cursor payloads: {epoch}:{sequence}, anything else is malformed', (t) => {
  t.deepEqual(parseEventPosition('0b6a-uuid:12'), { epoch: '0b6a-uuid', sequence: 12 });
  t.deepEqual(parseEventPosition('stopped:0'), { epoch: 'stopped', sequence: 0 });
  for (const bad of ['', 'e1', 'e1:', ':3', 'e1:-1', 'e1:1.5', 'e 1:2', 'e1:2:3'])
    t.is(parseEventPosition(bad), null, bad);
  t.is(formatEventPosition({ epoch: 'e', sequence: 4 }), 'e:4');
});
