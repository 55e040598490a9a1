/**
 * The motion gate, measured on this machine (ratios within one run; timings here are noisy):
 *   - region: the face pipeline on a 1280x720 frame with one face, on the whole frame and on the region the
 *     gate gives for it (the face's motion box, padded, at the whole-frame scale): CPU ms per call, and that
 *     both find the same face (box IoU, embedding cosine)
 *   - empty: N monitors on an empty 1280x720 25 fps scene (a room, replayed from pre-encoded frames, so no
 *     encoder runs on the box) at 5 inference fps: daemon CPU per stream with the gate on, off, and the
 *     decode-only anchor (inference at 0.1 fps, gate off)
 *   - latency: one monitor on a live loop (4 s room, 4 s a face) at 5 inference fps, confirm_frames 3:
 *     person_enter minus the moment the first face frame entered the server's payloader, gate on and off
 * Usage: npx tsx bench/motion-gate.ts [--streams 2] [--seconds 20] [--latency-seconds 40] [--calls 30]
 *   -> prints JSON, writes bench/results/motion-gate.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DetectionConfigSchema } from '../src/config/schema.js';
import sharp from 'sharp';
import {
  cosineSimilarity,
  FacePipeline,
  type AnalyzeRequest,
  type DetectionProfile,
} from '../src/inference/pipeline.js';
import { iou } from '../src/inference/geometry.js';
import { tunedSession } from '../src/inference/sessions.js';
import { loadInstalledPack } from '../src/models/installed.js';
import { regionOfInterest } from '../src/monitors/motionGate.js';
import { copyCrop, cropRect, regionProfile, toFrame } from '../src/monitors/regionCrop.js';
import { DAEMON_NODE_FLAGS } from '../src/system/nodeFlags.js';
import { call, face, modelsDirWith, REPO, startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML } from '../test/helpers/monitors.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';
import { createBenchMonitors, removeBenchMonitors } from './benchMonitors.js';
import { rerunAsDaemon } from './daemonProcess.js';

// Each monitor parks a GStreamer pull in libuv's pool: the pool size is set before Node starts.
rerunAsDaemon({ nodeFlags: DAEMON_NODE_FLAGS, env: { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '16' } });

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '20' },
    'latency-seconds': { type: 'string', default: '40' },
    calls: { type: 'string', default: '30' },
  },
});
const STREAMS = Number(values.streams);
const SECONDS = Number(values.seconds);
const LATENCY_S = Number(values['latency-seconds']);
const CALLS = Number(values.calls);
const W = 1280,
  H = 720,
  FPS = 25,
  INFER_FPS = 5,
  EMPTY_S = 4,
  FACE_S = 4;
const PHOTO = { x: 0.4, y: 0.15, width: 0.2 };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (v: number) => Math.round(v * 10) / 10;
const r3 = (v: number) => Math.round(v * 1000) / 1000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? null;

/** The face pipeline on the whole frame and on the gate's region of the face, alternated. */
async function regionPhase() {
  const pack = await loadInstalledPack(await modelsDirWith('edge_s'), 'edge_s');
  const settings = { providers: ['cpu' as const], deviceId: 0, intraOpThreads: 2, graphOptimization: 'auto' as const };
  const pipeline = new FacePipeline({
    detector: {
      spec: pack.detector,
      session: (await tunedSession(pack.detector.path, settings, [1, 3, 512, 512])).session,
    },
    recognizer: {
      spec: pack.recognizer,
      session: (await tunedSession(pack.recognizer.path, settings, [1, 3, 112, 112])).session,
    },
  });
  const frameDir = await renderScenario([{ image: face('identities/obama/1.jpg'), seconds: 0.04, at: PHOTO }], {
    width: W,
    height: H,
    fps: FPS,
    room: true,
  });
  const { data } = await sharp(join(frameDir, 'frame00000.jpg')).raw().toBuffer({ resolveWithObject: true });
  const frame = new Uint8Array(data);
  // The default detection profile ([detection]: 96x96 and 512x512).
  const { max_detected_faces: _max, ...profile }: DetectionProfile & { max_detected_faces: number } =
    DetectionConfigSchema.parse({});
  const request = (image: AnalyzeRequest['image'], p: DetectionProfile): AnalyzeRequest => ({
    image,
    limits: { maxBytes: Number.MAX_SAFE_INTEGER, maxPixels: Number.MAX_SAFE_INTEGER },
    profile: p,
    maxFaces: 100,
    embed: 'all',
    trimLetterbox: true,
  });
  const whole = () => pipeline.analyze(request({ raw: frame, width: W, height: H }, profile));
  // The motion box of the photo (as the gate sees it: the whole pasted photo moved in), padded by the gate.
  const region = regionOfInterest([[PHOTO.x, PHOTO.y, PHOTO.width, PHOTO.width * 1.25 * (W / H)]], [])!;
  const crop = cropRect(region, W, H);
  const cropped = new Uint8Array(crop.width * crop.height * 3);
  const regional = async () => {
    copyCrop(frame, W, crop, cropped);
    const r = await pipeline.analyze(
      request({ raw: cropped, width: crop.width, height: crop.height }, regionProfile(profile, W, H, crop)),
    );
    return { ...r, faces: r.faces.map((f) => toFrame(f, crop)) };
  };
  /** CPU ms of one call (every thread of the process: ONNX Runtime's, libvips'), and its detect / embed wall ms. */
  const measure = async (run: () => Promise<{ timings: { detect_ms: number; embed_ms: number } }>) => {
    const c0 = process.cpuUsage();
    const r = await run();
    const c = process.cpuUsage(c0);
    return { cpu: (c.user + c.system) / 1000, detect: r.timings.detect_ms, embed: r.timings.embed_ms };
  };
  await whole();
  await regional();
  const wholeRuns: Awaited<ReturnType<typeof measure>>[] = [],
    regionRuns: Awaited<ReturnType<typeof measure>>[] = [];
  for (let i = 0; i < CALLS; i++) {
    wholeRuns.push(await measure(whole));
    regionRuns.push(await measure(regional));
  }
  const med = (runs: typeof wholeRuns, k: 'cpu' | 'detect' | 'embed') => r1(median(runs.map((x) => x[k]))!);
  const a = await whole(),
    b = await regional();
  await pipeline.close();
  return {
    frame: `${W}x${H}, one face (photo ${PHOTO.width * 100} % of the width)`,
    region: { ...crop, share_of_frame: r3((crop.width * crop.height) / (W * H)) },
    detector_sizes: {
      whole: [
        [96, 96],
        [512, 288],
      ],
      region: regionProfile(profile, W, H, crop).input_sizes,
    },
    cpu_ms_per_call_median: { whole: med(wholeRuns, 'cpu'), region: med(regionRuns, 'cpu') },
    region_to_whole: r3(med(regionRuns, 'cpu') / med(wholeRuns, 'cpu')),
    detect_wall_ms_median: { whole: med(wholeRuns, 'detect'), region: med(regionRuns, 'detect') },
    embed_wall_ms_median: { whole: med(wholeRuns, 'embed'), region: med(regionRuns, 'embed') },
    faces: { whole: a.faces.length, region: b.faces.length },
    same_face:
      a.faces[0] && b.faces[0]
        ? {
            box_iou: r3(iou(a.faces[0].box, b.faces[0].box)),
            embedding_cosine: r3(cosineSimilarity(a.faces[0].embedding!, b.faces[0].embedding!)),
          }
        : null,
  };
}

