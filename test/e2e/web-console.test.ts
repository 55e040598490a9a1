import test from 'ava';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import mqtt from 'mqtt';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { ensureWebUi, launchChromium, screenshot, signInWithPassword } from '../helpers/browser.js';
import { allEvents, enrollObamaBiden, FAST_MONITORS_TOML, knownThenUnknown, waitFor } from '../helpers/monitors.js';
import { startMosquitto, type Broker } from '../helpers/mosquitto.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { startReceiver, type Receiver } from '../helpers/webhookReceiver.js';

/**
 * The console as the people on site use it, in headless Chromium against one real daemon, a real RTSP
 * stream, Mosquitto and a webhook receiver, each person with a password and their own browser: an operator
 * adds a camera and tests its connection (the first frame; a closed port's cause), an admin turns on MQTT
 * and adds a webhook on the settings page (server.toml keeps its comments), a viewer watches but every
 * change answers 403 forbidden_role and the controls are not shown, cookie requests without the CSRF token
 * or from another origin are refused, and a session revoked on the users page ends in the other browser.
 */
let d: TestDaemon;
let rtsp: RtspServer;
let broker: Broker;
let receiver: Receiver;
let browser: Browser;
let attacker: Server;
const people = {
  chief: { password: 'chief password 1', role: 'admin' },
  olive: { password: 'olive password 1', role: 'operator' },
  vera: { password: 'vera password 12', role: 'viewer' },
} as const;
type Person = keyof typeof people;
const pages = {} as Record<Person, Page>;
const contexts: BrowserContext[] = [];

/** Console errors of every page, but for the refusals a test provokes on purpose (while `provoking`). */
const consoleErrors: string[] = [];
let provoking = false;
const watchConsole = (p: Page) => {
  p.on('console', (m) => {
    const at = m.location().url;
    // The sign-in page's session probe answers 401 before anyone signed in (as it should).
    if (m.type() === 'error' && !provoking && !at.endsWith('/v1/auth/session'))
      consoleErrors.push(`${m.text()} (${at})`);
  });
  p.on('pageerror', (e) => consoleErrors.push(String(e)));
};

const COMMENTED_TOML = `${FAST_MONITORS_TOML}
# Site notes: the broker lives on the NAS.
[events]
flush_interval_ms = 100
# a month of history
max_age_days = 30 # days
`;

test.before(async () => {
  const [frames] = await Promise.all([
    renderScenario(knownThenUnknown(3), { width: 640, height: 360, fps: 10 }),
    ensureWebUi(),
  ]);
  [rtsp, broker, receiver, browser, d] = await Promise.all([
    startRtspServer({ frames, fps: 10 }),
    startMosquitto(),
    startReceiver(),
    launchChromium(),
    startTestDaemon({ toml: COMMENTED_TOML }),
  ]);
  await enrollObamaBiden(d, 'staff');
  for (const [username, p] of Object.entries(people)) {
    const r = await call(d, 'POST', '/v1/users', { username, password: p.password, role: p.role });
    if (r.status !== 201) throw new Error(JSON.stringify(r.json));
  }
  // Each person in their own browser context (their own cookie jar), signed in with their password.
  for (const who of Object.keys(people) as Person[]) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    contexts.push(context);
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    watchConsole(page);
    pages[who] = page;
  }
  // Another origin on the same host: same-site for the browser, so SameSite=Strict alone would send the cookie.
  attacker = createServer((req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(
      `<form id="f" method="post" enctype="text/plain" action="${d.url}/v1/collections">` +
        '<input name=\'{"id":"forged","x":"\' value=\'"}\'></form><script>f.submit()</script>',
    );
  });
  await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
});
test.after.always(async () => {
  await browser?.close();
  await d?.close();
  attacker?.close();
  await Promise.all([rtsp?.stop(), broker?.stop(), receiver?.close()]);
});

const nav = (p: Page, name: string) => p.locator('nav.topnav').getByRole('link', { name, exact: true }).click();
const signIn = (who: Person, path = '/') => signInWithPassword(pages[who], d.url, who, people[who].password, path);

