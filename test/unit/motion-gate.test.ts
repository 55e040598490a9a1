import test from 'ava';
import { DetectionConfigSchema } from '../../src/config/schema.js';
import type { DetectionProfile, AnalyzedFace } from '../../src/inference/pipeline.js';
import { gateDecision, MotionGate, regionOfInterest, type GateSettings } from '../../src/monitors/motionGate.js';
import { copyCrop, cropRect, regionProfile, toFrame } from '../../src/monitors/regionCrop.js';

const base = {
  enabled: true,
  available: true,
  calibrating: false,
  motion: null,
  tracks: [],
  now: 10_000,
  lastInferenceAt: 9_000,
  keepaliveMs: 2000,
  absenceMs: 3000,
  regions: true,
};

test('gateDecision: gating off or no motion frames infers every frame, on the whole frame', (t) => {
  t.deepEqual(gateDecision({ ...base, enabled: false }), { infer: true, reason: 'ungated', region: null });
  t.deepEqual(gateDecision({ ...base, available: false }), { infer: true, reason: 'ungated', region: null });
});

test('gateDecision: while the detector relearns the scene it cannot tell what moves: every frame, whole', (t) => {
  t.deepEqual(gateDecision({ ...base, calibrating: true, motion: [[0.4, 0.4, 0.1, 0.1]] }), {
    infer: true,
    reason: 'calibrating',
    region: null,
  });
});

test('gateDecision: motion infers at once, on the padded region (or the whole frame without regions)', (t) => {
  const d = gateDecision({ ...base, motion: [[0.4, 0.4, 0.1, 0.1]] });
  t.true(d.infer);
  if (!d.infer) return;
  t.is(d.reason, 'motion');
  t.deepEqual(
    d.region!.map((v) => Math.round(v * 1000) / 1000),
    [0.37, 0.37, 0.16, 0.16],
  );
  t.deepEqual(gateDecision({ ...base, regions: false, motion: [[0.4, 0.4, 0.1, 0.1]] }), {
    infer: true,
    reason: 'motion',
    region: null,
  });
});

test('gateDecision: a track waiting for confirmation is inferred every frame; confirmed ones by keep-alive', (t) => {
  const pending = { box: [0.1, 0.1, 0.05, 0.05] as [number, number, number, number], confirmed: false, blocked: false };
  const d = gateDecision({ ...base, tracks: [pending] });
  t.like(d, { infer: true, reason: 'confirming' });
  // A liveness-blocked face never confirms: it does not hold the gate open.
  t.like(gateDecision({ ...base, tracks: [{ ...pending, blocked: true }] }), { infer: false });
  // Confirmed tracks: the keep-alive at most half the absence timeout apart, so the track never times out.
  const still = { ...pending, confirmed: true };
  t.deepEqual(gateDecision({ ...base, tracks: [still], now: 10_400 }), { infer: false, dueAt: 10_500 });
  t.deepEqual(gateDecision({ ...base, tracks: [still], now: 10_500 }), {
    infer: true,
    reason: 'keepalive',
    region: null,
  });
  t.deepEqual(gateDecision({ ...base, tracks: [still], absenceMs: 10_000, now: 10_500 }), {
    infer: false,
    dueAt: 11_000,
  });
});

test('gateDecision: with nothing moving and no track, only the keep-alive runs', (t) => {
  t.deepEqual(gateDecision({ ...base, now: 10_999 }), { infer: false, dueAt: 11_000 });
  t.deepEqual(gateDecision({ ...base, now: 11_000 }), { infer: true, reason: 'keepalive', region: null });
  t.like(gateDecision({ ...base, lastInferenceAt: null }), { infer: true, reason: 'keepalive' });
});

test('regionOfInterest: padded union of motion and tracks; the whole frame past half of it', (t) => {
  t.is(regionOfInterest([], []), null);
  const r = regionOfInterest([[0.1, 0.1, 0.1, 0.1]], [[0.5, 0.5, 0.05, 0.05]])!;
  // Motion padded by max(3 %, 25 % of 0.1); the track by 100 % of its side (0.05).
  t.deepEqual(
    r.map((v) => Math.round(v * 1000) / 1000),
    [0.07, 0.07, 0.53, 0.53],
  );
  t.is(regionOfInterest([[0, 0, 0.6, 0.9]], []), null);
  // Clamped to the frame.
  t.deepEqual(
    regionOfInterest([[0, 0, 0.1, 0.1]], [])!.map((v) => Math.round(v * 1000) / 1000),
    [0, 0, 0.13, 0.13],
  );
});

const settings: GateSettings = {
  enabled: true,
  keepaliveMs: 2000,
  offDelayMs: 1000,
  regions: true,
  motionMask: [],
  threshold: 30,
  minArea: 0.0007,
  frameAlpha: 0.01,
  // Off here: on a 32x18 frame the moving square shifts the contrast percentiles of every pixel.
  improveContrast: false,
  lightningThreshold: 0.8,
};
const W = 32,
  H = 18;
