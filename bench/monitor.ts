/**
 * RTSP monitor benchmark: N monitors (1 and 4) on a 1280x720 H.264 stream at 25 fps (GStreamer's RTSP
 * server, test/rtsp/server.py; the N monitors are N independent RTSP clients and decoders of one
 * shared mount) with inference at 5 fps, on this machine. Per N:
 *   - decode-only CPU: the same streams with inference at 0.1 fps (process CPU time / wall, 100% = one core),
 *     beside N gst-launch-1.0 processes running the same pipeline (appsink -> fakesink) in the same run
 *   - capacity (--capacity 4,6,8): for each N, whether N streams sustain 5 inference fps (no
 *     capacity_limited, inference fps >= 95 % of the target on every stream), over --capacity-seconds.
 *     --capacity-phases locked (default): the N clients of the one shared live mount see the face enter in
 *     the same frame (all N need their embeddings in the same interval: the worst case). independent: N
 *     mounts replay the stream encoded once at start (no encoder on the box, as with real cameras), each
 *     from a seeded random start second of the loop, so the faces enter at unrelated times as on N
 *     cameras; both: each N in both ways
 *   - CPU, actual inference fps and decoded fps at 5 fps inference
 *   - end-to-end delay from frame to event (--confirm-frames, default 3 as the product): the server prints
 *     when the first frame with the face enters its payloader; delay_ms is the person_enter event's
 *     occurred_at minus that (transport + jitter buffer + decode + sampling phase + (confirm_frames - 1)
 *     inference intervals + the confirming frame's own wait and inference); delay_from_decode_ms starts
 *     when the confirming frame reached the daemon (the goal's "after its frame is decoded")
 *   - RSS sampled every 5 s over the run (it must stay flat)
 * Runs on jemalloc as the daemon does (BENCH_MALLOC=glibc: glibc's malloc, for comparisons).
 * Usage: npx tsx bench/monitor.ts [--duration 600] [--streams 1,4] [--decode-seconds 30]
 *          [--capacity 4,6,8] [--capacity-seconds 60] [--capacity-phases locked|independent|both] [--confirm-frames 3]
 *          [--decode-only] [--settle-seconds 0]
 *   --decode-only: only the daemon's idle floor and the decode-only comparison with gst-launch-1.0 per N
 *   (no 5 fps run, no capacity runs; --duration is ignored)
 *   -> prints JSON, writes bench/results/monitor.json (monitor-decode.json with --decode-only)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { DEFAULT_MONITOR_PIPELINE } from '../src/config/schema.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import type { MonitorEventSink } from '../src/monitors/eventSink.js';
import type { SessionDeps } from '../src/monitors/monitorSession.js';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { call, face, REPO, startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../test/helpers/monitors.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';
import { growthPer10Min } from './memoryTrend.js';
import { processCpuSeconds, threadCpuByTid, threadCpuSeconds, threadRoles } from './procStat.js';
import { DAEMON_NODE_FLAGS } from '../src/system/nodeFlags.js';
import { memoryAllocator } from '../src/system/allocator.js';
import { rerunAsDaemon } from './daemonProcess.js';

// Each monitor parks a GStreamer pull in libuv's pool (see docs/operations/systemd.md): the pool size must be set before start,
// and the daemon runs in this process, so it is started again with the daemon's V8 flags and allocator too.
rerunAsDaemon({ nodeFlags: DAEMON_NODE_FLAGS, env: { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '16' } });

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '600' },
    streams: { type: 'string', default: '1,4' },
    'decode-seconds': { type: 'string', default: '30' },
    capacity: { type: 'string', default: '' },
    'capacity-seconds': { type: 'string', default: '60' },
    // The monitors' confirm_frames: the product default (3) unless given; the goal's latency is from the
    // confirming frame's arrival to its person_enter (delay_from_decode_ms).
    'confirm-frames': { type: 'string', default: '3' },
    // Each monitor's event ring (the product default is 1000): the rings hold the events of the whole run
    // for the latency figures and grow the event loop's heap until full (~450 events per monitor per 30 min).
    'event-buffer-size': { type: 'string', default: '10000' },
    // Extra [monitors] / [inference] settings for a comparison run, e.g. "monitors.reidentify_interval_seconds=0,
    // monitors.trim_letterbox=false,inference.intra_op_threads=1" (default: the product defaults).
    set: { type: 'string', default: '' },
    'decode-only': { type: 'boolean', default: false },
    // Seconds to wait after the daemon has started (and enrolled) before phase 0, so the measurements do not
    // include its start-up tail (V8's memory-reducing GCs and late compilation, ~1 % of a core for ~30 s).
    'settle-seconds': { type: 'string', default: '0' },
    'capacity-phases': { type: 'string', default: 'locked' },
  },
});
const DECODE_ONLY = values['decode-only'];
const CAPACITY = !DECODE_ONLY && values.capacity ? values.capacity.split(',').map(Number) : [];
const CAPACITY_S = Number(values['capacity-seconds']);
const PHASES =
  values['capacity-phases'] === 'both'
    ? (['locked', 'independent'] as const)
    : [values['capacity-phases'] as 'locked' | 'independent'];
if (!PHASES.every((p) => p === 'locked' || p === 'independent'))
  throw new Error('--capacity-phases: locked, independent or both');
const CONFIRM = Number(values['confirm-frames']);
const DURATION_S = Number(values.duration);
const DECODE_S = Number(values['decode-seconds']);
const STREAMS = values.streams.split(',').map(Number);
const FPS = 25,
  W = 1280,
  H = 720,
  INFER_FPS = 5;
const EMPTY_S = 4,
  FACE_S = 4;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const r1 = (v: number) => Math.round(v * 10) / 10;
const r3 = (x: number) => Math.round(x * 1000) / 1000;
const mb = (b: number) => r1(b / 2 ** 20);
const mbOrNull = (b: number | null) => (b === null ? null : mb(b));

/** CPU % of this process (100 = one core) over a window. */
async function cpuOver(ms: number): Promise<number> {
  const c0 = process.cpuUsage(),
    t0 = performance.now();
  await sleep(ms);
  const c = process.cpuUsage(c0);
  return r1(((c.user + c.system) / 1000 / (performance.now() - t0)) * 100);
}

