import test from 'ava';
import type { FacePayload, ProcessedFrame } from '../../src/monitors/frameProcessor.js';
import { MonitorActivity, type ReaderView } from '../../src/monitors/monitorActivity.js';
import type { MonitorRecord } from '../../src/monitors/model.js';
import type { Detection } from '../../src/monitors/tracker.js';
import { MotionConfigSchema } from '../../src/config/schema.js';
import { gateSettings, MotionGate } from '../../src/monitors/motionGate.js';
import { motionState } from '../../src/monitors/monitorSession.js';

const record: MonitorRecord = {
  id: 'door',
  name: 'Door',
  description: '',
  enabled: true,
  url: 'rtsp://cam/1',
  collection_id: 'staff',
  inference_fps: 5,
  match_threshold: null,
  event_buffer_size: 100,
  event_policy: { confirm_frames: 1, absence_timeout_seconds: 1, cooldown_seconds: 0, emit_unknown: true },
  preview_enabled: false,
  zones: [],
  motion_mask: [],
  face_mask: [],
  min_face_size: 0,
  motion: { gate: null, threshold: null, min_area: null, keepalive_seconds: null },
  created_at: '',
  updated_at: '',
  box_id: 'box-test',
};
const face = {
  bbox: { pixels: { x: 0, y: 0, width: 10, height: 10 }, normalized: { left: 0.1, top: 0.1, width: 0.2, height: 0.2 } },
  landmarks: [],
  detection_score: 0.9,
  quality: { score: 1, sharpness: 1, brightness: 1, pose: 1 },
};
const ann = (): Detection<FacePayload> => ({
  box: [0.1, 0.1, 0.2, 0.2],
  kind: 'matched',
  personId: 'ann',
  payload: {
    face,
    person: { id: 'ann', name: 'Ann', external_id: null },
    similarity: 0.7,
    matched_face_id: 'f1',
    threshold: 0.4,
  },
});
const frame = (detections: Detection<FacePayload>[]): ProcessedFrame => ({ detections, threshold: 0.4 });
const reader: ReaderView = {
  connected: true,
  sourceInfo: { width: 640, height: 480, source_fps: 25 },
  counters: { frameSequence: 9, decoded: 9, reconnects: 0, lastFrameAt: 0 },
};
const types = (a: MonitorActivity) => a.events(null, 100).events.map((e) => e.type);
const base = {
  status: 'running',
  startedAt: 0,
  threshold: 0.4,
  preview: { enabled: false, active: false, viewers: 0, frames: 0 },
  motion: motionState(
    new MotionGate(gateSettings(record, MotionConfigSchema.parse({}))).stats(),
    gateSettings(record, MotionConfigSchema.parse({})),
  ),
};

test('processed frames count the skipped sequences as dropped and emit the tracker events', (t) => {
  const a = new MonitorActivity(record, 'epoch-1');
  a.frameProcessed(3, frame([ann()]), 1000, 12.3456);
  a.frameProcessed(7, frame([ann()]), 1200, 10);
  const s = a.state(base, reader);
  t.is(s.inference.processed_frames, 2);
  t.is(s.inference.dropped_frames, 2 + 3);
  t.is(s.inference.processing_ms, 10);
  t.is(s.matched_faces, 1);
  t.is(a.lastProcessedSequence, 7);
  a.expire(2300);
  t.deepEqual(types(a), ['person_enter', 'person_exit']);
  t.deepEqual(
    a.events(null, 100).events.map((e) => e.sequence),
    [1, 2],
  );
});

test('errors: inference failures raise monitor_error once; recovery comes when every source has cleared', (t) => {
  const a = new MonitorActivity(record, 'epoch-1');
  a.inferenceFailed('boom');
  a.inferenceFailed('boom again');
  t.true(a.hasError('inference'));
  a.sourceFailed('timeout', 'no frame for 5 s', 2000);
  a.sourceFailed('connection_refused', 'nothing accepts connections', 1000); // a retry of the same outage
  t.is(a.lastError!.cause, 'connection_refused', 'the state shows the current cause');
  a.clearError('inference');
  t.deepEqual(types(a), ['monitor_error', 'monitor_error'], 'no recovery while the source still fails');
  a.clearError('source');
  a.clearError('source');
  t.deepEqual(types(a), ['monitor_error', 'monitor_error', 'monitor_recovered']);
  t.is(a.state(base, reader).inference_errors, 2);
  t.regex(a.lastError!.message, /Reconnecting in 1 s/);
  const outage = a.events(null, 100).events.filter((e) => e.type === 'monitor_error')[1]!;
  t.like(
    outage.error,
    { code: 'rtsp_source_unavailable', cause: 'timeout' },
    'one monitor_error per outage, with the first cause',
  );
  a.sourceFailed('not_found', 'RTSP 404', 1000);
  t.deepEqual(types(a).slice(3), ['monitor_error'], 'a new outage after a recovery raises a new one');
});