const flat = (seed: number) => {
  const f = new Uint8Array(W * H);
  for (let i = 0; i < f.length; i++) f[i] = 60 + ((i * 7 + seed) % 5) + (i % 40);
  return f;
};
const moving = () => {
  const f = flat(0);
  for (let y = 4; y < 10; y++) for (let x = 4; x < 10; x++) f[y * W + x] = 250;
  return f;
};

test('MotionGate: motion since the last inference goes with the next one; active follows the off delay', (t) => {
  const changes: boolean[] = [];
  const g = new MotionGate(settings, (a) => changes.push(a));
  t.like(g.decide(0, [], null, 3000), { infer: true, reason: 'ungated' }, 'no motion frame yet');
  for (let i = 0; i < 5; i++) g.observe(flat(i), W, H, i * 100);
  t.like(g.decide(500, [], 400, 3000), { infer: false });
  g.observe(moving(), W, H, 600);
  t.deepEqual(changes, [true]);
  // A quiet frame after it: the motion is still pending until an inference takes it.
  g.observe(flat(9), W, H, 700);
  const d = g.decide(700, [], 400, 3000);
  t.like(d, { infer: true, reason: 'motion' });
  if (d.infer) g.inferring(d.reason, d.region);
  t.like(g.decide(750, [], 700, 3000), { infer: false });
  g.tick(1599);
  t.deepEqual(changes, [true]);
  g.tick(1600);
  t.deepEqual(changes, [true, false]);
  const s = g.stats();
  t.like(s, { available: true, active: false, framesAnalysed: 7, motionFrames: 1, regionInferences: 1 });
  t.is(s.byReason.motion, 1);
  t.is(s.lastMotionAt, 600);
});

test('MotionGate: skipped inferences are counted once per inference interval', (t) => {
  const g = new MotionGate(settings);
  for (const at of [0, 100, 199, 200, 350, 400]) g.skippedOne(at, 200);
  t.is(g.stats().skipped, 3);
});

test('MotionGate: gating off still reports motion but infers every frame', (t) => {
  const g = new MotionGate({ ...settings, enabled: false });
  for (let i = 0; i < 5; i++) g.observe(flat(i), W, H, i * 100);
  g.observe(moving(), W, H, 600);
  t.true(g.stats().active);
  t.like(g.decide(700, [], 650, 3000), { infer: true, reason: 'ungated', region: null });
});

/** The default detection profile ([detection]: 96x96 and 512x512). */
const { max_detected_faces: _max, ...profile }: DetectionProfile & { max_detected_faces: number } =
  DetectionConfigSchema.parse({});

test('cropRect: whole pixels, at least 64 a side, kept inside the frame', (t) => {
  t.deepEqual(cropRect([0.25, 0.5, 0.25, 0.25], 1280, 720), { x: 320, y: 360, width: 320, height: 180 });
  t.deepEqual(cropRect([0.5, 0.5, 0.01, 0.01], 1280, 720), { x: 615, y: 332, width: 64, height: 64 });
  t.deepEqual(cropRect([0.99, 0.99, 0.01, 0.01], 1280, 720), { x: 1216, y: 656, width: 64, height: 64 });
});

test('regionProfile: letterboxed sizes at their whole-frame scale over the crop; close-up sizes stay', (t) => {
  // 1280x720 at 512x512 is scale 0.4: a 320x180 crop is 128x72 there, rounded up to 128x96.
  t.deepEqual(regionProfile(profile, 1280, 720, { x: 0, y: 0, width: 320, height: 180 }).input_sizes, [
    [96, 96],
    [128, 96],
  ]);
  // Never larger than the configured size; at least one stride.
  t.deepEqual(regionProfile(profile, 1280, 720, { x: 0, y: 0, width: 1280, height: 720 }).input_sizes, [
    [96, 96],
    [512, 288],
  ]);
  t.deepEqual(
    regionProfile({ ...profile, input_sizes: [[640, 640]] }, 1280, 720, { x: 0, y: 0, width: 20, height: 20 })
      .input_sizes,
    [[32, 32]],
  );
});

test('copyCrop copies the rows of a packed RGB frame; toFrame moves a face back to frame pixels', (t) => {
  const fw = 4,
    fh = 3;
  const frame = Uint8Array.from({ length: fw * fh * 3 }, (_, i) => i);
  const out = new Uint8Array(2 * 2 * 3);
  copyCrop(frame, fw, { x: 1, y: 1, width: 2, height: 2 }, out);
  t.deepEqual([...out], [15, 16, 17, 18, 19, 20, 27, 28, 29, 30, 31, 32]);
  const f = {
    box: [1, 2, 11, 12],
    score: 0.9,
    landmarks: [
      [3, 4],
      [5, 6],
    ],
  } as unknown as AnalyzedFace;
  const moved = toFrame(f, { x: 100, y: 50, width: 20, height: 20 });
  t.deepEqual(moved.box, [101, 52, 111, 62]);
  t.deepEqual(moved.landmarks, [
    [103, 54],
    [105, 56],
  ]);
  t.deepEqual(f.box, [1, 2, 11, 12], 'the original is left alone');
});