/** Daemon CPU (% of one core) per stream over SECONDS, and the inferences each stream ran per second. */
async function emptyRun(d: TestDaemon, url: (i: number) => string, what: string, extra: object) {
  const ids = Array.from({ length: STREAMS }, (_, i) => `${what}${i}`);
  await createBenchMonitors(d, ids, {
    url,
    inferenceFps: INFER_FPS,
    extra,
    ready: (s) => s.motion.frames_analysed > 10,
  });
  await sleep(3000);
  const state = () => Promise.all(ids.map(async (id) => (await call(d, 'GET', `/v1/monitors/${id}/state`)).json.state));
  const s0 = await state();
  const c0 = process.cpuUsage(),
    t0 = performance.now();
  await sleep(SECONDS * 1000);
  const c = process.cpuUsage(c0),
    secs = (performance.now() - t0) / 1000;
  const s1 = await state();
  await removeBenchMonitors(d, ids);
  const inferred = s1.reduce((a, s, i) => a + s.inference.processed_frames - s0[i].inference.processed_frames, 0);
  return {
    cpu_percent_per_stream: r1(((c.user + c.system) / 1e6 / secs / STREAMS) * 100),
    inferences_per_stream_per_second: r3(inferred / STREAMS / secs),
    load_average_1m: r1(loadavg()[0]!),
  };
}

