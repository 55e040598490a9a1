import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildWebUi } from '../../scripts/build-web.js';
import { REPO } from './shared.js';

/** Debian's chromium, headless, with nothing that phones home (no browser download: playwright-core only). */
export const CHROMIUM = process.env.VIGIL_CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
/** Screenshots of the browser tests (gitignored). */
export const ARTIFACTS = join(REPO, 'test-artifacts');

let built: Promise<string> | null = null;
/** Bundles src/web into dist/web once per process, so the tests work from a clean checkout. */
export function ensureWebUi(): Promise<string> {
  built ??= buildWebUi();
  return built;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Submits the sign-in page's advanced alternative: the API key (behind its disclosure). */
export async function useApiKey(page: Page, key: string): Promise<void> {
  const alt = page.locator('details.signin-alt');
  if (!(await alt.evaluate((el) => (el as unknown as { open: boolean }).open))) await alt.locator('summary').click();
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Use the key' }).click();
}

/** Signs in with the API key through the form on `/` and waits for the dashboard. */
export async function signIn(page: Page, baseUrl: string, key: string, path = '/'): Promise<void> {
  await page.goto(baseUrl + path);
  await useApiKey(page, key);
  await page.locator('header.top').waitFor();
}

/** Signs in through the form on `path` with a username and password, and waits for the signed-in name. */
export async function signInWithPassword(
  page: Page,
  baseUrl: string,
  username: string,
  password: string,
  path = '/',
): Promise<void> {
  await page.goto(baseUrl + path);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page
    .getByTestId('signed-in-as')
    .filter({ hasText: `${username} (` })
    .waitFor({ state: 'attached' }); // on a phone it sits in the folded menu
}

/**
 * Counts live blob: URLs in the page by wrapping URL.createObjectURL/revokeObjectURL (the browser has no
 * API to list them). Install before the page's scripts run; read with liveObjectUrls().
 */
export const COUNT_OBJECT_URLS = `(() => {
  const create = URL.createObjectURL.bind(URL), revoke = URL.revokeObjectURL.bind(URL);
  const live = new Set();
  window.__objectUrls = { live, created: 0 };
  URL.createObjectURL = (o) => { const u = create(o); live.add(u); window.__objectUrls.created++; return u; };
  URL.revokeObjectURL = (u) => { live.delete(u); revoke(u); };
})();`;

export async function liveObjectUrls(page: Page): Promise<{ live: number; created: number }> {
  return page.evaluate('({ live: window.__objectUrls.live.size, created: window.__objectUrls.created })');
}

/** The kiosk/preview frame counter the UI keeps on the .preview element. */
export async function framesShown(page: Page): Promise<number> {
  return Number((await page.locator('.preview').first().getAttribute('data-frames')) ?? 0);
}