/** CPU seconds used per key over `seconds` of wall time as % of one core, largest first. */
const percentOfCore = (sum: Map<string, number>, seconds: number): Record<string, number> =>
  Object.fromEntries(
    [...sum]
      .filter(([, v]) => v > 0)
      .sort((x, y) => y[1] - x[1])
      .map(([k, v]) => [k, r1((v / seconds) * 100)]),
  );

/** CPU % (100 = one core) per thread name between two threadCpuSeconds snapshots, summed over processes. */
function byThread(
  before: Map<string, number>[],
  after: Map<string, number>[],
  seconds: number,
): Record<string, number> {
  const sum = new Map<string, number>();
  after.forEach((a, i) => {
    for (const [k, v] of a) sum.set(k, (sum.get(k) ?? 0) + v - (before[i]!.get(k) ?? 0));
  });
  return percentOfCore(sum, seconds);
}

/** CPU % (100 = one core) per thread role (threadRoles) between two threadCpuByTid snapshots of this process. */
function byRole(
  before: Map<number, { seconds: number }>,
  after: Map<number, { name: string; seconds: number }>,
  seconds: number,
): Record<string, number> | null {
  const roles = threadRoles(process.pid);
  if (!roles) return null;
  const sum = new Map<string, number>();
  for (const [tid, a] of after) {
    const role = roles.get(tid) ?? a.name.replace(/\d+$/, '#');
    sum.set(role, (sum.get(role) ?? 0) + a.seconds - (before.get(tid)?.seconds ?? 0));
  }
  return percentOfCore(sum, seconds);
}

/** Threads that are neither the JS main thread nor Node's own ("node": workers, libuv pool, V8): GStreamer's. */
const gstreamerShare = (t: Record<string, number>) =>
  r1(
    Object.entries(t)
      .filter(([k]) => k !== 'main' && k !== 'node')
      .reduce((a, [, v]) => a + v, 0),
  );

