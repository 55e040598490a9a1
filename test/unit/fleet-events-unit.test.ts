import test from 'ava';
import { filterSql } from '../../src/events/historyStore.js';
import { formatPosition, parsePosition } from '../../src/events/pgHistory.js';

test('the box_id filter in SQLite and PostgreSQL, with the other filters', (t) => {
  t.deepEqual(filterSql({ box_id: 'door-1', monitor_id: 'm' }), {
    where: 'box_id = ? AND monitor_id = ?',
    params: ['door-1', 'm'],
  });
  t.deepEqual(filterSql({ box_id: 'door-1', types: ['person_enter', 'person_exit'], since_ms: 5 }, 'postgres'), {
    where: 'box_id = $1 AND type = ANY($2) AND occurred_ms >= $3',
    params: ['door-1', ['person_enter', 'person_exit'], 5],
  });
  t.deepEqual(filterSql({}, 'postgres'), { where: 'true', params: [] });
  t.deepEqual(filterSql({ unknown_only: true, types: ['person_enter'] }, 'postgres'), { where: 'false', params: [] });
  t.deepEqual(filterSql({ person_id: 'p' }, 'postgres', 3), { where: 'person_id = $3', params: ['p'] });
});

test('fleet cursor positions round-trip and reject anything else', (t) => {
  const p = { ms: 1764072000123, id: '0b6f7a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b' };
  t.deepEqual(parsePosition(formatPosition(p)), p);
  t.is(parsePosition('12'), null);
  t.is(parsePosition(`x:${p.id}`), null);
  t.is(parsePosition(`1:${p.id}; DROP TABLE events`), null);
});
