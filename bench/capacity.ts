/**
 * Camera capacity, measured (issue 41 item 4), ratios within one run (timings on a shared box are noisy):
 *   - decode_only: N `gst-launch-1.0` processes running the monitor's own decode pipeline ([monitors]
 *     pipeline, the appsinks replaced by fakesinks: no inference, no JavaScript), CPU per stream
 *   - mostly_empty: N monitors (gate on, the default) on a 40 s 1280x720 25 fps loop of a room that is empty
 *     90 % of the time, two faces entering at random places and times (seeded), each mount at its own offset
 *   - busy: N monitors on a loop with a face always in frame, walking to and fro (motion in every frame)
 *   - the sub-stream: the mostly-empty scene also served at 640x360; its decode-only anchor, and N monitors
 *     reading it as their detect_url with the 1280x720 stream as the main one (opened while something moves)
 *   - latency: person_enter minus the moment the first face frame entered the server's payloader (4 s room,
 *     4 s a face), gate on and off, p50 and p90
 * From the CPU per stream: the streams the machine's cores would carry at that cost (a projection: this box
 * cannot run 32 streams while others work on it), and each scene's capacity over decode-only's. `sustained`
 * says whether every stream kept ≥ 95 % of the source's 25 fps decoded (and, busy, ≥ 90 % of 5 inference fps).
 * Usage: npx tsx bench/capacity.ts [--streams 3] [--seconds 20] [--latency-seconds 32]
 *   -> prints JSON, writes bench/results/capacity.json
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MONITOR_PIPELINE } from '../src/config/schema.js';
import { DAEMON_NODE_FLAGS } from '../src/system/nodeFlags.js';
import { call, face, REPO, startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML } from '../test/helpers/monitors.js';
import { renderScenario, startRtspServer, type Segment } from '../test/helpers/rtsp.js';
import { createBenchMonitors, removeBenchMonitors } from './benchMonitors.js';
import { rerunAsDaemon } from './daemonProcess.js';
import { processCpuSeconds } from './procStat.js';
import { seededRandom } from './seededRandom.js';

rerunAsDaemon({ nodeFlags: DAEMON_NODE_FLAGS, env: { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '16' } });

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '20' },
    'latency-seconds': { type: 'string', default: '32' },
  },
});
const STREAMS = Number(values.streams);
const SECONDS = Number(values.seconds);
const LATENCY_S = Number(values['latency-seconds']);
const W = 1280,
  H = 720,
  FPS = 25,
  INFER_FPS = 5,
  LOOP_S = 40;
const CORES = cpus().length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (v: number) => Math.round(v * 10) / 10;
const r3 = (v: number) => Math.round(v * 1000) / 1000;
const quantile = (xs: number[], q: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]! : null;
/** Streams the cores carry at this CPU (% of one core) per stream. */
const projected = (cpuPerStream: number) => Math.floor((CORES * 100) / cpuPerStream);

/** 90 % empty: two visits of 2 s in the 40 s loop, at random times and places (seeded: the same every run). */
function mostlyEmptyScene(obama: Buffer): Segment[] {
  const rnd = seededRandom(41);
  const gaps = [4 + rnd() * 12, 4 + rnd() * 12];
  const place = () => ({ x: 0.05 + rnd() * 0.7, y: 0.05 + rnd() * 0.4, width: 0.2 });
  const out: Segment[] = [];
  let used = 0;
  for (const gap of gaps) {
    out.push({ image: null, seconds: gap }, { image: obama, seconds: 2, at: place() });
    used += gap + 2;
  }
  out.push({ image: null, seconds: LOOP_S - used });
  return out;
}

function decodePipeline(url: string): string[] {
  // The same template the daemon runs; only the appsinks become fakesinks.
  const p = DEFAULT_MONITOR_PIPELINE.replaceAll('{latency_ms}', '0')
    .replaceAll('{max_fps}', String(INFER_FPS + 1))
    .replaceAll('{max_side}', '1280')
    .replaceAll('{motion_height}', '90')
    .replaceAll('{record}', '')
    .replace('rtspsrc name=src', `rtspsrc name=src location=${url}`)
    .replaceAll(/appsink name=\w+ [^!]*?(?=( split\.|$))/g, 'fakesink sync=false async=false');
  return ['-q', ...p.split(' ').filter(Boolean)];
}