async function createMonitors(
  d: TestDaemon,
  n: number,
  url: string | ((i: number) => string),
  inferenceFps: number,
): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `bench${i + 1}`);
  for (const [i, id] of ids.entries()) {
    const r = await call(d, 'POST', '/v1/monitors', {
      id,
      name: id,
      source: { url: typeof url === 'string' ? url : url(i) },
      collection_id: 'bench',
      inference_fps: inferenceFps,
      event_buffer_size: Number(values['event-buffer-size']),
      event_policy: { confirm_frames: CONFIRM, absence_timeout_seconds: 1, cooldown_seconds: 0 },
    });
    if (r.status !== 201) throw new Error(JSON.stringify(r.json));
  }
  await waitFor(
    'all monitors running',
    async () => {
      const states = await Promise.all(
        ids.map(async (id) => (await call(d, 'GET', `/v1/monitors/${id}/state`)).json.state),
      );
      return states.every((s) => s.status === 'running' && s.inference.decoded_frames > FPS) ? true : undefined;
    },
    60_000,
    500,
  );
  return ids;
}

async function states(d: TestDaemon, ids: string[]) {
  return Promise.all(ids.map(async (id) => (await call(d, 'GET', `/v1/monitors/${id}/state`)).json.state));
}

/** The daemon's pipeline for a 0.1 fps monitor, run by gst-launch-1.0 with a fakesink instead of the appsink. */
function gstLaunchArgs(url: string): string[] {
  const launch = DEFAULT_MONITOR_PIPELINE.replaceAll('{latency_ms}', '0')
    .replaceAll('{max_fps}', '2')
    .replaceAll('{max_side}', '1280')
    .replace('rtspsrc name=src', `rtspsrc name=src location=${url}`)
    .replace(/appsink name=sink.*$/, 'fakesink sync=false');
  return ['-q', ...launch.split(' ')];
}

/** CPU % (100 = one core) of N gst-launch-1.0 processes decoding the same stream with the same pipeline. */
async function gstLaunchCpu(n: number, url: string): Promise<{ total: number; by_thread: Record<string, number> }> {
  const kids: ChildProcess[] = Array.from({ length: n }, () =>
    spawn('gst-launch-1.0', gstLaunchArgs(url), { stdio: 'ignore' }),
  );
  try {
    await sleep(3000);
    const c0 = kids.map((k) => processCpuSeconds(k.pid!)),
      t0 = performance.now();
    const th0 = kids.map((k) => threadCpuSeconds(k.pid!));
    await sleep(DECODE_S * 1000);
    const th1 = kids.map((k) => threadCpuSeconds(k.pid!));
    const used = kids.reduce((a, k, i) => a + processCpuSeconds(k.pid!) - c0[i]!, 0);
    const secs = (performance.now() - t0) / 1000;
    return { total: r1((used / secs) * 100), by_thread: byThread(th0, th1, secs) };
  } finally {
    for (const k of kids) k.kill('SIGKILL');
  }
}

/** The daemon's inference queue-wait histogram (GET /metrics): job count, total seconds, cumulative count per bucket bound. */
async function queueWaits(d: TestDaemon): Promise<{ count: number; sum: number; le: Map<number, number> }> {
  const text = await (await fetch(d.url + '/metrics', { headers: d.auth })).text();
  const le = new Map<number, number>();
  let count = 0,
    sum = 0;
  for (const line of text.split('\n')) {
    const b = line.match(/^vigil_inference_queue_wait_seconds_bucket\{le="([^"]+)"\} (\S+)/);
    if (b && b[1] !== '+Inf') le.set(Number(b[1]), Number(b[2]));
    const c = line.match(/^vigil_inference_queue_wait_seconds_count (\S+)/);
    if (c) count = Number(c[1]);
    const m = line.match(/^vigil_inference_queue_wait_seconds_sum (\S+)/);
    if (m) sum = Number(m[1]);
  }
  return { count, sum, le };
}

