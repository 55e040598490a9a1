/**
 * The screenshots of docs/web-ui.md: a throw-away daemon with three cameras (two on a real RTSP test stream
 * that shows a known and an unknown face, one that cannot be reached), a collection with crops, users signed
 * in with a password, then the main pages in headless Chromium (Debian's /usr/bin/chromium) at 1280x800 in
 * the light theme, and the live grid at 390x844, as palette PNGs into docs/images/.
 * Usage: npm run docs:screenshots   (about a minute; needs the shared models and fixtures, like the tests)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import sharp from 'sharp';
import { call, face, form, post, REPO, startTestDaemon } from '../test/helpers/daemon.js';
import { ensureWebUi, launchChromium, signInWithPassword } from '../test/helpers/browser.js';
import { FAST_MONITORS_TOML, knownThenUnknown, waitFor } from '../test/helpers/monitors.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';

const OUT = join(REPO, 'docs/images');
/** A docs image larger than this is a sign of noise (a photo-like page): look before committing it. */
const MAX_BYTES = 250 * 1024;

/** The viewport as a palette PNG (a UI is mostly flat colour: a fraction of the RGB size). */
async function shoot(page: Page, name: string): Promise<void> {
  const png = await sharp(await page.screenshot())
    .png({ palette: true, quality: 85, effort: 10, compressionLevel: 9 })
    .toBuffer();
  writeFileSync(join(OUT, `${name}.png`), png);
  const kb = Math.round(png.length / 1024);
  console.log(`docs/images/${name}.png ${kb} KiB${png.length > MAX_BYTES ? ' (large: check it)' : ''}`);
}

const check = (what: string, r: { status: number; json: unknown }, want = 201) => {
  if (r.status !== want) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.json)}`);
};

mkdirSync(OUT, { recursive: true });
const [frames] = await Promise.all([
  renderScenario(knownThenUnknown(4), { width: 1280, height: 720, fps: 10, room: true }),
  ensureWebUi(),
]);
const [d, rtsp, browser] = await Promise.all([
  startTestDaemon({ toml: `${FAST_MONITORS_TOML}\n[events]\nflush_interval_ms = 100` }),
  startRtspServer({ frames, fps: 10 }),
  launchChromium(),
]);
try {
  // What a site looks like after a day: a collection with crops, three cameras, people with roles.
  check('collection', await call(d, 'POST', '/v1/collections', { id: 'staff', name: 'Staff', save_face_crops: true }));
  for (const [id, name, files] of [
    ['barack-obama', 'Barack Obama', ['identities/obama/2.jpg', 'identities/obama/3.jpg']],
    ['joe-biden', 'Joe Biden', ['identities/biden/2.jpg']],
  ] as const) {
    const r = await post(d, '/v1/collections/staff/persons', form({ id, name, images: files.map(face) }));
    check(name, { status: r.res.status, json: r.json });
  }
  for (const [id, name, url] of [
    ['front-door', 'Front door', rtsp.url()],
    ['lobby', 'Lobby', rtsp.url()],
    ['yard', 'Yard', 'rtsp://127.0.0.1:9/stream1'],
  ] as const)
    check(
      id,
      await call(d, 'POST', '/v1/monitors', {
        id,
        name,
        source: { url },
        collection_id: 'staff',
        inference_fps: id === 'lobby' ? 1 : 4,
        preview_enabled: true,
        // A face that stands still is analysed at the motion gate's pace: two frames confirm it.
        event_policy: { confirm_frames: 2, absence_timeout_seconds: 1 },
      }),
    );
  for (const [username, role] of [
    ['chief', 'admin'],
    ['olive', 'operator'],
    ['guard', 'viewer'],
  ] as const)
    check(username, await call(d, 'POST', '/v1/users', { username, password: `${username} password 1`, role }));
  await waitFor(
    'an unknown visitor and a known arrival',
    async () => {
      const [u, e] = await Promise.all([call(d, 'GET', '/v1/unknowns'), call(d, 'GET', '/v1/events?limit=50')]);
      const types = (e.json.events as { type: string }[]).map((x) => x.type);
      return u.json.unknowns?.length && types.includes('person_enter') ? true : undefined;
    },
    90_000,
    1000,
  );

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  await signInWithPassword(page, d.url, 'chief', 'chief password 1', '/');
  const go = async (path: string, ready: string, settle = 1500) => {
    await page.evaluate(
      `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
    );
    await page.locator(ready).first().waitFor();
    await page.waitForTimeout(settle); // pictures decoded, streams past their first frame
  };
  await go('/', 'a.tile[data-monitor-id="front-door"] .preview[data-boxes]:not([data-boxes="0"])', 200);
  await shoot(page, 'live-grid');
  await go('/monitors/front-door', '.preview[data-boxes]:not([data-boxes="0"])', 0);
  // The picture with its boxes and the names recognised now, rather than the facts above them.
  await page.evaluate("scrollTo(0, document.querySelector('.preview').getBoundingClientRect().top + scrollY - 110)");
  await page.locator('.preview[data-boxes]:not([data-boxes="0"])').waitFor();
  await shoot(page, 'camera');
  await go('/settings', 'form[data-section="mqtt"]');
  await shoot(page, 'settings');
  await go('/collections/staff', '.person-card img.person-photo[src^="blob:"]');
  await shoot(page, 'face-library');
  await go('/unknowns', 'li.unknown img.person-photo[src]');
  await shoot(page, 'unknowns');
  await go('/users', '[data-testid="sessions"] tr[data-session-user="chief"]');
  await shoot(page, 'users');
  await context.close();

  const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, colorScheme: 'light' });
  const p = await phone.newPage();
  p.setDefaultTimeout(30_000);
  await signInWithPassword(p, d.url, 'guard', 'guard password 1', '/');
  await p.locator('a.tile .preview[data-frames]:not([data-frames="0"])').first().waitFor();
  await p.waitForTimeout(2000);
  await shoot(p, 'phone-live-grid');
  await phone.close();
} finally {
  await browser.close();
  await d.close();
  await rtsp.stop();
}
