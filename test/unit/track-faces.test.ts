import test from 'ava';
import type { FacePayload, ProcessedFrame, RankedMatch } from '../../src/monitors/frameProcessor.js';
import { MonitorActivity } from '../../src/monitors/monitorActivity.js';
import type { MonitorRecord } from '../../src/monitors/model.js';
import type { Detection } from '../../src/monitors/tracker.js';
import { copyFaceCrop, trackFacesFor, type TrackFacesDefaults } from '../../src/monitors/trackFaces.js';

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
  event_policy: { confirm_frames: 3, absence_timeout_seconds: 1, cooldown_seconds: 0, emit_unknown: true },
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
const defaults: TrackFacesDefaults = {
  trackIdentity: true,
  bankSize: 5,
  hysteresis: 0.03,
  groupUnknowns: false,
  unknownThreshold: 0.5,
  unknownCrops: 5,
};

const DIM = 32;
const unit = (v: number[]) => {
  const n = Math.hypot(...v);
  return Float32Array.from(v.map((x) => x / n));
};
const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
/** Ann's and Bob's enrolled faces: two orthogonal directions. */
const ann = unit(Array.from({ length: DIM }, (_, i) => (i === 0 ? 1 : 0)));
const bob = unit(Array.from({ length: DIM }, (_, i) => (i === 1 ? 1 : 0)));
const gallery = [
  { person: { id: 'ann', name: 'Ann', external_id: null }, e: ann },
  { person: { id: 'bob', name: 'Bob', external_id: null }, e: bob },
];
const rank = (e: Float32Array, k: number): RankedMatch[] =>
  gallery
    .map((g) => ({ person: g.person, similarity: dot(e, g.e), matched_face_id: `${g.person.id}-face` }))
    .sort((a, b) => b.similarity - a.similarity)
    .slice(0, k);

/**
 * A noisy frame of Ann: her direction plus noise orthogonal to it (and to Bob), a different noise direction per
 * frame, scaled so that the frame alone scores `alone` against her face. Frames are what a dark, distant camera
 * gives: each below the threshold, while the noise cancels in their mean.
 */
function annFrame(i: number, alone = 0.35): Float32Array {
  const noise = Array.from({ length: DIM }, (_, j) => (j === 2 + i ? 1 : 0));
  const s = Math.sqrt(1 - alone * alone);
  return unit(Array.from({ length: DIM }, (_, j) => alone * ann[j]! + s * noise[j]!));
}
const face = {
  bbox: { pixels: { x: 2, y: 2, width: 4, height: 4 }, normalized: { left: 0.1, top: 0.1, width: 0.2, height: 0.2 } },
  landmarks: [],
  detection_score: 0.9,
  quality: { score: 0.8, sharpness: 1, brightness: 1, pose: 1 },
};
/** The frame as the frame processor gives it: below the threshold, so unknown on its own. */
const unknownFace = (embedding: Float32Array): Detection<FacePayload> => ({
  box: [0.1, 0.1, 0.2, 0.2],
  kind: 'unknown',
  personId: null,
  payload: { face, person: null, similarity: null, matched_face_id: null, threshold: 0.4, embedding },
});
const frame = (d: Detection<FacePayload>[]): ProcessedFrame => ({ detections: d, threshold: 0.4, rank });

function run(trackIdentity: boolean) {
  const a = new MonitorActivity(record, 'e1', null, trackFacesFor(record, { ...defaults, trackIdentity }, null, 'e1'));
  for (let i = 0; i < 5; i++) a.frameProcessed(i + 1, frame([unknownFace(annFrame(i))]), 1000 + 100 * i, 5);
  a.expire(5000);
  return a.events(null, 100).events;
}

test('frames each below the threshold identify their track once pooled; off, every frame stays unknown', (t) => {
  t.true(annFrame(0).every((_, i) => i < DIM) && Math.abs(dot(annFrame(0), ann) - 0.35) < 1e-6);
  const events = run(true);
  t.deepEqual(
    events.map((e) => `${e.type}:${e.person?.id ?? '-'}`),
    ['person_enter:ann', 'person_exit:ann'],
  );
  const enter = events[0]!;
  t.is(enter.identity?.method, 'track');
  t.true(enter.identity!.frames >= 3, JSON.stringify(enter.identity));
  t.true(enter.similarity! > 0.43, `pooled similarity ${enter.similarity}`);
  t.is(enter.identity!.runner_up?.person_id, 'bob');
  t.true(Math.abs(enter.identity!.margin! - (enter.similarity! - enter.identity!.runner_up!.similarity)) < 1e-5);
  t.is(enter.matched_face_id, 'ann-face');
  t.false('embedding' in enter, 'the embedding never leaves the session');
  const exit = events[1]!;
  t.is(exit.identity!.frames_seen, 5);

  const off = run(false);
  t.deepEqual(
    off.map((e) => e.type),
    ['unknown_enter', 'unknown_exit'],
  );
  t.is(off[0]!.identity, undefined, 'nothing is pooled: no basis beyond the frame itself');
});

test('a monitor override turns track identity off, and nothing at all is built when both features are off', (t) => {
  t.truthy(trackFacesFor(record, defaults, null, 'e'));
  t.is(trackFacesFor({ ...record, faces: { track_identity: false, group_unknowns: null } }, defaults, null, 'e'), null);
  t.is(trackFacesFor(record, undefined, null, 'e'), null);
});

test('a face crop keeps half a box of margin, is clipped to the frame and averaged down when large', (t) => {
  const width = 8,
    height = 6;
  const data = new Uint8Array(width * height * 3).map((_, i) => i % 251);
  const small = copyFaceCrop({ data, width, height }, { x: 2, y: 2, width: 2, height: 2 })!;
  t.deepEqual([small.width, small.height], [4, 4], 'box 2x2 grown by 1 on each side');
  t.is(small.data[0], data[(1 * width + 1) * 3]);
  const clipped = copyFaceCrop({ data, width, height }, { x: 0, y: 0, width: 2, height: 2 })!;
  t.deepEqual([clipped.width, clipped.height], [3, 3]);
  t.is(copyFaceCrop({ data, width, height }, { x: 20, y: 20, width: 2, height: 2 }), null);
  const big = { data: new Uint8Array(1000 * 800 * 3).fill(7), width: 1000, height: 800 };
  const down = copyFaceCrop(big, { x: 300, y: 200, width: 400, height: 400 })!;
  t.true(Math.max(down.width, down.height) <= 320, `${down.width}x${down.height}`);
  t.true(down.data.every((v) => v === 7));
});
