import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { ensureWebUi, launchChromium, screenshot } from '../helpers/browser.js';

/**
 * Password sign-in through the web UI in headless Chromium against a real daemon: the first admin with the
 * set-up code, a change made through the session cookie (so the page sends its CSRF token), the session
 * surviving a reload, sign-out, and a viewer who sees the cameras and events only.
 */
let d: TestDaemon;
let browser: Browser;
let page: Page;

test.before(async () => {
  [d, browser] = await Promise.all([startTestDaemon(), launchChromium(), ensureWebUi()]);
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
});
test.after.always(async () => {
  await browser?.close();
  await d?.close();
});

const nav = (name: string) => page.locator('nav.topnav').getByRole('link', { name, exact: true });

test.serial(
  'the first admin signs up with the set-up code, changes something, stays signed in after a reload',
  async (t) => {
    await page.goto(`${d.url}/`);
    await page.getByRole('heading', { name: 'Create the first admin' }).waitFor();
    await page.getByLabel('Set-up code').fill(d.runtime.users.issueSetupCode()!);
    await page.getByLabel('Username').fill('root');
    await page.getByLabel('Password', { exact: true }).fill('a long root password');
    await page.getByLabel('Password again').fill('a long root password');
    await screenshot(page, 'users-01-first-admin');
    await page.getByRole('button', { name: 'Create and sign in' }).click();
    await page.getByTestId('signed-in-as').filter({ hasText: 'root (admin)' }).waitFor();

    // A change through the cookie session: the server refuses it without the CSRF header the page must send.
    await nav('Collections').click();
    await page.getByLabel('ID', { exact: true }).fill('staff');
    await page.getByLabel('Name', { exact: true }).fill('Staff');
    await page.getByRole('button', { name: 'Create collection' }).click();
    await page.getByRole('heading', { name: 'Collection Staff' }).waitFor();
    t.is((await call(d, 'GET', '/v1/collections/staff')).status, 200);

    // The cookie is HttpOnly: the page's script cannot read it, yet a reload keeps the session.
    t.is(await page.evaluate('document.cookie'), '');
    const cookies = await page.context().cookies();
    t.like(
      cookies.find((c) => c.name === 'vigil_session'),
      { httpOnly: true, sameSite: 'Strict', secure: false },
    );
    await page.reload();
    await page.getByTestId('signed-in-as').filter({ hasText: 'root (admin)' }).waitFor();
    t.is(new URL(page.url()).pathname, '/collections/staff');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    t.is((await page.context().cookies()).filter((c) => c.name === 'vigil_session').length, 0);
  },
);

test.serial('a wrong password is the form’s error; a viewer signs in to the cameras and events only', async (t) => {
  const made = await call(d, 'POST', '/v1/users', { username: 'guard', password: 'guard password 1', role: 'viewer' });
  t.is(made.status, 201);
  await page.goto(`${d.url}/`);
  await page.getByLabel('Username').fill('guard');
  await page.getByLabel('Password', { exact: true }).fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('The username or password is wrong.').waitFor();
  await page.getByLabel('Password', { exact: true }).fill('guard password 1');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('signed-in-as').filter({ hasText: 'guard (viewer)' }).waitFor();
  // A viewer's home is the live camera grid; the nav offers only what a viewer may use.
  t.is(new URL(page.url()).pathname, '/');
  t.deepEqual(await page.locator('nav.topnav a').allTextContents(), ['Live', 'Monitors', 'Events', 'Visitors']);
  await page.getByText('No cameras yet.').waitFor();
  await nav('Monitors').click();
  await page.getByText('No monitors yet.').waitFor();
  t.is(await page.getByRole('button', { name: 'Create monitor' }).count(), 0, 'adding a camera is not offered');
  await nav('Events').click();
  await page.getByRole('heading', { name: 'Events' }).waitFor();
  await page.getByText('No events match.').waitFor();
  t.is(await page.locator('.alert.error').count(), 0, 'nothing the viewer sees answers 403');
  await screenshot(page, 'users-02-viewer');
  // The admin revokes the session: the page's next call is 401 and it asks to sign in again.
  const sessions = await call(d, 'GET', '/v1/auth/sessions');
  const mine = sessions.json.sessions.find((s: { username: string }) => s.username === 'guard');
  t.is((await call(d, 'DELETE', `/v1/auth/sessions/${mine.id}`)).status, 200);
  await nav('Monitors').click();
  await page.getByText('Your session has ended').waitFor();
});
