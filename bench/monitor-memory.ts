/**
 * Native memory of the monitor decode path, where the npm gstreamer-superficial leaked (vendor/README.md):
 *   1. per pulled frame: 200k appsink pulls of a tiny videotestsrc frame through the addon (upstream leaked
 *      ~70 bytes of caps strings per frame), RSS growth after a 20k-pull warm-up; with `pull` (a copy per
 *      frame) and with `pullSample` (the frame source's: the sample released unread);
 *   2. per reconnect: N connect/stop cycles of the real frame source (RTSP server on loopback, 1280x720
 *      H.264, the default decode pipeline), RSS after a forced GC every 10 cycles (upstream kept the whole
 *      pipeline: ~5.7 MB per reconnect).
 * Usage: node --expose-gc --import tsx bench/monitor-memory.ts [--cycles 100] [--pulls 200000]
 *   -> prints JSON, writes bench/results/monitor-memory.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MONITOR_PIPELINE } from '../src/config/schema.js';
import { GstFrameSource, liveNativePipelines } from '../src/monitors/frameSource.js';
import { REPO } from '../test/helpers/daemon.js';
import { waitFor } from '../test/helpers/monitors.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';

const { values } = parseArgs({
  options: { cycles: { type: 'string', default: '100' }, pulls: { type: 'string', default: '200000' } },
});
const CYCLES = Number(values.cycles),
  PULLS = Number(values.pulls);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mb = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;

type Sample = { size: number; release(): void };
type Sink = { pull(cb: (buf: Buffer | null) => void): void; pullSample(cb: (s: Sample | null) => void): void };
const { Pipeline } = createRequire(import.meta.url)('gstreamer-superficial') as {
  Pipeline: new (l: string) => { play(): void; dispose(): void; findChild(n: string): Sink };
};

/**
 * Bytes of RSS per pulled frame after a warm-up (0 when nothing leaks; noise is a few bytes): `pull` (a
 * copy per frame, upstream's API) or `pullSample` (what the frame source uses: the sample released unread).
 */
async function bytesPerPull(
  api: 'pull' | 'pullSample',
): Promise<{ pulls: number; rss_growth_mb: number; bytes_per_frame: number }> {
  const p = new Pipeline(
    'videotestsrc ! video/x-raw,format=RGB,width=16,height=16,framerate=25/1 ! appsink name=sink max-buffers=1 sync=false',
  );
  const sink = p.findChild('sink');
  p.play();
  const pull =
    api === 'pull'
      ? () =>
          new Promise<void>((resolve, reject) =>
            sink.pull((buf) => (buf ? resolve() : reject(new Error('end of stream')))),
          )
      : () =>
          new Promise<void>((resolve, reject) =>
            sink.pullSample((s) => {
              if (!s) return reject(new Error('end of stream'));
              s.release();
              resolve();
            }),
          );
  const warmup = 20_000;
  let base = 0;
  for (let i = 1; i <= PULLS; i++) {
    await pull();
    if (i === warmup) {
      gc!();
      base = process.memoryUsage().rss;
    }
  }
  gc!();
  const growth = process.memoryUsage().rss - base;
  p.dispose();
  return { pulls: PULLS - warmup, rss_growth_mb: mb(growth), bytes_per_frame: Math.round(growth / (PULLS - warmup)) };
}
const perFrame = await bytesPerPull('pull');
const perSample = await bytesPerPull('pullSample');

const frames = await renderScenario([{ image: null, seconds: 2 }], { width: 1280, height: 720, fps: 25 });
const server = await startRtspServer({ frames, fps: 25 });
const options = { pipeline: DEFAULT_MONITOR_PIPELINE, latencyMs: 100, openTimeoutMs: 8000, readTimeoutMs: 2000 };

async function cycle(): Promise<void> {
  let n = 0;
  const source = new GstFrameSource(server.url(), options, {
    caps: () => {},
    frame: () => {
      n++;
    },
    failed: () => {},
  });
  source.start();
  await waitFor('3 frames', async () => (n >= 3 ? true : undefined), 15_000, 10);
  source.stop();
  await waitFor('disposed', async () => (liveNativePipelines() === 0 ? true : undefined), 5000, 5);
}

const samples: { cycles: number; rss_mb: number }[] = [];
const t0 = performance.now();
for (let i = 1; i <= CYCLES; i++) {
  await cycle();
  if (i % 10 === 0) {
    gc();
    await sleep(200);
    samples.push({ cycles: i, rss_mb: mb(process.memoryUsage().rss) });
  }
}
await server.stop();
// Least-squares slope after the first sample (allocator warm-up).
const pts = samples.slice(1);
const mx = pts.reduce((a, p) => a + p.cycles, 0) / pts.length,
  my = pts.reduce((a, p) => a + p.rss_mb, 0) / pts.length;
const slope =
  pts.reduce((a, p) => a + (p.cycles - mx) * (p.rss_mb - my), 0) / pts.reduce((a, p) => a + (p.cycles - mx) ** 2, 0);
const result = {
  per_frame: perFrame,
  per_sample: perSample,
  cycles: CYCLES,
  stream: '1280x720 H.264 25 fps',
  seconds: Math.round((performance.now() - t0) / 100) / 10,
  rss_mb_per_reconnect: Math.round(slope * 1000) / 1000,
  samples,
};
console.log(JSON.stringify(result, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/monitor-memory.json'), JSON.stringify(result, null, 2) + '\n');
process.exit(0);