/** Between two histogram reads: jobs, mean wait, and the share of jobs that waited longer than 50 and 100 ms. */
function waitsBetween(a: Awaited<ReturnType<typeof queueWaits>>, b: Awaited<ReturnType<typeof queueWaits>>) {
  const jobs = b.count - a.count;
  const over = (bound: number) => (jobs > 0 ? r3(1 - ((b.le.get(bound) ?? 0) - (a.le.get(bound) ?? 0)) / jobs) : 0);
  return {
    jobs,
    mean_wait_ms: jobs > 0 ? r1(((b.sum - a.sum) * 1000) / jobs) : 0,
    share_waited_over_50ms: over(0.05),
    share_waited_over_100ms: over(0.1),
  };
}

/** N streams at 5 inference fps for `seconds`: sustained when no stream is capacity_limited and each reaches 95 % of the target. */
async function capacityRun(
  n: number,
  d: TestDaemon,
  url: string | ((i: number) => string),
  seconds: number,
  phases: 'locked' | 'independent',
  offsets: number[] = [],
) {
  const ids = await createMonitors(d, n, url, INFER_FPS);
  await sleep(5000);
  const s0 = await states(d, ids);
  const w0 = await queueWaits(d);
  const c0 = process.cpuUsage(),
    t0 = performance.now();
  let limited = false;
  // Every poll: how many streams showed capacity_limited, and the longest processing_ms (wait + run) seen.
  let polls = 0,
    limitedPolls = 0,
    maxProcessingMs = 0;
  const watch = setInterval(() => {
    void states(d, ids).then(
      (ss) => {
        polls++;
        if (ss.some((s) => s.inference.capacity_limited)) {
          limited = true;
          limitedPolls++;
        }
        for (const s of ss) maxProcessingMs = Math.max(maxProcessingMs, s.inference.processing_ms ?? 0);
      },
      () => undefined,
    );
  }, 2000);
  await sleep(seconds * 1000);
  clearInterval(watch);
  const secs = (performance.now() - t0) / 1000,
    c = process.cpuUsage(c0);
  const s1 = await states(d, ids);
  const waits = waitsBetween(w0, await queueWaits(d));
  for (const id of ids) await call(d, 'DELETE', `/v1/monitors/${id}`);
  const fps = s1.map((s, i) => r1((s.inference.processed_frames - s0[i].inference.processed_frames) / secs));
  const sustained = !limited && fps.every((f) => f >= 0.95 * INFER_FPS);
  const sum = (k: string) => s1.reduce((a, s, i) => a + ((s.inference[k] ?? 0) - (s0[i].inference[k] ?? 0)), 0);
  return {
    streams: n,
    phases,
    ...(phases === 'independent' ? { start_offsets_s: offsets.slice(0, n) } : {}),
    sustained,
    capacity_limited_seen: limited,
    polls,
    polls_with_capacity_limited: limitedPolls,
    processing_ms_max_polled: r1(maxProcessingMs),
    queue_wait: waits,
    inference_fps_per_stream: fps,
    processing_ms_last: s1.map((s) => s.inference.processing_ms),
    embedded_faces: sum('embedded_faces'),
    reused_identities: sum('reused_identities'),
    // Every frame over the interval, not only those a poll happened to see (capacity_limited is the last frame's).
    late_frames: sum('late_frames'),
    late_frame_share: r3(sum('late_frames') / Math.max(1, sum('processed_frames'))),
    cpu_percent: r1(((c.user + c.system) / 1000 / (secs * 1000)) * 100),
    seconds: r1(secs),
    load_average_1m_end: r1(loadavg()[0]!),
  };
}

