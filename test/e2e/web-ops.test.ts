import test from 'ava';
import { writeFileSync } from 'node:fs';
import { freePort } from '../helpers/shared.js';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { startDaemon, type Daemon } from '../../src/cli/serve.js';
import { loadConfig } from '../../src/config/load.js';
import { call, face, modelsDirWith, startTestDaemon, TEST_KEY, type TestDaemon } from '../helpers/daemon.js';
import { ensureWebUi, framesShown, launchChromium, screenshot, signIn } from '../helpers/browser.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer } from '../helpers/rtsp.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Operating pages in headless Chromium: the API docs page (/docs, Swagger UI served from node_modules,
 * offline) with a Bearer "try it" against the live daemon, and the link to it from the web UI.
 */
let d: TestDaemon;
let browser: Browser;

test.before(async () => {
  await ensureWebUi();
  [d, browser] = await Promise.all([startTestDaemon(), launchChromium()]);
});
test.after.always(async () => {
  await browser?.close();
  await d?.close();
});

test.serial(
  '/docs renders this daemon\'s /openapi.json offline, and "try it" with the Bearer key calls the API',
  async (t) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const outside: string[] = [];
    const csp: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(d.url) && !r.url().startsWith('data:')) outside.push(r.url());
    });
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) csp.push(m.text());
    });
    await page.goto(`${d.url}/docs`);
    await page.locator('#operations-collections-list_collections_v1_collections_get').waitFor({ timeout: 30_000 });
    await page
      .getByRole('button', { name: /Authorize/ })
      .first()
      .click();
    await page.locator('.modal-ux input[type=text], .modal-ux input[type=password]').first().fill(d.key);
    await page.locator('.modal-ux button.modal-btn.authorize').click();
    await page.locator('.modal-ux button.btn-done').click();
    await page.locator('#operations-collections-list_collections_v1_collections_get .opblock-summary').click();
    await page.getByRole('button', { name: 'Try it out' }).click();
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url().startsWith(`${d.url}/v1/collections`) && r.request().method() === 'GET'),
      page.getByRole('button', { name: 'Execute' }).click(),
    ]);
    t.is(response.status(), 200);
    t.is(await response.request().headerValue('authorization'), `Bearer ${d.key}`);
    await screenshot(page, 'api-docs');
    t.deepEqual(outside, [], 'nothing is fetched from outside the daemon');
    t.deepEqual(csp, []);
    await context.close();
  },
);

test.serial(
  'the web UI links to the API docs; /favicon.ico is served, so browsing leaves "Recent errors" empty',
  async (t) => {
    const page = await browser.newPage();
    await signIn(page, d.url, d.key);
    const link = page.locator('header.top a[href="/docs"]');
    t.is(await link.textContent(), 'API docs');
    for (const path of ['/', '/collections', '/monitors', '/events', '/system', '/search']) {
      await page.evaluate(
        `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
      );
      await page.waitForTimeout(1500);
    }
    // A deep link to the events page (a reload there) is the UI, not a 404.
    const events = await fetch(`${d.url}/events`);
    t.is(events.status, 200);
    t.regex(events.headers.get('content-type') ?? '', /text\/html/);
    const icon = await fetch(`${d.url}/favicon.ico`);
    t.is(icon.status, 200);
    t.is(icon.headers.get('content-type'), 'image/png');
    const recent = (await call(d, 'GET', '/v1/system')).json.recent_errors as { path: string; status: number }[];
    t.deepEqual(
      recent.filter((e) => e.status === 404),
      [],
      JSON.stringify(recent),
    );
    await page.close();
  },
);

test.serial('no page scrolls sideways at 390 px (a phone)', async (t) => {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
  await signIn(page, d.url, d.key);
  const wide: string[] = [];
  for (const path of ['/', '/collections', '/search', '/compare', '/detect', '/monitors', '/events', '/system']) {
    await page.evaluate(
      `history.pushState(null, '', ${JSON.stringify(path)}); dispatchEvent(new PopStateEvent('popstate'))`,
    );
    await page.waitForTimeout(800);
    const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
    if (width > 390) wide.push(`${path}: ${width}px`);
    await screenshot(page, `w390${path === '/' ? '-dashboard' : path.replaceAll('/', '-')}`);
  }
  t.deepEqual(wide, []);
  await page.close();
});

test.serial(
  'a kiosk URL made with a preview token shows the stream, and shows it again after the daemon restarts',
  async (t) => {
    t.timeout(240_000);
    const [frames, models, port] = await Promise.all([
      renderScenario(
        [
          { image: face('identities/obama/1.jpg'), seconds: 2 },
          { image: null, seconds: 1 },
        ],
        { width: 320, height: 240, fps: 10 },
      ),
      modelsDirWith('edge_s'),
      freePort(),
    ]);
    const rtsp = await startRtspServer({ frames, fps: 10 });
    // A fixed port, so the open kiosk page finds the restarted daemon at the same address.
    const dir = tempDir(t, 'vigil-kiosk-e2e-');
    const file = join(dir, 'server.toml');
    writeFileSync(
      file,
      [
        '[server]',
        'host = "127.0.0.1"',
        `port = ${port}`,
        `data_dir = ${JSON.stringify(join(dir, 'data'))}`,
        `models_dir = ${JSON.stringify(models)}`,
        'log_level = "silent"',
        FAST_MONITORS_TOML,
      ].join('\n'),
    );
    const start = async (): Promise<Daemon> => {
      const daemon = await startDaemon(loadConfig(file, { VIGIL_API_KEY: TEST_KEY }));
      await daemon.ready;
      return daemon;
    };
    let daemon = await start();
    const page = await browser.newPage();
    try {
      const td = Object.assign(daemon, { key: TEST_KEY, auth: { Authorization: `Bearer ${TEST_KEY}` } });
      await enrollObamaBiden(td, 'gallery');
      t.is(
        (
          await call(td, 'POST', '/v1/monitors', {
            id: 'door',
            name: 'Door',
            source: { url: rtsp.url() },
            collection_id: 'gallery',
            inference_fps: 2,
            preview_enabled: true,
          })
        ).status,
        201,
      );
      const created = await call(td, 'POST', '/v1/kiosk-tokens', { monitor_ids: ['door'], label: 'hall' });
      t.is(created.status, 201);
      const kioskUrl = daemon.url + created.json.kiosk_paths.door;
      await page.goto(kioskUrl);
      await waitFor('kiosk frames', async () => ((await framesShown(page)) > 2 ? true : undefined), 30_000, 250).catch(
        async (e: unknown) => {
          await screenshot(page, 'kiosk-token-failed');
          throw e;
        },
      );
      t.is(await page.getByLabel('API key').count(), 0, 'no key is asked for');
      await daemon.close();
      daemon = await start();
      const before = await framesShown(page);
      await waitFor(
        'kiosk frames after the restart',
        async () => ((await framesShown(page)) > before + 2 ? true : undefined),
        45_000,
        250,
      );
      // A fresh load of the same URL (a rebooted display) works too.
      await page.goto(kioskUrl);
      await waitFor(
        'kiosk frames after a reload',
        async () => ((await framesShown(page)) > 2 ? true : undefined),
        30_000,
        250,
      );
      await screenshot(page, 'kiosk-token-after-restart');
      t.pass();
    } finally {
      await page.close();
      await daemon.close();
      await rtsp.stop();
    }
  },
);
