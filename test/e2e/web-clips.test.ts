import test from 'ava';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { ensureWebUi, launchChromium, screenshot, signIn, signInWithPassword } from '../helpers/browser.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * Event clips in the console (issue 41: "a clip of an event plays in Chromium from the timeline and survives
 * restart"), in headless Chromium against a real daemon and the RTSP test server (H.264, a key frame a second):
 * a face passes a camera that records clips; the timeline says the clip is recording, then shows a <video>
 * on the clip URL that Chromium plays and seeks with the session cookie (range requests); a kiosk token gets
 * no clip; at 390 px in the light theme it fits; after a restart the same clip plays again, with the
 * session cookie and (as a blob) with the API key.
 */
const FPS = 10;
const VIEWER = { username: 'vera', password: 'vera password 12' };
let rtsp: RtspServer;
let browser: Browser;
let d: TestDaemon;
const dir = fileTempDir('vigil-web-clips-');
const contexts: BrowserContext[] = [];
const consoleErrors: string[] = [];

const TOML = `${FAST_MONITORS_TOML}
[monitors.clips]
pre_seconds = 2
post_seconds = 2
[events]
flush_interval_ms = 100`;

type Ev = Record<string, any>;
/** What the tests read of an HTMLVideoElement (the test's own TypeScript has no DOM library). */
type Media = {
  readyState: number;
  currentTime: number;
  duration: number;
  videoWidth: number;
  videoHeight: number;
  currentSrc: string;
  muted: boolean;
  error: { code: number } | null;
  play(): Promise<void>;
  pause(): void;
  addEventListener(type: string, fn: (e: unknown) => void, o?: { once: boolean }): void;
};
/** The first pass's enter and exit (they share its clip), as the history had them once it was ready. */
let pass: { enter: Ev; exit: Ev };

test.before(async () => {
  const [frames] = await Promise.all([
    // A room, a face for 6 s (the clip records from its enter to 2 s after its exit), the room again.
    renderScenario(
      [
        { image: null, seconds: 3 },
        { image: face('identities/obama/1.jpg'), seconds: 6, at: { x: 0.35, y: 0.1, width: 0.3 } },
        { image: null, seconds: 12 },
      ],
      { width: 640, height: 360, fps: FPS, room: true },
    ),
    ensureWebUi(),
  ]);
  [rtsp, browser, d] = await Promise.all([
    startRtspServer({ frames, fps: FPS }),
    launchChromium(),
    startTestDaemon({ toml: TOML, dir }),
  ]);
  await enrollObamaBiden(d, 'gallery');
  const r = await call(d, 'POST', '/v1/users', { ...VIEWER, role: 'viewer' });
  if (r.status !== 201) throw new Error(JSON.stringify(r.json));
});
test.after.always(async () => {
  for (const c of contexts) await c.close().catch(() => undefined);
  await browser?.close();
  await d?.close();
  await rtsp?.stop();
});

async function newPage(width = 1280): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  page.on('console', (m) => {
    // The sign-in page's session probe answers 401 before anyone signed in (as it should).
    if (m.type() === 'error' && !m.location().url.endsWith('/v1/auth/session'))
      consoleErrors.push(`${m.text()} (${m.location().url})`);
  });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  return page;
}

/** Plays the <video> from the start for a second of media time; what Chromium knows of it then. */
async function playFor(page: Page, selector: string) {
  const video = page.locator(selector);
  await video.waitFor();
  await page.waitForFunction((el) => (el as unknown as Media).readyState >= 1, await video.elementHandle());
  return video.evaluate(async (el) => {
    const v = el as unknown as Media;
    v.muted = true; // headless Chromium plays unmuted media only after a user gesture
    await v.play();
    const t0 = performance.now();
    while (v.currentTime < 1 && !v.error && performance.now() - t0 < 15_000)
      await new Promise((r) => setTimeout(r, 50));
    const played = {
      currentTime: v.currentTime,
      readyState: v.readyState,
      duration: v.duration,
      width: v.videoWidth,
      height: v.videoHeight,
      error: v.error?.code ?? null,
      src: v.currentSrc,
    };
    v.pause();
    return played;
  });
}

