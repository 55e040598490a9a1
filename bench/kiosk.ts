/**
 * Kiosk memory over a long run: headless Chromium shows /kiosk/<id> for a monitor on the test RTSP stream
 * (a face that comes and goes, so names and boxes change), and every 10 s forces a GC and samples the JS
 * heap, DOM nodes, event listeners and live object URLs of the page (CDP Performance.getMetrics after
 * HeapProfiler.collectGarbage).
 * Usage: npx tsx bench/kiosk.ts [--duration 600] [--interval 10] -> prints JSON, writes bench/results/kiosk.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { face, REPO, startTestDaemon } from '../test/helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../test/helpers/monitors.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';
import {
  COUNT_OBJECT_URLS,
  ensureWebUi,
  framesShown,
  launchChromium,
  liveObjectUrls,
} from '../test/helpers/browser.js';

const { values } = parseArgs({
  options: { duration: { type: 'string', default: '600' }, interval: { type: 'string', default: '10' } },
});
const DURATION_S = Number(values.duration);
const INTERVAL_S = Number(values.interval);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mb = (b: number) => Math.round((b / 2 ** 20) * 1000) / 1000;
const avg = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

const frames = await renderScenario(
  [
    { image: face('identities/obama/1.jpg'), seconds: 4 },
    { image: null, seconds: 2 },
    { image: face('identities/biden/1.jpg'), seconds: 4 },
    { image: null, seconds: 2 },
  ],
  { width: 1280, height: 720, fps: 15 },
);
await ensureWebUi();
const [d, rtsp, browser] = await Promise.all([
  startTestDaemon({ toml: FAST_MONITORS_TOML }),
  startRtspServer({ frames, fps: 15 }),
  launchChromium(),
]);
try {
  await enrollObamaBiden(d, 'gallery');
  const created = await fetch(`${d.url}/v1/monitors`, {
    method: 'POST',
    headers: { ...d.auth, 'content-type': 'application/json' },
    body: JSON.stringify({
      id: 'kiosk',
      name: 'Kiosk',
      source: { url: rtsp.url() },
      collection_id: 'gallery',
      inference_fps: 4,
      preview_enabled: true,
    }),
  });
  if (created.status !== 201) throw new Error(await created.text());
  const context = await browser.newContext({ viewport: { width: 1920, height: 1080 } });
  await context.addInitScript(COUNT_OBJECT_URLS);
  const page = await context.newPage();
  await page.goto(`${d.url}/kiosk/kiosk`);
  await page.getByLabel('API key').fill(d.key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await waitFor('first frames', async () => ((await framesShown(page)) > 10 ? true : undefined), 60_000, 500);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  const samples: {
    t: number;
    heap_mb: number;
    nodes: number;
    listeners: number;
    object_urls: number;
    frames: number;
  }[] = [];
  const t0 = Date.now();
  for (;;) {
    await cdp.send('HeapProfiler.collectGarbage');
    const { metrics } = await cdp.send('Performance.getMetrics');
    const m = Object.fromEntries(metrics.map((x) => [x.name, x.value]));
    const urls = await liveObjectUrls(page);
    samples.push({
      t: Math.round((Date.now() - t0) / 1000),
      heap_mb: mb(m.JSHeapUsedSize!),
      nodes: m.Nodes!,
      listeners: m.JSEventListeners!,
      object_urls: urls.live,
      frames: await framesShown(page),
    });
    process.stderr.write(`${JSON.stringify(samples.at(-1))}\n`);
    if (Date.now() - t0 >= DURATION_S * 1000) break;
    await sleep(INTERVAL_S * 1000);
  }
  const heap = samples.map((s) => s.heap_mb);
  const half = Math.floor(samples.length / 2);
  const last = samples.at(-1)!;
  const result = {
    bench: 'kiosk',
    duration_s: DURATION_S,
    interval_s: INTERVAL_S,
    stream: '1280x720 @ 15 fps, preview 5 fps (daemon default)',
    viewport: '1920x1080',
    frames_shown: last.frames - samples[0]!.frames,
    heap_mb: {
      start: heap[0],
      end: heap.at(-1),
      min: Math.min(...heap),
      max: Math.max(...heap),
      first_half_avg: Math.round(avg(heap.slice(0, half)) * 1000) / 1000,
      second_half_avg: Math.round(avg(heap.slice(half)) * 1000) / 1000,
    },
    dom_nodes: { start: samples[0]!.nodes, end: last.nodes, max: Math.max(...samples.map((s) => s.nodes)) },
    event_listeners: { start: samples[0]!.listeners, end: last.listeners },
    object_urls_alive: { max: Math.max(...samples.map((s) => s.object_urls)), end: last.object_urls },
    samples,
  };
  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(join(REPO, 'bench/results/kiosk.json'), JSON.stringify(result, null, 2));
  const { samples: _s, ...summary } = result;
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} finally {
  await browser.close();
  await d.close();
  await rtsp.stop();
}