test('knownTracks: a confirmed matched track seen in the last frame is reused until reidentifyMs after its last search', (t) => {
  const policy = { ...record.event_policy, confirm_frames: 2, absence_timeout_seconds: 5 };
  const a = new MonitorActivity({ ...record, event_policy: policy }, 'epoch-1');
  const searched = (at: number): Detection<FacePayload> => ({
    ...ann(),
    payload: { ...ann().payload, identifiedAt: at },
  });
  t.deepEqual(a.knownTracks(0, 1000), [], 'nothing processed yet');
  a.frameProcessed(1, frame([searched(1000)]), 1000, 10);
  t.deepEqual(a.knownTracks(1200, 1000), [], 'not confirmed yet (confirm_frames 2): embedded every frame');
  a.frameProcessed(2, frame([searched(1200)]), 1200, 10);
  const known = a.knownTracks(1400, 1000);
  t.is(known.length, 1);
  t.is(known[0]!.personId, 'ann');
  t.deepEqual(known[0]!.box, [0.1, 0.1, 0.2, 0.2]);
  t.is(known[0]!.payload.identifiedAt, 1200);
  t.deepEqual(a.knownTracks(2200, 1000), [], 'due for re-identification 1 s after the last search');
  t.deepEqual(a.knownTracks(1400, 0), [], 'reidentify 0: never reused');
  // A reused frame keeps the track's search time, so the periodic search still comes.
  a.frameProcessed(3, { ...frame([searched(1200)]), embedded: 0, reused: 1 }, 1400, 10);
  t.is(a.knownTracks(1600, 1000).length, 1);
  t.deepEqual(a.knownTracks(2200, 1000), []);
  const s = a.state(base, reader);
  t.like(s.inference, { embedded_faces: 0, reused_identities: 1, late_frames: 0, capacity_limited: false });
  // At the record's inference_fps, a frame that took longer than the interval is late (and only the last one
  // shows as capacity_limited).
  const interval = 1000 / record.inference_fps;
  a.frameProcessed(5, frame([]), 1700, interval + 1);
  t.like(a.state(base, reader).inference, { late_frames: 1, capacity_limited: true });
  a.frameProcessed(6, frame([]), 1900, interval);
  t.like(a.state(base, reader).inference, { late_frames: 1, capacity_limited: false });
  // A frame without the face: the track is not reused when it comes back (it is searched again).
  a.frameProcessed(4, frame([]), 1600, 10);
  t.deepEqual(a.knownTracks(1700, 1000), []);
});

test('knownTracks: unknown and liveness-blocked faces are never reused; tracks without a search time neither', (t) => {
  const a = new MonitorActivity(record, 'epoch-1');
  const unknown: Detection<FacePayload> = {
    box: [0.5, 0.5, 0.2, 0.2],
    kind: 'unknown',
    personId: null,
    payload: { face, person: null, similarity: null, matched_face_id: null, threshold: 0.4, identifiedAt: 1000 },
  };
  const blocked: Detection<FacePayload> = {
    box: [0.1, 0.5, 0.2, 0.2],
    kind: 'liveness_blocked',
    personId: null,
    payload: { face, person: null, similarity: null, matched_face_id: null, threshold: 0.4 },
  };
  a.frameProcessed(1, frame([unknown, blocked, ann()]), 1000, 10);
  t.deepEqual(a.knownTracks(1100, 1000), [], 'confirmed unknown, blocked, and a match with no identifiedAt');
});

/** Ann's face with its box at `box` (normalised). */
const annAt = (box: [number, number, number, number]): Detection<FacePayload> => ({ ...ann(), box });
const door: [number, number][] = [
  [0.5, 0],
  [1, 0],
  [1, 1],
  [0.5, 1],
];