/** CPU per stream of N gst-launch-1.0 processes running the decode pipeline. */
async function decodeOnly(url: (i: number) => string) {
  const procs = Array.from({ length: STREAMS }, (_, i) =>
    spawn('gst-launch-1.0', decodePipeline(url(i)), { stdio: 'ignore' }),
  );
  try {
    await sleep(3000);
    const c0 = procs.map((p) => processCpuSeconds(p.pid!)),
      t0 = performance.now();
    await sleep(SECONDS * 1000);
    const secs = (performance.now() - t0) / 1000;
    const cpu = procs.reduce((a, p, i) => a + processCpuSeconds(p.pid!) - c0[i]!, 0);
    return { cpu_percent_per_stream: r1((cpu / secs / STREAMS) * 100), load_average_1m: r1(loadavg()[0]!) };
  } finally {
    for (const p of procs) p.kill('SIGKILL');
  }
}

/** Daemon CPU per stream over SECONDS, decode and inference rates, and whether every stream kept up. */
async function sceneRun(
  d: TestDaemon,
  url: (i: number) => string,
  what: string,
  busy: boolean,
  extra: (i: number) => object = () => ({}),
) {
  const ids = Array.from({ length: STREAMS }, (_, i) => `${what}${i}`);
  await createBenchMonitors(d, ids, {
    url,
    inferenceFps: INFER_FPS,
    extra,
    ready: (s) => s.inference.decoded_frames > 25,
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
  const decodedFps = s1.map((s, i) => (s.inference.decoded_frames - s0[i].inference.decoded_frames) / secs);
  const inferFps = s1.map((s, i) => (s.inference.processed_frames - s0[i].inference.processed_frames) / secs);
  // Why the detector ran (motion, a face being confirmed, the keep-alive, ...), per stream per second.
  const reasons: Record<string, number> = {};
  for (const [i, s] of s1.entries())
    for (const [k, v] of Object.entries(s.motion.inferences as Record<string, number>))
      reasons[k] = (reasons[k] ?? 0) + (v - (s0[i].motion.inferences[k] ?? 0)) / secs / STREAMS;
  return {
    cpu_percent_per_stream: r1(((c.user + c.system) / 1e6 / secs / STREAMS) * 100),
    decoded_fps_min: r1(Math.min(...decodedFps)),
    inferences_per_second_mean: r3(inferFps.reduce((a, b) => a + b, 0) / STREAMS),
    inferences_per_second_by_reason: Object.fromEntries(Object.entries(reasons).map(([k, v]) => [k, r3(v)])),
    sustained: decodedFps.every((f) => f >= 0.95 * FPS) && (!busy || inferFps.every((f) => f >= 0.9 * INFER_FPS)),
    load_average_1m: r1(loadavg()[0]!),
  };
}

/** The daemon's own CPU with no monitor (HTTP polling of the bench aside): its fixed cost, % of a core. */
async function idleRun() {
  await sleep(2000);
  const c0 = process.cpuUsage(),
    t0 = performance.now();
  await sleep(Math.min(10, SECONDS) * 1000);
  const c = process.cpuUsage(c0);
  return { cpu_percent: r1(((c.user + c.system) / 1e6 / ((performance.now() - t0) / 1000)) * 100) };
}

/** person_enter delays (ms) from the moment the first face frame entered the server's payloader. */
async function latencyRun(d: TestDaemon, url: string, marks: number[], gate: boolean) {
  const id = gate ? 'lat_gated' : 'lat_ungated';
  await createBenchMonitors(d, [id], {
    url: () => url,
    inferenceFps: INFER_FPS,
    extra: { motion: { gate } },
    ready: (s) => s.inference.decoded_frames > 25,
  });
  const from = Date.now();
  await sleep(LATENCY_S * 1000);
  const events = (await call(d, 'GET', `/v1/monitors/${id}/events?limit=1000`)).json.events as {
    type: string;
    occurred_at: string;
  }[];
  await removeBenchMonitors(d, [id]);
  const enters = events.filter((e) => e.type === 'person_enter').map((e) => Date.parse(e.occurred_at));
  const delays = marks
    .filter((m) => m >= from)
    .flatMap((m) => {
      const t = enters.find((x) => x >= m && x < m + 4000);
      return t === undefined ? [] : [t - m];
    });
  return { n: delays.length, p50_ms: quantile(delays, 0.5), p90_ms: quantile(delays, 0.9) };
}

const obama = face('identities/obama/1.jpg');
const size = { width: W, height: H, fps: FPS, room: true };
const [emptyFrames, subFrames, busyFrames, loopFrames] = await Promise.all([
  renderScenario(mostlyEmptyScene(obama), size),
  // The same scene as a camera's 640x360 sub-stream.
  renderScenario(mostlyEmptyScene(obama), { ...size, width: 640, height: 360 }),
  renderScenario(
    [
      { image: obama, seconds: 4, at: { x: 0.1, y: 0.15, width: 0.2 }, to: { x: 0.6, y: 0.15, width: 0.2 } },
      { image: obama, seconds: 4, at: { x: 0.6, y: 0.15, width: 0.2 }, to: { x: 0.1, y: 0.15, width: 0.2 } },
    ],
    size,
  ),
  renderScenario(
    [
      { image: null, seconds: 4 },
      { image: obama, seconds: 4, at: { x: 0.4, y: 0.15, width: 0.2 } },
    ],
    size,
  ),
]);
const mounts = Array.from({ length: STREAMS }, (_, i) => `/s${i}`);
const marks: number[] = [];
// Pre-encoded (no encoder on the box while measuring), each mount at its own point of the loop.
const offsets = mounts.map((_, i) => (i * LOOP_S) / STREAMS);
const [emptySrv, subSrv, busySrv, live] = await Promise.all([
  startRtspServer({
    frames: emptyFrames,
    fps: FPS,
    bitrate: 4000,
    mounts,
    preencoded: { mountOffsetsSeconds: offsets },
  }),
  startRtspServer({ frames: subFrames, fps: FPS, bitrate: 1000, mounts, preencoded: { mountOffsetsSeconds: offsets } }),
  startRtspServer({
    frames: busyFrames,
    fps: FPS,
    bitrate: 4000,
    mounts,
    preencoded: { mountOffsetsSeconds: mounts.map((_, i) => i * 2) },
  }),
  startRtspServer({ frames: loopFrames, fps: FPS, bitrate: 4000, markFrame: 4 * FPS, onMark: (ms) => marks.push(ms) }),
]);
const d = await startTestDaemon({ toml: `${FAST_MONITORS_TOML}\nmax_streams = 32` });
let out;
try {
  await enrollObamaBiden(d, 'bench');
  const idle = await idleRun();
  console.error(JSON.stringify({ idle }));
  const decode = await decodeOnly((i) => emptySrv.url(`/s${i}`));
  console.error(JSON.stringify({ decode }));
  const subDecode = await decodeOnly((i) => subSrv.url(`/s${i}`));
  console.error(JSON.stringify({ subDecode }));
  const empty = await sceneRun(d, (i) => emptySrv.url(`/s${i}`), 'empty', false);
  console.error(JSON.stringify({ empty }));
  // Two streams per camera: detection on the sub-stream, the main stream opened while something moves.
  const dual = await sceneRun(
    d,
    (i) => emptySrv.url(`/s${i}`),
    'dual',
    false,
    (i) => ({ detect_url: subSrv.url(`/s${i}`) }),
  );
  console.error(JSON.stringify({ dual }));
  const busy = await sceneRun(d, (i) => busySrv.url(`/s${i}`), 'busy', true);
  console.error(JSON.stringify({ busy }));
  const latency = {
    loop: `4 s room, 4 s a face (cut in), ${W}x${H} ${FPS} fps, inference ${INFER_FPS} fps, confirm_frames 3`,
    gate_on: await latencyRun(d, live.url(), marks, true),
    gate_off: await latencyRun(d, live.url(), marks, false),
  };
  out = {
    at: new Date().toISOString(),
    machine: { cpus: CORES, model: cpus()[0]?.model },
    streams: STREAMS,
    seconds: SECONDS,
    source: `${W}x${H} H.264 ${FPS} fps, 4 Mbit/s, inference ${INFER_FPS} fps, motion gate on (default)`,
    daemon_idle: idle,
    decode_only: { ...decode, projected_streams: projected(decode.cpu_percent_per_stream) },
    mostly_empty: { ...empty, projected_streams: projected(empty.cpu_percent_per_stream) },
    busy: { ...busy, projected_streams: projected(busy.cpu_percent_per_stream) },
    sub_stream_decode_only: { ...subDecode, projected_streams: projected(subDecode.cpu_percent_per_stream) },
    mostly_empty_with_sub_stream: { ...dual, projected_streams: projected(dual.cpu_percent_per_stream) },
    mostly_empty_with_sub_stream_to_decode_only_capacity: r3(
      decode.cpu_percent_per_stream / dual.cpu_percent_per_stream,
    ),
    mostly_empty_to_decode_only_capacity: r3(decode.cpu_percent_per_stream / empty.cpu_percent_per_stream),
    // The daemon's fixed cost taken off (it does not grow with the streams).
    mostly_empty_net_to_decode_only_capacity: r3(
      decode.cpu_percent_per_stream / (empty.cpu_percent_per_stream - idle.cpu_percent / STREAMS),
    ),
    busy_to_decode_only_capacity: r3(decode.cpu_percent_per_stream / busy.cpu_percent_per_stream),
    latency,
  };
} finally {
  await d.close();
  await Promise.all([emptySrv.stop(), subSrv.stop(), busySrv.stop(), live.stop()]);
}
console.log(JSON.stringify(out, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/capacity.json'), JSON.stringify(out, null, 2));