test.serial(
  'an operator signs in, adds a camera and tests its connection: the first frame, or the cause',
  async (t) => {
    t.timeout(90_000);
    const page = pages.olive;
    await signIn('olive');
    t.is(await page.getByTestId('signed-in-as').textContent(), 'olive (operator)');
    await nav(page, 'Monitors');
    await page.getByLabel('Name', { exact: true }).fill('Back door');
    t.is(await page.getByLabel('ID', { exact: true }).inputValue(), 'back-door', 'the id follows the name');
    const result = page.getByTestId('test-result');

    // Nothing listens on port 9: the cause, not a spinner.
    await page.getByLabel('RTSP URL').fill('rtsp://127.0.0.1:9/stream');
    await page.getByRole('button', { name: 'Test connection' }).click();
    await result.and(page.locator('[data-ok="false"]')).waitFor();
    t.regex((await result.textContent())!, /Camera unreachable: connection refused/);

    await page.getByLabel('RTSP URL').fill(rtsp.url());
    await page.getByRole('button', { name: 'Test connection' }).click();
    await result.and(page.locator('[data-ok="true"]')).waitFor({ timeout: 30_000 });
    t.regex((await result.locator('figcaption').textContent())!, /^Connected: 640×360, first frame in/);
    const [w, h] = await result.locator('img').evaluate(async (el) => {
      const img = el as unknown as { decode(): Promise<void>; naturalWidth: number; naturalHeight: number };
      await img.decode();
      return [img.naturalWidth, img.naturalHeight];
    });
    t.true(w! > 0 && Math.abs(w! / h! - 16 / 9) < 0.02, `the snapshot is shown (${w}x${h})`);
    await screenshot(page, 'console-01-camera-test');

    await page.getByLabel('Collection').selectOption('staff');
    await page.getByLabel('Inference rate (frames/s)').fill('4');
    await page.getByRole('button', { name: 'Create monitor' }).click();
    await page.getByRole('heading', { name: 'Back door' }).waitFor();
    const m = (await call(d, 'GET', '/v1/monitors/back-door')).json.monitor;
    t.like(m, { name: 'Back door', collection_id: 'staff', inference_fps: 4, source: { url: rtsp.url() } });
    // The camera runs: its preview shows frames and its faces become events (the viewer test reads them).
    await page.locator('.preview[data-frames]:not([data-frames="0"])').waitFor({ timeout: 30_000 });
  },
);

