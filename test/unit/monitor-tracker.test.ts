import test from 'ava';
import { iou, Tracker, type Detection, type FaceKind } from '../../src/monitors/tracker.js';

const policy = { confirm_frames: 3, absence_timeout_seconds: 1, cooldown_seconds: 10, emit_unknown: true };
const det = (kind: FaceKind, personId: string | null, x = 0.1, y = 0.1): Detection<string> => ({
  box: [x, y, 0.2, 0.2],
  kind,
  personId,
  payload: `${kind}:${personId}`,
});
const types = (events: { type: string; personId: string | null }[]) =>
  events.map((e) => `${e.type}:${e.personId ?? '-'}`);

/** Feeds one detection list per step (100 ms apart) and collects every event. */
function run(tracker: Tracker<string>, frames: Detection<string>[][], start = 0, step = 100) {
  const out: { type: string; personId: string | null; trackId: string }[] = [];
  frames.forEach((f, i) => out.push(...tracker.update(f, start + i * step).events));
  return out;
}

test('iou of normalised boxes', (t) => {
  t.is(iou([0, 0, 1, 1], [0, 0, 1, 1]), 1);
  t.is(iou([0, 0, 1, 1], [2, 2, 1, 1]), 0);
  t.true(Math.abs(iou([0, 0, 2, 1], [1, 0, 2, 1]) - 1 / 3) < 1e-12);
});

test('an identity is confirmed after confirm_frames and exits after the absence timeout', (t) => {
  const tr = new Tracker<string>(policy);
  t.deepEqual(types(run(tr, [[det('matched', 'ann')], [det('matched', 'ann')]])), []);
  const enter = tr.update([det('matched', 'ann')], 200).events;
  t.deepEqual(types(enter), ['person_enter:ann']);
  t.deepEqual(tr.expire(1100), [], 'still inside the timeout');
  const exit = tr.expire(1200);
  t.deepEqual(types(exit), ['person_exit:ann']);
  t.is(exit[0]!.trackId, enter[0]!.trackId);
  t.is(tr.size, 0);
});

test('faces follow their track by IoU; a far face is a new track', (t) => {
  const tr = new Tracker<string>({ ...policy, confirm_frames: 1 });
  const a = tr.update([det('matched', 'ann', 0.1, 0.1)], 0);
  const b = tr.update([det('matched', 'ann', 0.12, 0.1), det('unknown', null, 0.7, 0.7)], 100);
  t.is(b.trackIds[0], a.trackIds[0]);
  t.not(b.trackIds[1], a.trackIds[0]);
  t.deepEqual(types(b.events), ['unknown_enter:-']);
});

test('a face never joins a track of another person', (t) => {
  const tr = new Tracker<string>({ ...policy, confirm_frames: 1 });
  const a = tr.update([det('matched', 'ann')], 0);
  const b = tr.update([det('matched', 'bob')], 100);
  t.not(b.trackIds[0], a.trackIds[0]);
  t.deepEqual(types(b.events), ['person_enter:bob']);
});

test('unknown turning into a person: the confirmed unknown exits, the person confirms from scratch', (t) => {
  const tr = new Tracker<string>(policy);
  const ev = run(tr, [
    [det('unknown', null)],
    [det('unknown', null)],
    [det('unknown', null)],
    [det('matched', 'ann')],
    [det('matched', 'ann')],
    [det('matched', 'ann')],
  ]);
  t.deepEqual(types(ev), ['unknown_enter:-', 'unknown_exit:-', 'person_enter:ann']);
});

test('emit_unknown=false tracks unknown faces silently', (t) => {
  const tr = new Tracker<string>({ ...policy, emit_unknown: false, confirm_frames: 1 });
  t.deepEqual(run(tr, [[det('unknown', null)], [det('unknown', null)]]), []);
  t.deepEqual(tr.expire(5000), []);
});

test('cooldown swallows a re-enter (and its exit) of the same person; another person is not affected', (t) => {
  const tr = new Tracker<string>({ ...policy, confirm_frames: 1, cooldown_seconds: 10 });
  t.deepEqual(types(tr.update([det('matched', 'ann')], 0).events), ['person_enter:ann']);
  t.deepEqual(types(tr.expire(2000)), ['person_exit:ann']);
  t.deepEqual(types(tr.update([det('matched', 'ann'), det('matched', 'bob', 0.6, 0.6)], 3000).events), [
    'person_enter:bob',
  ]);
  t.deepEqual(types(tr.expire(5000)), ['person_exit:bob'], 'the swallowed enter has no exit');
  t.deepEqual(types(tr.update([det('matched', 'ann')], 11_000).events), ['person_enter:ann'], 'after the cooldown');
});

test('liveness-blocked faces never confirm and restart confirmation', (t) => {
  const tr = new Tracker<string>({ ...policy, confirm_frames: 2 });
  const ev = run(tr, [
    [det('matched', 'ann')],
    [det('liveness_blocked', null)],
    [det('liveness_blocked', null)],
    [det('matched', 'ann')],
  ]);
  t.deepEqual(types(ev), []);
  t.deepEqual(types(tr.update([det('matched', 'ann')], 400).events), ['person_enter:ann']);
});

test('missed frames inside the timeout keep the track; a gap longer than it splits', (t) => {
  const tr = new Tracker<string>({ ...policy, confirm_frames: 2, absence_timeout_seconds: 1 });
  const a = tr.update([det('matched', 'ann')], 0);
  const b = tr.update([det('matched', 'ann')], 900);
  t.is(b.trackIds[0], a.trackIds[0]);
  t.deepEqual(types(b.events), ['person_enter:ann']);
  const c = tr.update([det('matched', 'ann')], 2000);
  t.not(c.trackIds[0], a.trackIds[0]);
  t.deepEqual(types(c.events), ['person_exit:ann']);
});

test('end() closes every announced track with the reason given; ordinary exits say why they happened', (t) => {
  const tr = new Tracker<string>({ ...policy, confirm_frames: 1 });
  tr.update([det('matched', 'ann', 0.1, 0.1), det('unknown', null, 0.7, 0.7)], 0);
  tr.update([det('matched', 'bob', 0.4, 0.4)], 100); // not yet the absence timeout: three open tracks
  const ended = tr.end('monitor_disabled');
  t.deepEqual(types(ended).sort(), ['person_exit:ann', 'person_exit:bob', 'unknown_exit:-']);
  t.true(ended.every((e) => e.reason === 'monitor_disabled'));
  t.is(tr.size, 0);
  t.deepEqual(tr.end('daemon_stopped'), [], 'nothing is open any more');

  const timed = new Tracker<string>({ ...policy, confirm_frames: 1 });
  timed.update([det('unknown', null)], 0);
  const changed = timed.update([det('matched', 'ann')], 100).events;
  t.deepEqual(
    changed.map((e) => `${e.type}:${e.reason ?? '-'}`),
    ['unknown_exit:identity_changed', 'person_enter:-'],
  );
  t.deepEqual(
    timed.expire(1200).map((e) => `${e.type}:${e.reason}`),
    ['person_exit:absent'],
  );
  // A track that never confirmed (or whose enter the cooldown swallowed) has nothing to close.
  const quiet = new Tracker<string>(policy);
  quiet.update([det('matched', 'ann')], 0);
  t.deepEqual(quiet.end('monitor_deleted'), []);
});