test.serial(
  'the timeline shows the clip recording, then a <video> Chromium plays and seeks with the session cookie',
  async (t) => {
    const page = await newPage();
    const clipResponses: { status: number; range: string | null }[] = [];
    page.on('response', async (res) => {
      if (res.url().includes('/clip.mp4'))
        clipResponses.push({ status: res.status(), range: (await res.request().allHeaders()).range ?? null });
    });
    await signInWithPassword(page, d.url, VIEWER.username, VIEWER.password);

    const created = await call(d, 'POST', '/v1/monitors', {
      id: 'door',
      name: 'Door',
      source: { url: rtsp.url() },
      collection_id: 'gallery',
      inference_fps: 5,
      event_policy: { confirm_frames: 2, absence_timeout_seconds: 1, cooldown_seconds: 0 },
      clips: { enabled: true },
    });
    t.is(created.status, 201, JSON.stringify(created.json));
    // The enter is in the history while its clip records (the face stays 6 s, then 1 s absence and 2 s post-roll).
    const enter = await waitFor(
      'an enter whose clip records',
      async () =>
        ((await call(d, 'GET', '/v1/events?monitor_id=door&type=person_enter')).json.events as Ev[]).find(
          (e) => e.clip?.status === 'recording',
        ),
      60_000,
      200,
    );
    await page.goto(`${d.url}/events?monitor_id=door`);
    const row = page.locator(`li.event[data-event-id="${enter.id}"]`);
    const clip = row.getByTestId('event-clip');
    await clip.filter({ hasText: 'Recording clip…' }).waitFor();
    t.is(await clip.getAttribute('data-status'), 'recording');
    await screenshot(page, '60-clip-recording');

    // The page asks again while it records, and the player takes its place once the clip is ready.
    await row.locator('figure[data-status="ready"] video').waitFor({ timeout: 30_000 });
    const exit = (await call(d, 'GET', '/v1/events?monitor_id=door&type=person_exit')).json.events.find(
      (e: Ev) => e.track_id === enter.track_id,
    ) as Ev;
    pass = { enter: (await call(d, 'GET', `/v1/events/${enter.id}`)).json.event, exit };
    const c = pass.enter.clip;
    t.is(c.status, 'ready');
    t.is(exit.clip.id, c.id, 'enter and exit share the clip');
    const video = row.locator('video.clip-video');
    t.is(await video.getAttribute('src'), c.url);
    t.is(await video.getAttribute('preload'), 'metadata');
    t.not(await video.getAttribute('controls'), null);
    t.regex((await clip.locator('figcaption').textContent())!, /^Clip \d:\d\d · \d+(\.\d)? (kB|MB) · Download$/);

    const played = await playFor(page, `li.event[data-event-id="${enter.id}"] video.clip-video`);
    t.is(played.error, null, JSON.stringify(played));
    t.true(played.readyState >= 2, JSON.stringify(played));
    t.true(played.currentTime >= 1, JSON.stringify(played));
    t.deepEqual([played.width, played.height], [640, 360]);
    t.true(Math.abs(played.duration - c.duration_ms / 1000) < 0.5, `${played.duration} s vs ${c.duration_ms} ms`);

    // Seeking near the end: a range request for the part it has not read.
    const seeked = await video.evaluate(async (el) => {
      const v = el as unknown as Media;
      v.currentTime = v.duration - 0.5;
      await new Promise((r) => v.addEventListener('seeked', r, { once: true }));
      return { currentTime: v.currentTime, error: v.error?.code ?? null };
    });
    t.is(seeked.error, null);
    t.true(seeked.currentTime > c.duration_ms / 1000 - 1.5, JSON.stringify(seeked));
    t.true(clipResponses.length > 0 && clipResponses.every((r) => r.status === 200 || r.status === 206));
    t.true(
      clipResponses.some((r) => r.status === 206 && r.range !== null),
      JSON.stringify(clipResponses),
    );
    await screenshot(page, '61-clip-playing');

    // The camera page's live list: the clip of an identity event, asked for on request.
    await page.goto(`${d.url}/monitors/door`);
    const live = page.locator('ol.events li.person_enter').last(); // the oldest: the pass above
    await live.getByRole('button', { name: 'Clip' }).click();
    t.is(await live.locator('figure.event-clip video.clip-video').getAttribute('src'), c.url);

    // A kiosk token opens the preview of its monitor, not the clips (viewer role: no token gets them).
    const token = (await call(d, 'POST', '/v1/kiosk-tokens', { monitor_ids: ['door'], label: 'hall' })).json.token;
    const kiosk = await fetch(d.url + c.url, { headers: { Authorization: `Bearer ${token}` } });
    t.is(kiosk.status, 401);
    t.is(((await kiosk.json()) as Ev).error?.code, 'unauthorized');
    // Neither does a request without the session cookie (what another site's page would send).
    t.is((await fetch(d.url + c.url, { headers: { Range: 'bytes=0-99' } })).status, 401);

    // A phone in the light theme: the player fits the column, nothing scrolls sideways.
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${d.url}/events?monitor_id=door`);
    const small = page.locator(`li.event[data-event-id="${enter.id}"] video.clip-video`);
    await small.waitFor();
    const box = (await small.boundingBox())!;
    t.true(box.x >= 0 && box.x + box.width <= 390, JSON.stringify(box));
    t.true(((await page.evaluate('document.documentElement.scrollWidth')) as number) <= 390);
    await screenshot(page, '62-clip-phone-light');
    t.deepEqual(consoleErrors, []);
  },
);

test.serial('after a restart the same clip plays again: with the session cookie, and with the API key', async (t) => {
  t.truthy(pass, 'the first test found a clip');
  const c = pass.enter.clip;
  await call(d, 'PATCH', '/v1/monitors/door', { enabled: false });
  await d.close();
  d = await startTestDaemon({ toml: TOML, dir });

  const page = await newPage();
  await signInWithPassword(page, d.url, VIEWER.username, VIEWER.password, `/events?monitor_id=door`);
  const sel = `li.event[data-event-id="${pass.exit.id}"] video.clip-video`;
  const played = await playFor(page, sel);
  t.is(played.error, null, JSON.stringify(played));
  t.true(played.currentTime >= 1 && played.readyState >= 2, JSON.stringify(played));
  t.true(Math.abs(played.duration - c.duration_ms / 1000) < 0.5);
  t.is(await page.locator(sel).getAttribute('src'), `/v1/events/${pass.exit.id}/clip.mp4`);

  // The API key goes only in a header, which a <video> cannot send: the clip is fetched as a blob on request.
  const keyed = await newPage();
  await signIn(keyed, d.url, d.key, '/events?monitor_id=door');
  const row = keyed.locator(`li.event[data-event-id="${pass.exit.id}"]`);
  await row.getByRole('button', { name: 'Load clip' }).click();
  const blob = await playFor(keyed, `li.event[data-event-id="${pass.exit.id}"] video.clip-video`);
  t.regex(blob.src, /^blob:/);
  t.true(blob.currentTime >= 1 && blob.error === null, JSON.stringify(blob));

  // Expired by the retention of pictures and clips: the timeline says why there is nothing to play.
  const patched = await call(d, 'PATCH', '/v1/settings', { 'events.max_snapshot_bytes': 1000 });
  t.true(patched.status < 300, JSON.stringify(patched.json));
  await waitFor('the clip expired', async () =>
    (await call(d, 'GET', `/v1/events/${pass.exit.id}`)).json.event.clip?.status === 'expired' ? true : undefined,
  );
  await page.reload();
  const expired = page.locator(`li.event[data-event-id="${pass.exit.id}"] figure[data-status="expired"]`);
  t.regex((await expired.textContent())!, /^Clip expired: the retention of event pictures and clips/);
  t.is(await expired.locator('video').count(), 0);
  t.deepEqual(consoleErrors, []);
});