test.serial(
  'an admin turns on MQTT and adds a webhook on the settings page; server.toml keeps its comments',
  async (t) => {
    t.timeout(90_000);
    const page = pages.chief;
    const sub = await mqtt.connectAsync(broker.url, { clientId: 'console-watch', clean: true });
    try {
      const online = new Promise<string>((resolve) =>
        sub.on('message', (topic, payload) => {
          if (topic === 'vigil/available' && payload.toString() === 'online') resolve(topic);
        }),
      );
      await sub.subscribeAsync('vigil/available', { qos: 1 });
      await signIn('chief', '/settings');
      await page.getByRole('heading', { name: 'Settings', exact: true }).waitFor();
      const form = page.locator('form[data-section="mqtt"]');
      await form.getByLabel('enabled', { exact: true }).check();
      await form.getByLabel('url', { exact: true }).fill(broker.url);
      await form.getByRole('button', { name: 'Save' }).click();
      const outcome = page.locator('form[data-section="mqtt"]').getByTestId('settings-outcome');
      await outcome.waitFor();
      t.regex((await outcome.textContent())!, /mqtt\.enabled: applied now\./);
      await page
        .getByTestId('mqtt-state')
        .filter({ hasText: `connected to ${broker.url}` })
        .waitFor();
      await online; // the broker got Vigil's availability: it is really connected, without a restart
      t.is(await page.getByTestId('restart-needed').count(), 0);

      await page.getByLabel('Receiver URL').fill(`${receiver.url}/site`);
      await page.getByRole('button', { name: 'Add webhook' }).click();
      const secret = (await page.getByTestId('webhook-secret').textContent())!;
      t.regex(secret, /^whsec_/);
      receiver.secret = secret;
      await page.getByTestId('webhooks').locator('li').first().getByRole('button', { name: 'Send test event' }).click();
      const got = await waitFor('test event', async () =>
        receiver.received.find((r) => r.json.type === 'webhook.test'),
      );
      t.like(got.json, { type: 'webhook.test' });
      t.is(receiver.rejected, 0, 'signed with the secret the page showed once');
      await screenshot(page, 'console-02-settings');

      const file = (await call(d, 'GET', '/v1/settings')).json.config_file as string;
      const text = readFileSync(file, 'utf8');
      for (const line of [
        '# Site notes: the broker lives on the NAS.',
        '# a month of history',
        'max_age_days = 30 # days',
      ])
        t.true(text.includes(line), line);
      t.regex(text, /\[mqtt\][^[]*enabled = true/);
      t.true(text.includes(`url = "${broker.url}"`));
    } finally {
      await sub.endAsync();
    }
  },
);

test.serial(
  'a viewer watches the cameras and events but changes nothing: no controls, 403 in the envelope',
  async (t) => {
    t.timeout(120_000);
    const page = pages.vera;
    // Faces that stand still are analysed at the motion gate's pace: two frames confirm them here.
    const policy = { event_policy: { confirm_frames: 2, absence_timeout_seconds: 1 } };
    t.is((await call(d, 'PATCH', '/v1/monitors/back-door', policy)).status, 200);
    let seen: string[] = [];
    const events = await waitFor(
      'an unknown face event with its picture',
      async () => {
        const all = await allEvents(d, 'back-door');
        seen = all.map((e) => e.type);
        return all.some((e) => e.type === 'unknown_enter') ? all : undefined;
      },
      60_000,
      500,
    ).catch((e: unknown) => {
      throw new Error(`${String(e)}; events seen: ${seen.join(', ')}`);
    });
    const unknown = events.find((e) => e.type === 'unknown_enter')!;
    await signIn('vera');
    t.deepEqual(await page.locator('nav.topnav a').allTextContents(), ['Live', 'Monitors', 'Events', 'Visitors']);
    const tile = page.locator('a.tile[data-monitor-id="back-door"]');
    await tile.locator('.preview[data-frames]:not([data-frames="0"])').waitFor({ timeout: 30_000 });

    await nav(page, 'Events');
    const list = page.getByTestId('event-list');
    await list.locator(`li.event[data-event-id="${unknown.id}"]`).waitFor();
    t.is(await list.getByRole('button', { name: 'Enrol this face' }).count(), 0);
    t.is(await list.getByRole('button', { name: 'Delete' }).count(), 0);
    await screenshot(page, 'console-03-viewer-events');
    await nav(page, 'Monitors');
    await page.getByRole('link', { name: 'back-door' }).click();
    await page.getByRole('heading', { name: 'Back door' }).waitFor();
    for (const name of ['Delete', 'Disable', 'Save', 'Take a still', 'Create kiosk link'])
      t.is(await page.getByRole('button', { name, exact: true }).count(), 0, name);

    // The API answers the viewer's session (with its CSRF token) 403 forbidden_role for every change.
    provoking = true;
    try {
      const tries: [string, string][] = [
        ['POST', `/v1/events/${unknown.id}/enrol`],
        ['DELETE', `/v1/events/${unknown.id}`],
        ['DELETE', '/v1/collections/staff/persons/obama'],
        ['GET', '/v1/collections/staff/export'],
        ['GET', '/v1/settings'],
        ['PATCH', '/v1/settings'],
        ['POST', '/v1/monitors/back-door/test'],
      ];
      const answers = (await page.evaluate(
        `(async (tries) => {
        const { csrf_token } = await (await fetch('/v1/auth/session')).json();
        const out = [];
        for (const [method, path] of tries) {
          const body = method === 'GET' || method === 'DELETE' ? undefined
            : JSON.stringify(path.includes('enrol') ? { collection_id: 'staff', person_id: 'x', create: true } : {});
          const r = await fetch(path, { method, body, headers: { 'X-CSRF-Token': csrf_token, 'content-type': 'application/json' } });
          out.push([method + ' ' + path, r.status, (await r.json()).error]);
        }
        return out;
      })(${JSON.stringify(tries)})`,
      )) as [string, number, { code: string; details: { required_role: string; role: string } }][];
      for (const [what, status, error] of answers) {
        t.is(status, 403, what);
        t.like(error, { code: 'forbidden_role', details: { role: 'viewer' } }, what);
      }
      // A settings page opened by its address says why instead of showing a form.
      await page.goto(`${d.url}/settings`);
      await page.locator('.alert.error').filter({ hasText: 'forbidden_role' }).waitFor();
      t.is(await page.locator('form[data-section]').count(), 0);
    } finally {
      provoking = false;
    }
    t.is((await call(d, 'GET', '/v1/collections/staff/persons/obama')).status, 200, 'nothing changed');
    t.true((await allEvents(d, 'back-door')).some((e) => e.id === unknown.id));
  },
);

test.serial('cookie requests without the CSRF token, or from another origin of this host, are refused', async (t) => {
  const page = pages.olive;
  provoking = true;
  try {
    const answers = (await page.evaluate(`(async () => {
      const { csrf_token } = await (await fetch('/v1/auth/session')).json();
      const post = (headers) => fetch('/v1/collections', {
        method: 'POST', headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ id: 'forged', name: 'forged' }),
      }).then(async (r) => [r.status, (await r.json()).error?.details?.reason ?? null]);
      return [await post({}), await post({ 'X-CSRF-Token': csrf_token + 'x' })];
    })()`)) as [number, string][];
    t.deepEqual(answers, [
      [403, 'missing_token'],
      [403, 'wrong_token'],
    ]);
    // A page on another port auto-submits a form to the daemon: the cookie goes along (same site), the
    // request is refused as cross-site.
    const port = (attacker.address() as { port: number }).port;
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.waitForURL(`${d.url}/v1/collections`);
    const body = JSON.parse((await page.locator('body').textContent())!) as {
      error: { code: string; details: unknown };
    };
    t.like(body.error, { code: 'csrf_failed', details: { reason: 'cross_site' } });
  } finally {
    provoking = false;
  }
  t.is((await call(d, 'GET', '/v1/collections/forged')).status, 404, 'nothing was created');
  // The page's own requests carry the token: a change through the UI works.
  await page.goto(`${d.url}/collections`);
  await page.getByLabel('ID', { exact: true }).fill('visitors');
  await page.getByLabel('Name', { exact: true }).fill('Visitors');
  await page.getByRole('button', { name: 'Create collection' }).click();
  await page.getByRole('heading', { name: 'Collection Visitors' }).waitFor();
});

test.serial('an admin revokes a session on the users page: that browser is asked to sign in again', async (t) => {
  const page = pages.chief;
  await nav(page, 'Users');
  const row = page.getByTestId('sessions').locator('tr[data-session-user="olive"]');
  await row.waitFor();
  t.is(await row.count(), 1);
  // The audit log names who changed the settings.
  await page
    .getByTestId('audit')
    .locator('tr', { hasText: 'chief' })
    .filter({ hasText: '/v1/settings' })
    .first()
    .waitFor();
  await screenshot(page, 'console-04-users');
  await row.getByRole('button', { name: 'Revoke' }).click();
  await row.waitFor({ state: 'detached' });
  const gone = (await call(d, 'GET', '/v1/auth/sessions')).json.sessions as { username: string }[];
  t.false(gone.some((s) => s.username === 'olive'));
  provoking = true; // the operator's next call is the 401 that ends the page's session
  try {
    await nav(pages.olive, 'Monitors');
    await pages.olive.getByText('Your session has ended').waitFor();
  } finally {
    provoking = false;
  }
});

test.serial('the browser console stayed clean', (t) => {
  t.deepEqual(consoleErrors, []);
});
