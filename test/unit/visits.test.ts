import test from 'ava';
import type { HistoryEventT } from '../../src/contract/events.js';
import { camerasOf, visitsOf } from '../../src/events/visits.js';

let n = 0;
const ev = (
  type: string,
  at: string,
  o: { track?: string; monitor?: string; zones?: string[]; zone?: string; epoch?: string } = {},
): HistoryEventT =>
  ({
    id: `e${++n}`,
    box_id: 'box',
    type,
    monitor_id: o.monitor ?? 'door',
    stream_epoch: o.epoch ?? 'ep',
    sequence: n,
    track_id: o.track ?? 't1',
    occurred_at: `2026-01-01T10:00:${at}Z`,
    zones: o.zones ?? [],
    zone: o.zone ?? null,
  }) as unknown as HistoryEventT;

test('an enter and the next exit of its track are one visit, with the zones seen between them', (t) => {
  const events = [
    ev('person_enter', '00', { zones: ['porch'] }),
    ev('zone_enter', '01', { zone: 'hall' }),
    ev('person_exit', '05', { zones: ['porch', 'hall'] }),
    ev('person_enter', '10', { track: 't2', monitor: 'yard' }),
  ].reverse(); // newest first, as the history lists them
  const visits = visitsOf(events);
  t.is(visits.length, 2);
  t.like(visits[0], { monitor_id: 'yard', exited_at: null, seconds: null, enter_event_id: 'e4' });
  t.like(visits[1], { monitor_id: 'door', seconds: 5, enter_event_id: 'e1', exit_event_id: 'e3' });
  t.deepEqual(visits[1]!.zones, ['hall', 'porch']);
});

test('an exit whose enter is gone makes no visit; a track entering twice makes two visits', (t) => {
  t.deepEqual(visitsOf([ev('person_exit', '05')]), []);
  const twice = visitsOf([
    ev('unknown_enter', '00'),
    ev('unknown_exit', '02'),
    ev('unknown_enter', '04'),
    ev('unknown_exit', '06'),
  ]);
  t.is(twice.length, 2);
  t.true(twice.every((v) => v.seconds === 2));
  // The same track id in another stream epoch (a restarted monitor) is another track.
  t.is(visitsOf([ev('person_enter', '00'), ev('person_enter', '01', { epoch: 'ep2' })]).length, 2);
});

test('cameras: visits, first and last seen and zones per camera, the most recently seen first', (t) => {
  const cams = camerasOf(
    visitsOf([
      ev('person_enter', '00', { zones: ['porch'] }),
      ev('person_exit', '03'),
      ev('person_enter', '20', { track: 't2' }),
      ev('person_exit', '30', { track: 't2', zones: ['hall'] }),
      ev('person_enter', '10', { track: 't3', monitor: 'yard' }),
    ]),
  );
  t.deepEqual(
    cams.map((c) => [c.monitor_id, c.visits, c.first_seen_at.slice(-3), c.last_seen_at.slice(-3), c.zones]),
    [
      ['door', 2, '00Z', '30Z', ['hall', 'porch']],
      ['yard', 1, '10Z', '10Z', []],
    ],
  );
});