test('zones: a tracked face crossing into a zone raises zone_enter and leaving it zone_exit; events list the zones', (t) => {
  const a = new MonitorActivity(
    { ...record, zones: [{ name: 'door', polygon: door, inertia: 1 }], event_policy: { ...record.event_policy } },
    'epoch-1',
  );
  // The box centre crosses x = 0.5 (the zone's edge) a little at a time, so it stays one track.
  a.frameProcessed(1, frame([annAt([0.42, 0.4, 0.1, 0.1])]), 1000, 10);
  a.frameProcessed(2, frame([annAt([0.47, 0.4, 0.1, 0.1])]), 1100, 10);
  t.deepEqual(a.state(base, reader).faces[0]!.zones, ['door'], 'the state shows the zones a face is in');
  a.frameProcessed(3, frame([annAt([0.43, 0.4, 0.1, 0.1])]), 1200, 10);
  a.frameProcessed(4, frame([annAt([0.48, 0.4, 0.1, 0.1])]), 1300, 10);
  a.expire(2400);
  const events = a.events(null, 100).events;
  t.deepEqual(
    events.map((e) => `${e.type}${e.zone ? `:${e.zone}` : ''}${e.reason ? `(${e.reason})` : ''}`),
    [
      'person_enter',
      'zone_enter:door',
      'zone_exit:door(left_zone)',
      'zone_enter:door',
      'zone_exit:door(absent)',
      'person_exit(absent)',
    ],
  );
  t.deepEqual(events[0]!.zones, [], 'entered outside every zone');
  t.deepEqual(events.at(-1)!.zones, ['door'], 'the exit lists every zone the face has been in');
  for (const e of events) t.is(e.track_id, events[0]!.track_id);
  t.is(events[1]!.person!.id, 'ann');
});

test('zones: a face confirmed inside a zone enters it right after its person_enter; unannounced tracks raise none', (t) => {
  const zones = [{ name: 'desk', polygon: door, inertia: 2 }];
  const a = new MonitorActivity({ ...record, zones, event_policy: { ...record.event_policy, confirm_frames: 2 } }, 'e');
  a.frameProcessed(1, frame([annAt([0.6, 0.4, 0.1, 0.1])]), 1000, 10);
  t.deepEqual(types(a), [], 'not confirmed: no zone event either');
  a.frameProcessed(2, frame([annAt([0.6, 0.4, 0.1, 0.1])]), 1100, 10);
  t.deepEqual(types(a), ['person_enter', 'zone_enter']);
  t.deepEqual(a.events(null, 100).events[0]!.zones, ['desk']);
  // The session ends with the face in the zone: the zone exit comes first, with the track's reason.
  a.end('monitor_disabled');
  t.deepEqual(
    a
      .events(null, 100)
      .events.slice(2)
      .map((e) => `${e.type}:${e.reason}`),
    ['zone_exit:monitor_disabled', 'person_exit:monitor_disabled'],
  );
  // A swallowed enter (emit_unknown off) announces nothing, so its face raises no zone event.
  const quiet = new MonitorActivity(
    { ...record, zones, event_policy: { ...record.event_policy, emit_unknown: false } },
    'e2',
  );
  const stranger: Detection<FacePayload> = { ...annAt([0.6, 0.4, 0.1, 0.1]), kind: 'unknown', personId: null };
  for (let i = 1; i <= 4; i++) quiet.frameProcessed(i, frame([stranger]), 1000 + i * 100, 10);
  t.deepEqual(types(quiet), []);
});

test('frames passed over by the motion gate are not dropped frames', (t) => {
  const a = new MonitorActivity(record, 'epoch-1');
  a.frameProcessed(1, frame([]), 1000, 10);
  for (const seq of [2, 3, 3, 4]) a.frameGated(seq);
  a.frameProcessed(6, frame([]), 2000, 10);
  t.is(a.state(base, reader).inference.dropped_frames, 1, 'frame 5 alone was dropped');
  // A gated frame inferred later (its keep-alive) is neither.
  a.frameGated(7);
  a.frameProcessed(7, frame([]), 3000, 10);
  t.is(a.state(base, reader).inference.dropped_frames, 1);
  t.is(a.lastInferenceAt, 3000);
  t.deepEqual(a.gateTracks(), []);
});
