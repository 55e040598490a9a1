import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { ensureWebUi, launchChromium, screenshot, signIn } from '../helpers/browser.js';
import { allEvents, enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { startMosquitto, type Broker } from '../helpers/mosquitto.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { startReceiver, type Receiver } from '../helpers/webhookReceiver.js';

/**
 * The events page and the event outputs on the system page, in headless Chromium against a real daemon,
 * a real RTSP stream, Mosquitto and a webhook receiver: the timeline with face crops, the unknown-only
 * filter, "enrol this face", a person's history, MQTT status, adding a webhook and sending a test event.
 */
let d: TestDaemon;
let rtsp: RtspServer;
let broker: Broker;
let receiver: Receiver;
let browser: Browser;
let page: Page;

test.before(async () => {
  const [frames] = await Promise.all([
    renderScenario(
      [
        { image: face('identities/obama/1.jpg'), seconds: 3 },
        { image: null, seconds: 2 },
        { image: face('identities/rose_leslie/1.jpg'), seconds: 3 },
        { image: null, seconds: 2 },
      ],
      { width: 960, height: 540, fps: 10 },
    ),
    ensureWebUi(),
  ]);
  [rtsp, broker, receiver, browser] = await Promise.all([
    startRtspServer({ frames, fps: 10 }),
    startMosquitto(),
    startReceiver(),
    launchChromium(),
  ]);
  d = await startTestDaemon({
    toml: `${FAST_MONITORS_TOML}\n[events]\nflush_interval_ms = 100\n[mqtt]\nenabled = true\nurl = "${broker.url}"\nreconnect_delay_seconds = 0.2`,
  });
  await enrollObamaBiden(d, 'staff');
  await call(d, 'POST', '/v1/monitors', {
    id: 'lobby',
    name: 'Lobby',
    source: { url: rtsp.url() },
    collection_id: 'staff',
    inference_fps: 4,
    event_policy: { confirm_frames: 2, absence_timeout_seconds: 1, cooldown_seconds: 600 },
  });
  await waitFor(
    'unknown_exit',
    async () => ((await allEvents(d, 'lobby')).some((e) => e.type === 'unknown_exit') ? true : undefined),
    60_000,
    500,
  );
  await call(d, 'PATCH', '/v1/monitors/lobby', { enabled: false });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(20_000);
});
test.after.always(async () => {
  await browser?.close();
  await d?.close();
  await Promise.all([rtsp?.stop(), broker?.stop(), receiver?.close()]);
});

test.serial(
  "the timeline shows events with face crops; unknown-only filter; enrol an unknown face; the person's history",
  async (t) => {
    await signIn(page, d.url, d.key);
    await page.locator('nav.topnav').getByRole('link', { name: 'Events', exact: true }).click();
    const list = page.getByTestId('event-list');
    await list.locator('li.event').first().waitFor();
    t.true((await list.locator('li.event[data-type="person_enter"]').count()) >= 1);
    await list.locator('li.event[data-type="person_enter"] img.event-crop[src^="blob:"]').first().waitFor();
    await screenshot(page, '20-events');

    await page.getByLabel('Unknown faces only').check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await waitFor(
      'only unknown',
      async () => {
        const types = await list.locator('li.event').evaluateAll((els) => els.map((e) => e.getAttribute('data-type')));
        return types.length > 0 && types.every((x) => x?.startsWith('unknown_')) ? true : undefined;
      },
      10_000,
    );
    const unknown = list.locator('li.event[data-type="unknown_enter"]').first();
    await unknown.getByRole('button', { name: 'Show frame' }).click();
    await unknown.locator('img.event-frame[src^="blob:"]').waitFor();
    await unknown.getByRole('button', { name: 'Enrol this face' }).click();
    // The picker: no ids to type; a new person is named, the id comes from the name.
    await unknown.getByLabel('a new person').check();
    await unknown.getByLabel('Name of the new person').fill('Rose Leslie');
    await unknown.getByRole('button', { name: 'Enrol', exact: true }).click();
    await unknown.getByText('Enrolled into').waitFor();
    await screenshot(page, '21-events-enrolled');
    const person = await call(d, 'GET', '/v1/collections/staff/persons/rose-leslie');
    t.is(person.json.person.face_count, 1);

    await signIn(page, d.url, d.key, '/collections/staff/persons/obama'); // the key lives only in the tab's memory
    await page.getByRole('link', { name: /History/ }).click();
    await page.getByRole('heading', { name: 'History of obama' }).waitFor();
    await list.locator('li.event').first().waitFor();
    const people = await list.locator('li.event').evaluateAll((els) => els.map((e) => e.getAttribute('data-type')));
    t.true(people.length >= 2 && people.every((x) => x?.startsWith('person_')), JSON.stringify(people));
  },
);

test.serial(
  'system page: MQTT status, add a webhook (secret shown once), send a test event and read the delivery log',
  async (t) => {
    await page.locator('nav.topnav').getByRole('link', { name: 'System', exact: true }).click();
    await page.getByTestId('mqtt-state').filter({ hasText: 'connected to mqtt://127.0.0.1' }).waitFor();
    t.regex((await page.getByTestId('mqtt-queue').textContent())!, /0 dropped/);
    await page.getByLabel('Receiver URL').fill(`${receiver.url}/ui`);
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const secret = (await page.getByTestId('webhook-secret').textContent())!;
    t.regex(secret, /^whsec_/);
    receiver.secret = secret;
    const row = page.getByTestId('webhooks').locator('li').first();
    await row.getByRole('button', { name: 'Send test event' }).click();
    await waitFor(
      'test event',
      async () => (receiver.received.some((r) => r.json.type === 'webhook.test') ? true : undefined),
      20_000,
    );
    await row.getByRole('button', { name: 'Delivery log' }).click();
    await row.getByTestId('deliveries').getByText('delivered (204)').first().waitFor();
    t.is(receiver.rejected, 0);
    await screenshot(page, '22-system-outputs');
    // The page refreshes its facts every 5 s; an open delivery log stays open and the row shows fresh counts.
    await page.waitForTimeout(5_500);
    t.true(await row.getByTestId('deliveries').isVisible());
    await row.getByRole('button', { name: 'Disable' }).click();
    await row.getByText('disabled', { exact: true }).waitFor();
    t.false((await call(d, 'GET', '/v1/webhooks')).json.webhooks[0].enabled);
  },
);