async function runFor(n: number, d: TestDaemon, url: string, marks: number[], serverPid: number) {
  // Phase 0: the daemon with no monitor (HTTP server, event history timers): its floor.
  const ith0 = threadCpuByTid(process.pid),
    it0 = performance.now();
  const idleCpu = await cpuOver(Math.min(DECODE_S, 10) * 1000);
  const idleByThread = byRole(ith0, threadCpuByTid(process.pid), (performance.now() - it0) / 1000);
  // Phase 1: decode-dominated (inference at 0.1 fps), then gst-launch-1.0 with the same pipeline.
  let ids = await createMonitors(d, n, url, 0.1);
  await sleep(3000);
  const dth0 = threadCpuSeconds(process.pid),
    dt0 = performance.now(),
    decodeLoad0 = loadavg()[0]!,
    tid0 = threadCpuByTid(process.pid);
  const decodeCpu = await cpuOver(DECODE_S * 1000);
  const decodeSecs = (performance.now() - dt0) / 1000;
  const decodeByThread = byThread([dth0], [threadCpuSeconds(process.pid)], decodeSecs);
  const decodeByRole = byRole(tid0, threadCpuByTid(process.pid), decodeSecs);
  for (const id of ids) await call(d, 'DELETE', `/v1/monitors/${id}`);
  const gst = await gstLaunchCpu(n, url);
  const gstCpu = gst.total;
  const decode = {
    streams: n,
    daemon_idle_cpu_percent: idleCpu,
    daemon_idle_cpu_by_role: idleByThread,
    decode_only_cpu_percent: decodeCpu,
    gst_launch_same_pipeline_cpu_percent: gstCpu,
    decode_only_ratio_to_gst_launch: gstCpu > 0 ? r1((decodeCpu / gstCpu) * 100) / 100 : null,
    // Where it goes: GStreamer's own threads (receive, depayload, decode, drop, scale, convert) against
    // gst-launch's same threads, and the rest (main: the frame copied into JS and handed on; node: the
    // libuv pool's parked pulls, the inference workers at 0.1 fps, V8's helpers).
    decode_only_cpu_by_thread: decodeByThread,
    gst_launch_cpu_by_thread: gst.by_thread,
    // The same window by what each thread is (one gdb snapshot of the stacks after it; null without gdb):
    // V8's platform threads (GC), libuv's pool, the workers' JS threads, ONNX Runtime's pools, GStreamer's.
    decode_only_cpu_by_role: decodeByRole,
    decode_only_gstreamer_threads_ratio:
      gstreamerShare(gst.by_thread) > 0
        ? r1((gstreamerShare(decodeByThread) / gstreamerShare(gst.by_thread)) * 100) / 100
        : null,
    decode_load_average_1m: [r1(decodeLoad0), r1(loadavg()[0]!)],
  };
  if (DECODE_ONLY) return decode;
  // Phase 2: inference at 5 fps for the run duration.
  ids = await createMonitors(d, n, url, INFER_FPS);
  await sleep(5000);
  const s0 = await states(d, ids);
  const srv0 = processCpuSeconds(serverPid);
  const c0 = process.cpuUsage(),
    t0 = performance.now(),
    wall0 = Date.now(),
    load0 = loadavg()[0]!;
  const rss: number[] = [];
  // Beside RSS, the main isolate's V8 heap and the memory behind its Buffers/ArrayBuffers (frames), to
  // tell JS growth from native growth (workers' heaps, libvips, ORT, GStreamer, malloc arenas).
  const heap: number[] = [],
    external: number[] = [],
    anon: number[] = [];
  const sample = () => {
    const m = process.memoryUsage();
    rss.push(m.rss);
    heap.push(m.heapUsed);
    external.push(m.external);
    // Anonymous resident memory (heaps, malloc, thread stacks) without the mapped files (binaries, libraries).
    anon.push(Number(/^RssAnon:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0) * 1024);
  };
  const sampler = setInterval(sample, 5000);
  sample();
  await sleep(DURATION_S * 1000);
  clearInterval(sampler);
  sample();
  const c = process.cpuUsage(c0),
    wallMs = performance.now() - t0;
  const srvCpu = r1(((processCpuSeconds(serverPid) - srv0) / (wallMs / 1000)) * 100);
  const s1 = await states(d, ids);
  const delays: number[] = [];
  const fromDecode: number[] = [];
  let enters = 0;
  for (const id of ids) {
    const ev = (await call(d, 'GET', `/v1/monitors/${id}/events?limit=1000`)).json.events as {
      id: string;
      type: string;
      occurred_at: string;
    }[];
    const entersAt = ev
      .filter((e) => e.type === 'person_enter')
      .map((e) => Date.parse(e.occurred_at))
      .filter((t) => t >= wall0);
    for (const e of ev) {
      const at = frameAt.get(e.id);
      if (e.type === 'person_enter' && at !== undefined && at >= wall0) fromDecode.push(Date.parse(e.occurred_at) - at);
    }
    enters += entersAt.length;
    for (const m of marks.filter((m) => m >= wall0)) {
      const e = entersAt.find((t) => t >= m && t < m + FACE_S * 1000);
      if (e !== undefined) delays.push(e - m);
    }
  }
  for (const id of ids) await call(d, 'DELETE', `/v1/monitors/${id}`);
  const secs = wallMs / 1000;
  const half = Math.floor(rss.length / 2);
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  // One average per minute (12 samples of 5 s), in MB.
  const perMinuteMb = (xs: number[]) =>
    Array.from({ length: Math.ceil(xs.length / 12) }, (_, i) => mb(avg(xs.slice(i * 12, i * 12 + 12))));
  return {
    ...decode,
    cpu_percent: r1(((c.user + c.system) / 1000 / wallMs) * 100),
    rtsp_server_cpu_percent: srvCpu,
    decoded_fps_per_stream: s1.map((s, i) => r1((s.inference.decoded_frames - s0[i].inference.decoded_frames) / secs)),
    inference_fps_per_stream: s1.map((s, i) =>
      r1((s.inference.processed_frames - s0[i].inference.processed_frames) / secs),
    ),
    actual_fps_reported: s1.map((s) => s.inference.actual_fps),
    processing_ms_last: s1.map((s) => s.inference.processing_ms),
    capacity_limited: s1.map((s) => s.inference.capacity_limited),
    reconnects: s1.map((s) => s.reconnects),
    person_enter_events: enters,
    delay_ms: {
      n: delays.length,
      p50: pct(delays, 50),
      p90: pct(delays, 90),
      max: delays.length ? Math.max(...delays) : null,
    },
    // From the moment the processed frame reached the daemon (decoded, scaled, converted: the appsink) to its
    // person_enter: the daemon's own part (waiting for the loop and a worker, inference, search, tracking).
    // delay_ms minus this is transport + decode + the sampling phase (at 5 fps the first face frame is kept
    // only if it falls on the kept 1-in-5; otherwise the face is seen in the next kept frame, up to 160 ms on)
    // + (confirm_frames - 1) inference intervals.
    delay_from_decode_ms: {
      n: fromDecode.length,
      p50: pct(fromDecode, 50),
      p90: pct(fromDecode, 90),
      max: fromDecode.length ? Math.max(...fromDecode) : null,
    },
    load_average_1m: [r1(load0), r1(loadavg()[0]!)],
    rss_mb: {
      start: mb(rss[0]!),
      end: mb(rss[rss.length - 1]!),
      min: mb(Math.min(...rss)),
      max: mb(Math.max(...rss)),
      first_half_avg: mb(avg(rss.slice(0, half))),
      second_half_avg: mb(avg(rss.slice(half))),
      samples: rss.length,
      // One average per minute (12 samples): tells a warm-up that levels off from a steady climb.
      per_minute_avg: perMinuteMb(rss),
      // Over the run's last ten minutes (null for a shorter run).
      growth_last_10_min_mb_per_10_min: mbOrNull(growthPer10Min(rss, 5)),
      anon_growth_last_10_min_mb_per_10_min: mbOrNull(growthPer10Min(anon, 5)),
      anon_per_minute_avg: perMinuteMb(anon),
      main_heap_used_per_minute_avg: perMinuteMb(heap),
      main_external_per_minute_avg: perMinuteMb(external),
    },
    duration_s: r1(secs),
  };
}

