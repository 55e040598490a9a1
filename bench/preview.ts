/**
 * The live grid's preview budget: what watching costs the box, for one camera watched full size at the full
 * preview rate against a grid of 8 cameras whose tiles ask for their own width and rate (tileParams of
 * src/web/previewBudget.ts, as the web UI's grid does), and against 8 full-rate previews (a grid that does
 * not adapt). The daemon runs as its own process with 8 monitors on one shared 720p RTSP stream (the test
 * server replays pre-encoded frames, so it costs little); each phase measures the daemon's CPU seconds per
 * second (from /proc) above an idle phase without viewers, and the bytes and frames the clients receive.
 * Phases are interleaved and repeated (idle, single, grid, naive, ...), so drift shows. The clients ask for
 * no boxes: a boxed client gets only the analysed frames while faces are in view (the inference rate), so
 * the plain stream at the full preview rate is the most a client can cost.
 * Usage: npx tsx bench/preview.ts [--seconds 20] [--rounds 2] [--tile-width 480]
 *   -> prints JSON, writes bench/results/preview.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { face, REPO } from '../test/helpers/daemon.js';
import { startDaemonProcess } from '../test/helpers/daemonProcess.js';
import { FAST_MONITORS_TOML } from '../test/helpers/monitors.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';
import { tileParams } from '../src/web/previewBudget.js';
import { processCpuSeconds } from './procStat.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '2' },
    'tile-width': { type: 'string', default: '480' },
  },
});
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const TILE_WIDTH = Number(values['tile-width']);
const CAMERAS = 8;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (n: number, d = 3) => Math.round(n * 10 ** d) / 10 ** d;

const frames = await renderScenario(
  [
    { image: face('identities/obama/1.jpg'), seconds: 3 },
    { image: face('groups/obama_biden_office.jpg'), seconds: 3 },
  ],
  { width: 1280, height: 720, fps: 10 },
);
const rtsp = await startRtspServer({ frames, fps: 10, preencoded: { mountOffsetsSeconds: [0] } });
const d = await startDaemonProcess({
  logLevel: 'info',
  toml: `${FAST_MONITORS_TOML}\nmax_streams = ${CAMERAS}\npreview_fps = 5\njpeg_quality = 82`,
});
const api = (method: string, path: string, body?: unknown) =>
  fetch(d.url + path, {
    method,
    headers: { ...d.auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then(async (r) => {
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
    return r;
  });

/** One open preview: bytes and parts received until stopped. */
function watch(id: string, query: string) {
  const controller = new AbortController();
  const s = { bytes: 0, frames: 0, stop: () => controller.abort() };
  void fetch(`${d.url}/v1/monitors/${id}/preview.mjpeg${query}`, { headers: d.auth, signal: controller.signal })
    .then(async (res) => {
      const reader = res.body!.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        s.bytes += value.length;
        s.frames += Buffer.from(value).toString('latin1').split('--frame\r\n').length - 1;
      }
    })
    .catch(() => undefined);
  return s;
}

interface Phase {
  name: string;
  viewers: { id: string; query: string }[];
}
const ids = Array.from({ length: CAMERAS }, (_, i) => `cam${i + 1}`);
const tile = tileParams(CAMERAS, TILE_WIDTH, 1);
const PHASES: Phase[] = [
  { name: 'idle', viewers: [] },
  { name: 'single_full', viewers: [{ id: 'cam1', query: '' }] },
  { name: 'grid_of_8', viewers: ids.map((id) => ({ id, query: `?fps=${tile.fps}&width=${tile.width}` })) },
  { name: 'naive_grid_of_8', viewers: ids.map((id) => ({ id, query: '' })) },
];

const results: Record<string, { cpu: number[]; bytes: number[]; fps: number[] }> = {};
try {
  await api('POST', '/v1/collections', { id: 'bench', name: 'bench' });
  for (const id of ids)
    await api('POST', '/v1/monitors', {
      id,
      name: id,
      source: { url: rtsp.url() },
      collection_id: 'bench',
      inference_fps: 0.5,
      preview_enabled: true,
    });
  await sleep(8000); // every stream connected and settled
  for (let round = 0; round < ROUNDS; round++)
    for (const phase of PHASES) {
      const open = phase.viewers.map((v) => watch(v.id, v.query));
      await sleep(2000); // first frames, encoders warm
      const bytes0 = open.reduce((n, s) => n + s.bytes, 0);
      const frames0 = open.reduce((n, s) => n + s.frames, 0);
      const cpu0 = processCpuSeconds(d.pid());
      const t0 = performance.now();
      await sleep(SECONDS * 1000);
      const secs = (performance.now() - t0) / 1000;
      const r = (results[phase.name] ??= { cpu: [], bytes: [], fps: [] });
      r.cpu.push((processCpuSeconds(d.pid()) - cpu0) / secs);
      r.bytes.push((open.reduce((n, s) => n + s.bytes, 0) - bytes0) / secs);
      r.fps.push((open.reduce((n, s) => n + s.frames, 0) - frames0) / secs);
      for (const s of open) s.stop();
      await sleep(1000);
      process.stderr.write(`${phase.name} round ${round + 1}: cpu ${r.cpu.at(-1)!.toFixed(3)} s/s\n`);
    }
} finally {
  await d.stop();
  await rtsp.stop();
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const idle = mean(results.idle!.cpu);
const summary = Object.fromEntries(
  PHASES.filter((p) => p.name !== 'idle').map((p) => {
    const r = results[p.name]!;
    return [
      p.name,
      {
        preview_cpu_seconds_per_second: round(mean(r.cpu) - idle),
        bytes_per_second: Math.round(mean(r.bytes)),
        frames_per_second: round(mean(r.fps), 2),
        per_round_cpu: r.cpu.map((c) => round(c - idle)),
      },
    ];
  }),
) as Record<string, { preview_cpu_seconds_per_second: number; bytes_per_second: number }>;
const single = summary.single_full!;
const out = {
  bench: 'preview',
  cameras: CAMERAS,
  source: '1280x720 @ 10 fps, preview_fps 5, jpeg_quality 82',
  tile: { css_width: TILE_WIDTH, dpr: 1, ...tile },
  seconds_per_phase: SECONDS,
  rounds: ROUNDS,
  idle_cpu_seconds_per_second: round(idle),
  ...summary,
  grid_vs_single: {
    cpu: round(summary.grid_of_8!.preview_cpu_seconds_per_second / single.preview_cpu_seconds_per_second, 2),
    bytes: round(summary.grid_of_8!.bytes_per_second / single.bytes_per_second, 2),
  },
  naive_grid_vs_single: {
    cpu: round(summary.naive_grid_of_8!.preview_cpu_seconds_per_second / single.preview_cpu_seconds_per_second, 2),
    bytes: round(summary.naive_grid_of_8!.bytes_per_second / single.bytes_per_second, 2),
  },
};
console.log(JSON.stringify(out, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/preview.json'), JSON.stringify(out, null, 2) + '\n');
