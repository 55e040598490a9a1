import test from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { face, form } from '../helpers/daemon.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemonProcess.js';
import { waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import {
  COUNT_OBJECT_URLS,
  ensureWebUi,
  framesShown,
  launchChromium,
  liveObjectUrls,
  screenshot,
  signIn,
} from '../helpers/browser.js';

/**
 * The API key stays in the tab's memory: after every page has been used (and a kiosk window fed the key
 * by postMessage), nothing in storage, cookies, IndexedDB, any URL the browser requested or navigated to,
 * or the daemon's own log output (trace level, a real `vigil serve` process) holds it. The kiosk also
 * keeps at most two object URLs alive and recovers by itself from a daemon and a camera restart.
 */
let d: DaemonProcess;
let rtsp: RtspServer;
let frames: string;
let browser: Browser;
const seenUrls: string[] = [];
const postBodies: Buffer[] = [];

const FPS = 10;
test.before(async () => {
  [frames] = await Promise.all([
    renderScenario(
      [
        { image: face('identities/biden/1.jpg'), seconds: 3 },
        { image: null, seconds: 1 },
      ],
      { width: 640, height: 360, fps: FPS },
    ),
    ensureWebUi(),
  ]);
  [d, rtsp, browser] = await Promise.all([
    startDaemonProcess({
      toml: '[monitors]\nopen_timeout_seconds = 3\nread_timeout_seconds = 1.5\nreconnect_delay_seconds = 0.3\nlatency_ms = 0',
    }),
    startRtspServer({ frames, fps: FPS }),
    launchChromium(),
  ]);
  const api = (method: string, path: string, body?: unknown) =>
    fetch(d.url + path, {
      method,
      headers: { ...d.auth, ...(body instanceof FormData ? {} : { 'content-type': 'application/json' }) },
      body: body instanceof FormData ? body : JSON.stringify(body),
    });
  await api('POST', '/v1/collections', { id: 'lobby', name: 'Lobby', save_face_crops: true });
  await api(
    'POST',
    '/v1/collections/lobby/persons',
    form({ id: 'biden', name: 'Joe Biden', images: [face('identities/biden/2.jpg')] }),
  );
  const m = await api('POST', '/v1/monitors', {
    id: 'hall',
    name: 'Hall',
    source: { url: rtsp.url() },
    collection_id: 'lobby',
    inference_fps: 4,
    preview_enabled: true,
  });
  if (m.status !== 201) throw new Error(await m.text());
});
test.after.always(async () => {
  await browser?.close();
  await d?.stop();
  await rtsp?.stop();
});

/** Every request of every page in the context (popups included), and every URL a frame navigated to (pushState too). */
function record(context: BrowserContext): void {
  context.on('request', (r) => {
    seenUrls.push(r.url());
    const body = r.postDataBuffer();
    if (body) postBodies.push(body);
  });
  context.on('page', (p) => p.on('framenavigated', (f) => seenUrls.push(f.url())));
}

/** In-app navigation (history.pushState, as the UI's own links do): a reload would forget the key. */
async function go(page: Page, path: string, heading: string): Promise<void> {
  await page.evaluate(
    `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
  );
  await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
}

async function storageTrace(page: Page): Promise<string> {
  // Runs in the page (a string: this file is compiled without the DOM types).
  return page.evaluate(`(async () => JSON.stringify({
    local: Object.entries(localStorage), session: Object.entries(sessionStorage), cookie: document.cookie,
    idb: (await indexedDB.databases()).map((db) => db.name), href: location.href, title: document.title,
    caches: 'caches' in window ? await caches.keys() : [],
  }))()`);
}

let kiosk: Page;
let page: Page;

test.serial('every page used, a kiosk opened: the key is nowhere but in memory', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addInitScript(COUNT_OBJECT_URLS);
  record(context);
  page = await context.newPage();
  page.setDefaultTimeout(20_000);
  await signIn(page, d.url, d.key, '/dashboard');
  await page.getByTestId('readiness').filter({ hasText: 'Ready' }).waitFor();
  await go(page, '/collections', 'Collections');
  await go(page, '/collections/lobby', 'Collection Lobby');
  await go(page, '/collections/lobby/persons/biden', 'Joe Biden');
  await waitFor(
    'crop',
    async () => ((await page.locator('.facecard img[src^="blob:"]').count()) === 1 ? true : undefined),
    10_000,
  );
  await go(page, '/search', 'Search');
  await page.getByLabel('Collection').selectOption('lobby');
  await page
    .locator('input[type=file]')
    .setInputFiles({ name: 'q.jpg', mimeType: 'image/jpeg', buffer: face('identities/biden/1.jpg') });
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  t.is(await page.getByTestId('best-match').textContent(), 'Joe Biden');
  await go(page, '/compare', 'Compare');
  await go(page, '/detect', 'Detect');
  await go(page, '/system', 'System');
  await go(page, '/settings', 'Settings');
  await go(page, '/unknowns', 'Unknown visitors');
  await go(page, '/users', 'Users and access');
  await go(page, '/', 'Live');
  await page.locator('.tile .preview[data-frames]:not([data-frames="0"])').first().waitFor({ timeout: 30_000 });
  await go(page, '/monitors', 'Monitors');
  await go(page, '/monitors/hall', 'Hall');
  await waitFor('preview', async () => ((await framesShown(page)) >= 3 ? true : undefined), 30_000);
  [kiosk] = await Promise.all([
    page.waitForEvent('popup'),
    page.getByRole('button', { name: 'Open kiosk view' }).click(),
  ]);
  await kiosk.locator('.kiosk-names li.matched', { hasText: 'Joe Biden' }).waitFor({ timeout: 30_000 });

  for (const p of [page, kiosk]) {
    const trace = await storageTrace(p);
    t.false(trace.includes(d.key), trace);
    t.regex(trace, /"local":\[\],"session":\[\],"cookie":"","idb":\[\]/);
  }
  t.true(
    seenUrls.some((u) => /\/v1\/monitors\/hall\/preview\.mjpeg(\?|$)/.test(u)),
    'the requests were recorded',
  );
  t.true(seenUrls.some((u) => u.endsWith('/kiosk/hall')));
  for (const u of seenUrls) t.false(u.includes(d.key) || u.includes(encodeURIComponent(d.key)), u);
  for (const b of postBodies) t.false(b.includes(d.key));
  const cookies = await page.context().cookies();
  t.deepEqual(cookies, []);
  await screenshot(page, '11-monitor-hygiene');
});

test.serial('the kiosk revokes its object URLs: at most two alive after many frames', async (t) => {
  const start = (await liveObjectUrls(kiosk)).created;
  await waitFor(
    '40 frames',
    async () => ((await liveObjectUrls(kiosk)).created >= start + 40 ? true : undefined),
    60_000,
    500,
  );
  const urls = await liveObjectUrls(kiosk);
  t.true(urls.live <= 2, JSON.stringify(urls));
  t.true((await framesShown(kiosk)) >= 40);
});

test.serial('the kiosk recovers by itself after a daemon restart and a camera restart', async (t) => {
  await page.close();
  const before = await framesShown(kiosk);
  await d.restart();
  await waitFor(
    'frames after the daemon restart',
    async () => ((await framesShown(kiosk)) > before + 5 ? true : undefined),
    90_000,
    500,
  );
  await kiosk.locator('.kiosk-names li.matched', { hasText: 'Joe Biden' }).waitFor({ timeout: 30_000 });
  const port = rtsp.port;
  await rtsp.stop();
  const stalled = await framesShown(kiosk);
  await kiosk.locator('.kiosk-status.warn').waitFor({ timeout: 30_000 });
  rtsp = await startRtspServer({ frames, fps: FPS, port });
  await waitFor(
    'frames after the camera restart',
    async () => ((await framesShown(kiosk)) > stalled + 5 ? true : undefined),
    90_000,
    500,
  );
  t.true((await liveObjectUrls(kiosk)).live <= 2);
  t.false((await storageTrace(kiosk)).includes(d.key));
  await screenshot(kiosk, '12-kiosk-after-restarts');
});

test.serial('the daemon log (trace level, both runs) never holds the key', async (t) => {
  const out = d.output();
  t.true(out.includes('"path":"/v1/monitors/hall/preview.mjpeg"'), 'request lines were logged');
  t.true(out.includes('"msg":"listening"'));
  t.false(out.includes(d.key));
  t.false(out.toLowerCase().includes('bearer'));
});
