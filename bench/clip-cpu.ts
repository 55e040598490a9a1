/**
 * What event clips cost, measured on this machine (ratios within one run; timings here are noisy): daemon CPU
 * (% of one core, GStreamer included: it runs in the daemon's process) per stream on a 1280x720 25 fps H.264
 * stream at 4 Mbit/s (encoded live by the RTSP test server in its own
 * process; every monitor reads the same mount), in four phases:
 *   - decode_only: an empty room, inference at 0.1 fps, motion gate off, clips off (the anchor)
 *   - clips_idle: the same with clips on: the encoded stream teed into mp4mux, the pre-roll kept in memory
 *   - face_no_clips: a face always in view, inference at INFER_FPS, gate off, clips off
 *   - face_recording: the same with clips on: a clip records for the whole phase (checked), written to disk
 * The four phases run `rounds` times in turn (the box's load drifts); the summary is the mean over the rounds.
 * Usage: npx tsx bench/clip-cpu.ts [--streams 2] [--seconds 15] [--rounds 2]
 *   -> prints JSON, writes bench/results/clip-cpu.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DAEMON_NODE_FLAGS } from '../src/system/nodeFlags.js';
import { call, face, REPO, startTestDaemon, type TestDaemon } from '../test/helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../test/helpers/monitors.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';
import { rerunAsDaemon } from './daemonProcess.js';

// Each monitor parks a GStreamer pull in libuv's pool: the pool size is set before Node starts.
rerunAsDaemon({ nodeFlags: DAEMON_NODE_FLAGS, env: { UV_THREADPOOL_SIZE: process.env.UV_THREADPOOL_SIZE ?? '16' } });

const { values } = parseArgs({
  options: {
    streams: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '2' },
  },
});
const ROUNDS = Number(values.rounds);
const STREAMS = Number(values.streams);
const SECONDS = Number(values.seconds);
const W = 1280,
  H = 720,
  FPS = 25,
  KBITS = 4000,
  INFER_FPS = 2;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r1 = (v: number) => Math.round(v * 10) / 10;
const r3 = (v: number) => Math.round(v * 1000) / 1000;
type Ev = {
  type: string;
  clip: { status: string; bytes: number; duration_ms: number; end_reason: string | null } | null;
};

/** Daemon CPU per stream over SECONDS with `extra` monitor settings; the clips written meanwhile. */
async function phase(d: TestDaemon, name: string, url: () => string, extra: object, recording: boolean) {
  const ids = Array.from({ length: STREAMS }, (_, i) => `${name}${i}`);
  for (const id of ids) {
    const r = await call(d, 'POST', '/v1/monitors', {
      id,
      name: id,
      source: { url: url() },
      collection_id: 'bench',
      motion: { gate: false },
      event_policy: { confirm_frames: 2, absence_timeout_seconds: 2, cooldown_seconds: 0 },
      ...extra,
    });
    if (r.status !== 201) throw new Error(JSON.stringify(r.json));
  }
  const enters = async (id: string) =>
    ((await call(d, 'GET', `/v1/events?monitor_id=${id}&type=person_enter`)).json.events ?? []) as Ev[];
  let last: unknown;
  await waitFor(
    `${name}: streams running${recording ? ', a clip recording on each' : ''}`,
    async () => {
      const states = await Promise.all(
        ids.map(async (id) => (await call(d, 'GET', `/v1/monitors/${id}/state`)).json.state),
      );
      last = states.map((s) => ({ status: s.status, frames: s.inference.processed_frames, error: s.last_error }));
      if (!states.every((s) => s.status === 'running' && s.inference.processed_frames > 0)) return undefined;
      if (!recording) return true;
      const clips = await Promise.all(ids.map(async (id) => (await enters(id))[0]?.clip?.status));
      return clips.every((s) => s === 'recording') ? true : undefined;
    },
    60_000,
    500,
  ).catch((e: Error) => {
    throw new Error(`${e.message}: ${JSON.stringify(last)}`);
  });
  await sleep(2000);
  const c0 = process.cpuUsage(),
    t0 = performance.now();
  await sleep(SECONDS * 1000);
  const c = process.cpuUsage(c0),
    secs = (performance.now() - t0) / 1000;
  const rss = process.memoryUsage().rss;
  let clips = null;
  if (recording) {
    const stillRecording = await Promise.all(ids.map(async (id) => (await enters(id))[0]?.clip?.status));
    if (!stillRecording.every((s) => s === 'recording'))
      throw new Error(`${name}: a clip ended during the phase: ${stillRecording.join()}`);
  }
  for (const id of ids) await call(d, 'PATCH', `/v1/monitors/${id}`, { enabled: false });
  if (recording) {
    // Stopping the monitor ends its clip (monitor_stopped): then its size and length are known.
    const ended = await waitFor(
      `${name}: clips ended`,
      async () => {
        const cs = await Promise.all(ids.map(async (id) => (await enters(id))[0]?.clip));
        return cs.every((x) => x?.status === 'ready') ? cs : undefined;
      },
      30_000,
      500,
    );
    const bytes = ended.reduce((a, x) => a + x!.bytes, 0);
    const ms = ended.reduce((a, x) => a + x!.duration_ms, 0);
    clips = {
      n: ended.length,
      seconds_each: r1(ms / 1000 / ended.length),
      mbit_per_second: r3((bytes * 8) / 1e6 / (ms / 1000)),
      end_reasons: [...new Set(ended.map((x) => x!.end_reason))],
    };
  }
  for (const id of ids) await call(d, 'DELETE', `/v1/monitors/${id}`);
  return {
    cpu_percent_per_stream: r1(((c.user + c.system) / 1e6 / secs / STREAMS) * 100),
    rss_mib: Math.round(rss / 2 ** 20),
    load_average_1m: r1(loadavg()[0]!),
    ...(clips ? { clips } : {}),
  };
}

