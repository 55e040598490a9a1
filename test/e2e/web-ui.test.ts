import test from 'ava';
import { copyFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import sharp from 'sharp';
import type { Browser, Page } from 'playwright-core';
import { loadCatalog } from '../../src/models/catalog.js';
import { call, FACES, face, labels, MODELS_MIRROR, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { ensureWebUi, framesShown, launchChromium, screenshot, signIn, useApiKey } from '../helpers/browser.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * The web UI end to end in headless Chromium against a real daemon and a real RTSP stream: sign in,
 * create a collection, enrol from fixture photos, search, compare, detect, then a monitor whose preview
 * changes and names the person; screenshots go to test-artifacts/.
 */
let d: TestDaemon;
let rtsp: RtspServer;
let browser: Browser;
let page: Page;
let upstream: Server;
let liveness: { mirror: string; files: string[] };
const blank = join(fileTempDir('vigil-web-'), 'empty-wall.jpg');

test.before(async () => {
  const [frames] = await Promise.all([
    renderScenario(
      [
        { image: face('identities/obama/1.jpg'), seconds: 3 },
        { image: null, seconds: 1 },
      ],
      { width: 640, height: 360, fps: 10 },
    ),
    ensureWebUi(),
    sharp({ create: { width: 320, height: 240, channels: 3, background: { r: 90, g: 110, b: 130 } } })
      .jpeg()
      .toFile(blank),
  ]);
  // The liveness addon's sources: an empty mirror and an upstream that answers 404, so the first enable
  // fails; the test then fills the mirror and retries.
  upstream = createServer((_req, res) => {
    res.statusCode = 404;
    res.end('nope');
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const catalog = await loadCatalog();
  const files = catalog.addons.liveness!.models.map((m) => m.file);
  for (const f of files)
    catalog.files[f]!.sources = [
      { type: 'url', url: `http://127.0.0.1:${(upstream.address() as { port: number }).port}/${f}` },
    ];
  const dir = fileTempDir('vigil-web-daemon-');
  writeFileSync(join(dir, 'catalog.json'), JSON.stringify(catalog));
  liveness = { mirror: fileTempDir('vigil-web-mirror-'), files };
  // One stream at most, so the second monitor runs into the capacity error.
  [d, rtsp, browser] = await Promise.all([
    startTestDaemon({
      dir,
      server: [`model_catalog = ${JSON.stringify(join(dir, 'catalog.json'))}`],
      toml: `${FAST_MONITORS_TOML}\nmax_streams = 1\n[addons]\nmirror = ${JSON.stringify(liveness.mirror)}`,
    }),
    startRtspServer({ frames, fps: 10 }),
    launchChromium(),
  ]);
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(20_000);
});
test.after.always(async () => {
  await browser?.close();
  await d?.close();
  await rtsp?.stop();
  upstream?.close();
});

const file = (rel: string) => FACES + rel;
const nav = (name: string) => page.locator('nav.topnav').getByRole('link', { name, exact: true }).click();

test.serial('sign in, dashboard', async (t) => {
  await page.goto(d.url + '/');
  await useApiKey(page, 'not-the-key-0123456789');
  await page.getByText('That API key is not valid.').waitFor();
  await signIn(page, d.url, d.key, '/dashboard');
  await page.getByTestId('readiness').filter({ hasText: 'Ready' }).waitFor();
  t.is(await page.getByTestId('model-pack').textContent(), 'edge_s');
  t.is(await page.getByTestId('provider').textContent(), 'cpu');
  t.is(await page.getByTestId('liveness').textContent(), 'Disabled');
  t.regex((await page.getByTestId('load').textContent())!, /^\d+\.\d\d \/ \d+\.\d\d \/ \d+\.\d\d$/);
  await screenshot(page, '01-dashboard');
});

test.serial(
  'create a collection, enrol a person from photos with a per-image rejection, search finds them',
  async (t) => {
    await nav('Collections');
    await page.getByLabel('ID', { exact: true }).fill('staff');
    await page.getByLabel('Name', { exact: true }).fill('Staff');
    await page.getByLabel('Match threshold').fill('0.4');
    await page.getByLabel('Save 112×112 face crops').check();
    await page.getByRole('button', { name: 'Create collection' }).click();
    await page.getByRole('heading', { name: 'Collection Staff' }).waitFor();
    t.is(new URL(page.url()).pathname, '/collections/staff');

    await page.getByLabel('Person ID').fill('obama');
    await page.locator('form:has(#enrol)').getByLabel('Name', { exact: true }).fill('Barack Obama');
    await page
      .locator('form:has(#enrol) input[type=file]')
      .setInputFiles([file('identities/obama/2.jpg'), blank, file('identities/obama/3.jpg')]);
    t.is(await page.locator('form:has(#enrol) .thumb').count(), 3);
    await page.getByRole('button', { name: 'Enrol person' }).click();
    await page.getByText('Enrolled Barack Obama with 2 of 3 images.').waitFor();
    const results = await page.locator('form:has(#enrol) .thumb .result').allTextContents();
    t.regex(results[0]!, /^Accepted/);
    t.is(results[1], 'No face found (face_not_found)');
    t.regex(results[2]!, /^Accepted/);
    await screenshot(page, '02-enrolment');
    await page.getByRole('list', { name: 'Persons' }).getByRole('link', { name: /obama/ }).waitFor();

    // The saved crops are fetched with the key in a header and shown from object URLs.
    await page.getByRole('list', { name: 'Persons' }).getByRole('link', { name: /obama/ }).click();
    await page.getByRole('heading', { name: 'Barack Obama' }).waitFor();
    await waitFor(
      'crops',
      async () => ((await page.locator('.facecard img[src^="blob:"]').count()) === 2 ? true : undefined),
      10_000,
    );
    await screenshot(page, '03-person');

    await nav('Search');
    await page.getByLabel('Collection').selectOption('staff');
    await page.locator('input[type=file]').setInputFiles(file('identities/obama/1.jpg'));
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.getByTestId('best-match').waitFor();
    t.is(await page.getByTestId('best-match').textContent(), 'Barack Obama');
    t.regex((await page.locator('section.result').textContent())!, /Threshold 0\.40/);
    await screenshot(page, '04-search');

    // A group photo: one result per face, numbered left to right; only Obama is enrolled.
    const group = 'groups/obama_biden_office.jpg';
    await page.locator('input[type=file]').setInputFiles(file(group));
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('section.result').filter({ hasText: '2 faces' }).waitFor();
    const rows = page.getByTestId('face-result');
    t.is(await rows.count(), labels.groups[group]!.left_to_right!.length);
    t.deepEqual(
      await page.getByTestId('face-who').allTextContents(),
      labels.groups[group]!.left_to_right!.map((who) => (who === 'obama' ? 'Barack Obama' : 'No match')),
    );
    t.is(await rows.filter({ hasText: '(selected)' }).count(), 1);
    t.is(await page.getByTestId('best-match').textContent(), 'Barack Obama · 1 not recognised');
    t.regex((await page.locator('section.result').textContent())!, /2 faces · Threshold 0\.40/);
    t.is(await page.locator('section.result canvas.annotated').count(), 1);
    await screenshot(page, '04b-search-group');

    // A photo without a face: the distinct refusal, not a generic error.
    await page.locator('input[type=file]').setInputFiles(blank);
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('[data-code="face_not_found"]').waitFor();
  },
);

test.serial('compare and detect draw the faces and show the verdict', async (t) => {
  await nav('Compare');
  const inputs = page.locator('input[type=file]');
  await inputs.nth(0).setInputFiles(file('identities/obama/1.jpg'));
  await inputs.nth(1).setInputFiles(file('identities/obama/2.jpg'));
  await page.getByRole('button', { name: 'Compare' }).click();
  t.is(await page.getByTestId('compare-verdict').textContent(), 'Same person');
  t.is(await page.locator('canvas.annotated').count(), 2);
  await screenshot(page, '05-compare');

  await nav('Detect');
  const group = 'groups/obama_biden_office.jpg';
  await page.locator('input[type=file]').setInputFiles(file(group));
  await page.getByRole('button', { name: 'Detect faces' }).click();
  const count = Number(/^(\d+) faces$/.exec((await page.getByTestId('face-count').textContent())!)![1]);
  t.true(count >= labels.groups[group]!.faces, String(count));
  t.is(await page.locator('section.result ol li').count(), count);
  await screenshot(page, '06-detect');
});

test.serial(
  'a monitor: URL shown redacted, live preview frames change, the name appears, events arrive; capacity error shown',
  async (t) => {
    await nav('Monitors');
    await page.getByLabel('ID', { exact: true }).fill('door');
    await page.getByLabel('Name', { exact: true }).fill('Front door');
    const url = rtsp.url().replace('rtsp://', 'rtsp://viewer:s3cret-pass@');
    await page.getByLabel('RTSP URL').fill(url);
    await page.getByLabel('Collection').selectOption('staff');
    await page.getByLabel('Inference rate (frames/s)').fill('4');
    await page.getByRole('button', { name: 'Create monitor' }).click();
    await page.getByRole('heading', { name: 'Front door' }).waitFor();
    t.is(await page.getByTestId('source-url').textContent(), rtsp.url());
    t.false((await page.content()).includes('s3cret-pass'));

    const first = await waitFor(
      'first frames',
      async () => ((await framesShown(page)) >= 3 ? framesShown(page) : undefined),
      30_000,
    );
    const src1 = await page.locator('.preview-img').first().getAttribute('src');
    await page.locator('.recognised li.matched', { hasText: 'Barack Obama' }).waitFor({ timeout: 30_000 });
    await waitFor('more frames', async () => ((await framesShown(page)) > first + 5 ? true : undefined), 20_000);
    t.not(await page.locator('.preview-img').first().getAttribute('src'), src1);
    await page.locator('.events li.person_enter', { hasText: 'Barack Obama' }).waitFor({ timeout: 30_000 });
    await screenshot(page, '07-monitor');

    // A second monitor has no stream left (max_streams = 1): the capacity error is shown as such.
    await nav('Monitors');
    await page.getByLabel('ID', { exact: true }).fill('yard');
    await page.getByLabel('Name', { exact: true }).fill('Yard');
    await page.getByLabel('RTSP URL').fill(rtsp.url());
    await page.getByRole('button', { name: 'Create monitor' }).click();
    await page.locator('.alert.capacity[data-code="monitor_limit_exceeded"]').waitFor();
    t.regex((await page.locator('.alert.capacity').textContent())!, /No stream capacity left/);
    await screenshot(page, '08-capacity');
    const state = await call(d, 'GET', '/v1/monitors/yard');
    t.is(state.status, 404, 'a refused create leaves nothing behind');
  },
);

test.serial(
  'the kiosk opened from the monitor page gets the key in memory and shows the preview with names',
  async (t) => {
    // A full load forgets the key (memory only): sign in again, then open the kiosk from the page.
    await signIn(page, d.url, d.key, '/monitors/door');
    await page.getByRole('heading', { name: 'Front door' }).waitFor();
    const [kiosk] = await Promise.all([
      page.waitForEvent('popup'),
      page.getByRole('button', { name: 'Open kiosk view' }).click(),
    ]);
    await kiosk.setViewportSize({ width: 1280, height: 720 });
    const first = await waitFor(
      'kiosk frames',
      async () => ((await framesShown(kiosk)) >= 2 ? framesShown(kiosk) : undefined),
      30_000,
    );
    await kiosk.locator('.kiosk-names li.matched', { hasText: 'Barack Obama' }).waitFor({ timeout: 30_000 });
    await waitFor(
      'kiosk frames advance',
      async () => ((await framesShown(kiosk)) > first + 3 ? true : undefined),
      20_000,
    );
    t.is(await kiosk.locator('button, input, a').count(), 0, 'no controls on the kiosk');
    t.is(new URL(kiosk.url()).pathname, '/kiosk/door');
    await screenshot(kiosk, '09-kiosk');
    await kiosk.close();
  },
);

test.serial('a kiosk opened directly asks for the key once, then shows the preview', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  const kiosk = await context.newPage();
  await kiosk.goto(`${d.url}/kiosk/door`);
  await useApiKey(kiosk, d.key);
  await waitFor('kiosk frames', async () => ((await framesShown(kiosk)) >= 3 ? true : undefined), 30_000);
  t.is(new URL(kiosk.url()).pathname, '/kiosk/door');
  await context.close();
});

test.serial(
  'System → Liveness: the download fails with its error, the retry succeeds and asks for a restart',
  async (t) => {
    await nav('System');
    t.regex((await page.getByTestId('liveness-status').textContent())!, /Running with liveness\s*no/);
    t.is(await page.getByTestId('liveness-state').textContent(), 'Not downloaded');
    await page.getByRole('button', { name: 'Download and enable after restart' }).click();
    await page.getByTestId('liveness-error').waitFor({ timeout: 60_000 });
    t.is(await page.getByTestId('liveness-state').textContent(), 'Failed');
    t.regex((await page.getByTestId('liveness-error').textContent())!, /addon_download_failed/);
    await screenshot(page, '10-liveness-error');
    for (const f of liveness.files) copyFileSync(join(MODELS_MIRROR, f), join(liveness.mirror, f));
    await page.getByRole('button', { name: 'Retry download and enable' }).click();
    await page
      .getByTestId('liveness-state')
      .filter({ hasText: 'Downloaded and verified' })
      .waitFor({ timeout: 60_000 });
    await page.getByText('Restart the daemon to apply').waitFor();
    t.is(await page.getByTestId('liveness-error').count(), 0);
    await screenshot(page, '11-liveness-ready');
  },
);

test.serial('collection delete asks for the force confirmation when persons would go with it', async (t) => {
  await call(d, 'DELETE', '/v1/monitors/door');
  await nav('Collections');
  await page.getByRole('link', { name: 'staff' }).click();
  page.once('dialog', (dlg) => void dlg.accept());
  await page.getByRole('button', { name: 'Delete collection' }).click();
  await page.getByRole('button', { name: 'Delete it with all its persons and faces' }).click();
  await page.getByRole('heading', { name: 'Collections' }).waitFor();
  t.is((await call(d, 'GET', '/v1/collections/staff')).status, 404);
});
