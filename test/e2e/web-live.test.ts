import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer, type Segment } from '../helpers/rtsp.js';
import { ensureWebUi, framesShown, launchChromium, screenshot, signIn } from '../helpers/browser.js';

/**
 * The live views in headless Chromium against a real daemon and real RTSP streams: boxes drawn only on the
 * frames they were computed on (a stream that cuts between a face and an empty room every half second).
 */
let d: TestDaemon;
let rtsp: RtspServer;
let browser: Browser;
let page: Page;

/** Half a second of Obama, half a second of an empty grey frame, six times: a scene cut every 5 frames. */
const BLINKING: Segment[] = Array.from({ length: 6 }, (_, i): Segment[] => [
  { image: face(`identities/obama/${(i % 3) + 1}.jpg`), seconds: 0.5 },
  { image: null, seconds: 0.5 },
]).flat();

test.before(async () => {
  const [frames] = await Promise.all([renderScenario(BLINKING, { width: 640, height: 360, fps: 10 }), ensureWebUi()]);
  [d, rtsp, browser] = await Promise.all([
    startTestDaemon({ toml: FAST_MONITORS_TOML }),
    startRtspServer({ frames, fps: 10, bitrate: 4000 }),
    launchChromium(),
  ]);
  await enrollObamaBiden(d, 'staff');
  const made = await call(d, 'POST', '/v1/monitors', {
    id: 'door',
    name: 'Front door',
    source: { url: rtsp.url() },
    collection_id: 'staff',
    inference_fps: 5,
    preview_enabled: true,
  });
  if (made.status !== 201) throw new Error(JSON.stringify(made.json));
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(20_000);
});
test.after.always(async () => {
  await browser?.close();
  await d?.close();
  await rtsp?.stop();
});

/**
 * Samples the monitor page's preview every 30 ms: whether the picture on screen is the empty grey frame
 * (its luminance hardly varies) or the photo, and whether the overlay canvas has any box on it.
 */
const SAMPLER = `(() => {
  const log = { samples: 0, emptyWithBox: 0, faceWithBox: 0, empty: 0, face: 0, otherFrame: 0, backwards: 0 };
  let lastSeq = 0;
  window.__overlayLog = log;
  const small = document.createElement('canvas');
  small.width = 32; small.height = 18;
  const sctx = small.getContext('2d', { willReadFrequently: true });
  const kinds = new Map();
  const kindOf = (img) => {
    let k = kinds.get(img.src);
    if (k) return k;
    sctx.drawImage(img, 0, 0, 32, 18);
    const px = sctx.getImageData(0, 0, 32, 18).data;
    let s = 0, s2 = 0, n = 0;
    for (let i = 0; i < px.length; i += 4) { const v = (px[i] + px[i + 1] + px[i + 2]) / 3; s += v; s2 += v * v; n++; }
    k = Math.sqrt(Math.max(0, s2 / n - (s / n) ** 2)) < 8 ? 'empty' : 'face';
    kinds.set(img.src, k);
    return k;
  };
  const boxed = (canvas) => {
    if (!canvas.width || !canvas.height) return false;
    const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (let i = 3; i < px.length; i += 16) if (px[i]) return true;
    return false;
  };
  setInterval(() => {
    const img = [...document.querySelectorAll('.preview-img')].find((i) => getComputedStyle(i).visibility !== 'hidden');
    const canvas = document.querySelector('.preview-overlay');
    if (!img || !canvas || !img.complete || !img.naturalWidth || !img.src) return;
    const kind = kindOf(img);
    const box = boxed(canvas);
    log.samples++;
    log[kind]++;
    if (box) log[kind === 'empty' ? 'emptyWithBox' : 'faceWithBox']++;
    // What the page says it drew: the boxes' frame is the frame on screen, and frames only move forward.
    const d = document.querySelector('.preview').dataset;
    if (box && d.boxesSeq !== d.frameSeq) log.otherFrame++;
    if (Number(d.frameSeq) < lastSeq) log.backwards++;
    lastSeq = Number(d.frameSeq);
  }, 30);
})();`;

interface OverlayLog {
  otherFrame: number;
  backwards: number;
  samples: number;
  emptyWithBox: number;
  faceWithBox: number;
  empty: number;
  face: number;
}

test.serial('a stream cutting between a face and an empty frame never shows a box on the empty frame', async (t) => {
  t.timeout(120_000);
  await signIn(page, d.url, d.key, '/monitors/door');
  await page.getByRole('heading', { name: 'Front door' }).waitFor();
  await waitFor('frames', async () => ((await framesShown(page)) >= 3 ? true : undefined), 30_000);
  await page.evaluate(SAMPLER);
  // Twelve seconds: two loops of the scenario, 24 cuts.
  await page.waitForTimeout(12_000);
  const log = (await page.evaluate('window.__overlayLog')) as OverlayLog;
  await screenshot(page, 'live-overlay');
  t.log(JSON.stringify(log));
  t.true(log.empty > 20 && log.face > 20, `both kinds of frame were on screen: ${JSON.stringify(log)}`);
  t.true(log.faceWithBox > 0, `boxes are drawn on the face frames: ${JSON.stringify(log)}`);
  t.is(log.emptyWithBox, 0, `no box on an empty frame: ${JSON.stringify(log)}`);
  t.is(log.otherFrame, 0, 'every box drawn belongs to the frame on screen');
  t.is(log.backwards, 0, 'frames never go back');
});
