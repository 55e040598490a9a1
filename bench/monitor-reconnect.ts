/**
 * Memory per monitor reconnect: N connect/stop cycles of the real frame source (RTSP server on loopback,
 * the default decode pipeline), RSS after a forced GC every 10 cycles. The upstream gstreamer-superficial
 * never freed a pipeline, so each reconnect kept about 1.3 MB (vendor/README.md); ours must stay flat.
 * Usage: node --expose-gc --import tsx bench/monitor-reconnect.ts [--cycles 100]
 *   -> prints JSON, writes bench/results/monitor-reconnect.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MONITOR_PIPELINE } from '../src/config/schema.js';
import { GstFrameSource, liveNativePipelines } from '../src/monitors/frameSource.js';
import { REPO } from '../test/helpers/daemon.js';
import { waitFor } from '../test/helpers/monitors.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '100' } } });
const CYCLES = Number(values.cycles);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mb = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;

const frames = await renderScenario([{ image: null, seconds: 2 }], { width: 1280, height: 720, fps: 25 });
const server = await startRtspServer({ frames, fps: 25 });
const options = { pipeline: DEFAULT_MONITOR_PIPELINE, latencyMs: 100, openTimeoutMs: 8000, readTimeoutMs: 2000 };

async function cycle(): Promise<void> {
  let n = 0;
  const source = new GstFrameSource(server.url(), options, { caps: () => {}, frame: () => { n++; }, failed: () => {} });
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
const mx = pts.reduce((a, p) => a + p.cycles, 0) / pts.length, my = pts.reduce((a, p) => a + p.rss_mb, 0) / pts.length;
const slope = pts.reduce((a, p) => a + (p.cycles - mx) * (p.rss_mb - my), 0) / pts.reduce((a, p) => a + (p.cycles - mx) ** 2, 0);
const result = {
  cycles: CYCLES, stream: '1280x720 H.264 25 fps', seconds: Math.round((performance.now() - t0) / 100) / 10,
  rss_mb_per_reconnect: Math.round(slope * 1000) / 1000, samples,
};
console.log(JSON.stringify(result, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/monitor-reconnect.json'), JSON.stringify(result, null, 2) + '\n');
process.exit(0);
