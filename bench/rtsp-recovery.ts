/**
 * RTSP recovery time (issue 17.7): a monitor's reader on the test RTSP server; the server is killed, stays
 * down for --down seconds, and comes back on the same port. Measured: from the restarted server printing
 * READY to the reader's first frame, with the daemon's defaults (reconnect_delay 0.5 s, latency 200 ms,
 * read timeout 5 s). Also counts the failure callbacks (retries) and the distinct causes per outage.
 * Usage: npx tsx bench/rtsp-recovery.ts [--runs 5] [--down 3]   -> prints JSON, writes bench/results/rtsp-recovery.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigSchema } from '../src/config/schema.js';
import { createLogger } from '../src/log/logger.js';
import { StreamReader } from '../src/monitors/streamReader.js';
import { REPO } from '../test/helpers/shared.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '5' }, down: { type: 'string', default: '3' } },
});
const RUNS = Number(values.runs),
  DOWN_S = Number(values.down);
const mc = ConfigSchema.parse({}).monitors;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const frames = await renderScenario([{ image: null, seconds: 1 }], { width: 640, height: 360, fps: 25 });
let server = await startRtspServer({ frames, fps: 25 });
const port = server.port;
let connectedAt = 0;
const failures: string[] = [];
const reader = new StreamReader(
  server.url(),
  {
    pipeline: mc.pipeline,
    latencyMs: mc.latency_ms,
    maxSide: mc.frame_max_side,
    maxFps: 3,
    openTimeoutMs: mc.open_timeout_seconds * 1000,
    readTimeoutMs: mc.read_timeout_seconds * 1000,
    reconnectDelayMs: mc.reconnect_delay_seconds * 1000,
  },
  {
    frame: () => {},
    connected: () => {
      connectedAt = Date.now();
    },
    failed: (cause) => {
      failures.push(cause);
    },
  },
  createLogger('silent'),
  'bench',
);
reader.start();
while (!connectedAt) await sleep(20);
const runs: { recovery_ms: number; retries: number; causes: string[] }[] = [];
try {
  for (let i = 0; i < RUNS; i++) {
    await server.stop();
    failures.length = 0;
    connectedAt = 0;
    await sleep(DOWN_S * 1000);
    server = await startRtspServer({ frames, fps: 25, port });
    const readyAt = Date.now();
    while (!connectedAt) await sleep(5);
    runs.push({ recovery_ms: connectedAt - readyAt, retries: failures.length, causes: [...new Set(failures)] });
    console.error(JSON.stringify(runs[runs.length - 1]));
    await sleep(2000);
  }
} finally {
  reader.stop();
  await server.stop();
}
const sorted = runs.map((r) => r.recovery_ms).sort((a, b) => a - b);
const out = {
  bench: 'rtsp-recovery',
  defaults: {
    reconnect_delay_seconds: mc.reconnect_delay_seconds,
    latency_ms: mc.latency_ms,
    read_timeout_seconds: mc.read_timeout_seconds,
  },
  down_seconds: DOWN_S,
  runs,
  recovery_ms_median: sorted[Math.floor(sorted.length / 2)],
  recovery_ms_max: sorted[sorted.length - 1],
  target_ms: 2000,
};
console.log(JSON.stringify(out, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/rtsp-recovery.json'), JSON.stringify(out, null, 2));
process.exit(0);