/** person_enter delays (ms) from the moment the first face frame entered the server's payloader. */
async function latencyRun(d: TestDaemon, url: string, marks: number[], gate: boolean) {
  const id = gate ? 'lat_gated' : 'lat_ungated';
  await createBenchMonitors(d, [id], {
    url: () => url,
    inferenceFps: INFER_FPS,
    extra: { motion: { gate } },
    ready: (s) => s.motion.frames_analysed > 10,
  });
  const from = Date.now();
  await sleep(LATENCY_S * 1000);
  const events = (await call(d, 'GET', `/v1/monitors/${id}/events?limit=1000`)).json.events as {
    type: string;
    occurred_at: string;
  }[];
  const state = (await call(d, 'GET', `/v1/monitors/${id}/state`)).json.state;
  await removeBenchMonitors(d, [id]);
  const enters = events.filter((e) => e.type === 'person_enter').map((e) => Date.parse(e.occurred_at));
  const delays = marks
    .filter((m) => m >= from)
    .map((m) => enters.find((t) => t >= m && t < m + FACE_S * 1000))
    .map((t, i) => (t === undefined ? null : t - marks.filter((m) => m >= from)[i]!))
    .filter((x): x is number => x !== null);
  return {
    n: delays.length,
    p50_ms: median(delays),
    max_ms: delays.length ? Math.max(...delays) : null,
    inferences: state.motion.inferences,
    inferences_skipped: state.motion.inferences_skipped,
  };
}

const region = await regionPhase();
console.error(JSON.stringify({ region }));
const room = await renderScenario([{ image: null, seconds: 2 }], { width: W, height: H, fps: FPS, room: true });
const loop = await renderScenario(
  [
    { image: null, seconds: EMPTY_S },
    { image: face('identities/obama/1.jpg'), seconds: FACE_S, at: PHOTO },
  ],
  { width: W, height: H, fps: FPS, room: true },
);
const marks: number[] = [];
const [empty, live] = await Promise.all([
  startRtspServer({
    frames: room,
    fps: FPS,
    bitrate: 4000,
    mounts: Array.from({ length: STREAMS }, (_, i) => `/s${i}`),
    preencoded: { mountOffsetsSeconds: [0] },
  }),
  startRtspServer({ frames: loop, fps: FPS, bitrate: 4000, markFrame: EMPTY_S * FPS, onMark: (ms) => marks.push(ms) }),
]);
const d = await startTestDaemon({ toml: `${FAST_MONITORS_TOML}\nmax_streams = 16` });
let out;
try {
  await enrollObamaBiden(d, 'bench');
  const url = (i: number) => empty.url(`/s${i}`);
  const decodeOnly = await emptyRun(d, url, 'decode', { inference_fps: 0.1, motion: { gate: false } });
  const gated = await emptyRun(d, url, 'gated', { motion: { gate: true } });
  const ungated = await emptyRun(d, url, 'ungated', { motion: { gate: false } });
  const empty_scene = {
    streams: STREAMS,
    seconds: SECONDS,
    decode_only: decodeOnly,
    gate_on: gated,
    gate_off: ungated,
    gate_on_to_decode_only: r3(gated.cpu_percent_per_stream / decodeOnly.cpu_percent_per_stream),
    gate_off_to_decode_only: r3(ungated.cpu_percent_per_stream / decodeOnly.cpu_percent_per_stream),
  };
  console.error(JSON.stringify({ empty_scene }));
  const latency = {
    loop: `${EMPTY_S} s room, ${FACE_S} s face (cut in), ${W}x${H} ${FPS} fps, inference ${INFER_FPS} fps, confirm_frames 3`,
    gate_on: await latencyRun(d, live.url(), marks, true),
    gate_off: await latencyRun(d, live.url(), marks, false),
  };
  out = {
    at: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model },
    region,
    empty_scene,
    latency,
  };
} finally {
  await d.close();
  await Promise.all([empty.stop(), live.stop()]);
}
console.log(JSON.stringify(out, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/motion-gate.json'), JSON.stringify(out, null, 2));