const frames = await renderScenario(
  [
    { image: null, seconds: EMPTY_S },
    { image: face('identities/obama/1.jpg'), seconds: FACE_S },
  ],
  { width: W, height: H, fps: FPS },
);
const marks: number[] = [];
const server = await startRtspServer({
  frames,
  fps: FPS,
  bitrate: 4000,
  markFrame: EMPTY_S * FPS,
  onMark: (ms) => marks.push(ms),
});
// Independent phases: seeded random start seconds of the loop, one mount per stream (see the header).
const OFFSETS = (() => {
  let x = 0x9e3779b9;
  return Array.from({ length: Math.max(0, ...CAPACITY) }, () => {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return Math.floor((x / 2 ** 32) * (EMPTY_S + FACE_S));
  });
})();
const independent =
  CAPACITY.length > 0 && PHASES.includes('independent')
    ? await startRtspServer({
        frames,
        fps: FPS,
        bitrate: 4000,
        mounts: OFFSETS.map((_, i) => `/s${i}`),
        preencoded: { mountOffsetsSeconds: OFFSETS },
      })
    : null;
const SETTINGS = values.set ? values.set.split(',').map((kv) => kv.split('=') as [string, string]) : [];
const section = (name: string) =>
  SETTINGS.filter(([k]) => k.startsWith(`${name}.`))
    .map(([k, v]) => `${k.slice(name.length + 1)} = ${v}`)
    .join('\n');