const [room, person] = await Promise.all([
  renderScenario([{ image: null, seconds: 2 }], { width: W, height: H, fps: FPS, room: true }),
  renderScenario([{ image: face('identities/obama/1.jpg'), seconds: 2, at: { x: 0.4, y: 0.15, width: 0.2 } }], {
    width: W,
    height: H,
    fps: FPS,
    room: true,
  }),
]);
// Encoded live by the test server (one encoder per scene, every monitor a client of the same mount; the
// encoder runs in the server's process, not the daemon's): its pre-encoded replay stamps no PTS on the first
// access units, and mp4mux stops the whole pipeline at a buffer without one (see docs/performance.md).
const [empty, faces] = await Promise.all([
  startRtspServer({ frames: room, fps: FPS, bitrate: KBITS }),
  startRtspServer({ frames: person, fps: FPS, bitrate: KBITS }),
]);
// Clips long enough for a whole phase; [monitors.clips] stays off, each monitor says.
const d = await startTestDaemon({
  toml: `${FAST_MONITORS_TOML}\nmax_streams = 16\n[monitors.clips]\nmax_seconds = ${SECONDS + 120}\n[events]\nflush_interval_ms = 100`,
});
let out;
try {
  await enrollObamaBiden(d, 'bench');
  const room = () => empty.url();
  const face = () => faces.url();
  const idle = { inference_fps: 0.1 };
  const live = { inference_fps: INFER_FPS };
  type Phase = Awaited<ReturnType<typeof phase>>;
  const rounds: { decode_only: Phase; clips_idle: Phase; face_no_clips: Phase; face_recording: Phase }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    rounds.push({
      decode_only: await phase(d, `decode${r}_`, room, { ...idle, clips: { enabled: false } }, false),
      clips_idle: await phase(d, `idle${r}_`, room, { ...idle, clips: { enabled: true } }, false),
      face_no_clips: await phase(d, `face${r}_`, face, { ...live, clips: { enabled: false } }, false),
      face_recording: await phase(d, `rec${r}_`, face, { ...live, clips: { enabled: true } }, true),
    });
    console.error(JSON.stringify({ round: r, ...rounds[r] }));
  }
  const cpu = (k: keyof (typeof rounds)[number]) =>
    rounds.reduce((a, x) => a + x[k].cpu_percent_per_stream, 0) / rounds.length;
  const [decodeOnly, clipsIdle, faceNoClips, faceRecording] = [
    cpu('decode_only'),
    cpu('clips_idle'),
    cpu('face_no_clips'),
    cpu('face_recording'),
  ];
  out = {
    at: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model },
    stream: `${W}x${H} ${FPS} fps H.264 ${KBITS} kbit/s (live x264, one mount), ${STREAMS} streams, ${SECONDS} s per phase, ${ROUNDS} rounds`,
    cpu_percent_per_stream: {
      decode_only: r1(decodeOnly),
      clips_idle: r1(clipsIdle),
      face_no_clips: r1(faceNoClips),
      face_recording: r1(faceRecording),
    },
    clips_idle_to_decode_only: r3(clipsIdle / decodeOnly),
    recording_to_no_clips: r3(faceRecording / faceNoClips),
    recording_cost_percent_per_stream: r1(faceRecording - faceNoClips),
    recording_cost_to_decode_only: r3((faceRecording - faceNoClips) / decodeOnly),
    rounds,
  };
} finally {
  await d.close();
  await Promise.all([empty.stop(), faces.stop()]);
}
console.log(JSON.stringify(out, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/clip-cpu.json'), JSON.stringify(out, null, 2));
