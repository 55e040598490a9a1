import test from 'ava';
import type { Browser } from 'playwright-core';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { ensureWebUi, launchChromium, screenshot, signIn } from '../helpers/browser.js';

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

test.serial('/docs renders this daemon\'s /openapi.json offline, and "try it" with the Bearer key calls the API', async (t) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const outside: string[] = [];
  const csp: string[] = [];
  page.on('request', (r) => { if (!r.url().startsWith(d.url) && !r.url().startsWith('data:')) outside.push(r.url()); });
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) csp.push(m.text()); });
  await page.goto(`${d.url}/docs`);
  await page.locator('#operations-collections-list_collections_v1_collections_get').waitFor({ timeout: 30_000 });
  await page.getByRole('button', { name: /Authorize/ }).first().click();
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
});

test.serial('the web UI links to the API docs', async (t) => {
  const page = await browser.newPage();
  await signIn(page, d.url, d.key);
  const link = page.locator('header.top a[href="/docs"]');
  t.is(await link.textContent(), 'API docs');
  await page.close();
});