const d = await startTestDaemon({
  toml: `${FAST_MONITORS_TOML}\nmax_streams = 16\n${section('monitors')}${section('inference') ? `\n[inference]\n${section('inference')}` : ''}`,
});
// When the frame behind each person_enter reached the daemon: the session's event sink sees the frame
// (with its arrival time) beside every event. Bench-only wrap of the manager's session dependencies.
const frameAt = new Map<string, number>();
{
  const mgr = d.runtime.monitors as unknown as { sessionDeps: () => SessionDeps | null };
  const inner = mgr.sessionDeps;
  mgr.sessionDeps = () => {
    const deps = inner();
    if (!deps) return deps;
    const sink = deps.events;
    const events: MonitorEventSink = {
      event: (e, ctx) => {
        const at = (ctx.frame as { at?: number } | null)?.at;
        if (e.type === 'person_enter' && at !== undefined) frameAt.set(e.id, at);
        sink?.event(e, ctx);
      },
      sessionEnded: (id, epoch) => sink?.sessionEnded(id, epoch),
    };
    return { ...deps, events };
  };
}
await enrollObamaBiden(d, 'bench');
await sleep(Number(values['settle-seconds']) * 1000);
const results = [];
const capacity: Awaited<ReturnType<typeof capacityRun>>[] = [];
try {
  for (const n of STREAMS) {
    const r = await runFor(n, d, server.url(), marks, server.child.pid!);
    console.error(JSON.stringify(r));
    results.push(r);
  }
  for (const n of CAPACITY) {
    for (const phases of PHASES) {
      const r =
        phases === 'locked'
          ? await capacityRun(n, d, server.url(), CAPACITY_S, phases)
          : await capacityRun(n, d, (i) => independent!.url(`/s${i}`), CAPACITY_S, phases, OFFSETS);
      console.error(JSON.stringify(r));
      capacity.push(r);
    }
  }
} finally {
  await d.close();
  await server.stop();
  await independent?.stop();
}
const out = {
  at: new Date().toISOString(),
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    uv_threadpool_size: process.env.UV_THREADPOOL_SIZE,
    memory_allocator: memoryAllocator(),
    load_average_at_end: loadavg().map(r1),
  },
  stream: {
    width: W,
    height: H,
    fps: FPS,
    codec: 'H.264 (x264 ultrafast, zerolatency, 4 Mbit/s)',
    loop: `${EMPTY_S} s empty, ${FACE_S} s face`,
  },
  settings: values.set || 'defaults',
  settle_seconds: Number(values['settle-seconds']),
  inference_fps: INFER_FPS,
  confirm_frames: CONFIRM,
  event_buffer_size: Number(values['event-buffer-size']),
  duration_s: DURATION_S,
  decode_seconds: DECODE_S,
  results,
  capacity,
  streams_sustained: capacity
    .filter((c) => c.sustained && c.phases === 'locked')
    .reduce((m, c) => Math.max(m, c.streams), 0),
  streams_per_core: r1(
    capacity.filter((c) => c.sustained && c.phases === 'locked').reduce((m, c) => Math.max(m, c.streams), 0) /
      cpus().length,
  ),
  streams_sustained_independent: capacity
    .filter((c) => c.sustained && c.phases === 'independent')
    .reduce((m, c) => Math.max(m, c.streams), 0),
};
console.log(JSON.stringify(out, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
// A decode-only run keeps the full run's results file.
writeFileSync(
  join(REPO, `bench/results/${DECODE_ONLY ? 'monitor-decode' : 'monitor'}.json`),
  JSON.stringify(out, null, 2),
);
