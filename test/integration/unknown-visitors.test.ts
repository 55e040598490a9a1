import test from 'ava';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { startMosquitto, type Broker } from '../helpers/mosquitto.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { fileTempDir } from '../helpers/tempDir.js';
import { startReceiver, type Receiver } from '../helpers/webhookReceiver.js';

/**
 * Issue 42 on a real daemon with the real models and a real RTSP stream: a stranger (Rob Lowe, in nobody's
 * gallery) passes the door camera three times per loop of the scripted stream, at three places and sizes, then
 * a second stranger (Alex Lacamoire) passes once. The three passes are one unknown visitor with three visits;
 * one call enrols it, and its next pass is a person_enter. Then the API on unknowns: crops, dismiss, merge,
 * delete (with its events and crops), retention, the person timeline, and a monitor that groups nothing.
 */
const W = 640,
  H = 360,
  FPS = 10;
let d: TestDaemon;
let rtsp: RtspServer;
let broker: Broker;
let receiver: Receiver;
let sub: mqtt.MqttClient;
let dataDir: string;
const messages: { topic: string; payload: Buffer }[] = [];

type Json = Record<string, any>;
const history = async (q: string): Promise<Json[]> => (await call(d, 'GET', `/v1/events?limit=500&${q}`)).json.events;

test.before(async () => {
  const rob = face('identities/rob_lowe/1.jpg'),
    alex = face('identities/alex_lacamoire/1.jpg');
  const frames = await renderScenario(
    [
      { image: null, seconds: 2 },
      { image: rob, seconds: 2.5, at: { x: 0.05, y: 0.1, width: 0.35 }, to: { x: 0.08, y: 0.1, width: 0.35 } },
      { image: null, seconds: 3 },
      { image: rob, seconds: 2.5, at: { x: 0.36, y: 0.2, width: 0.3 }, to: { x: 0.38, y: 0.2, width: 0.3 } },
      { image: null, seconds: 3 },
      { image: rob, seconds: 2.5, at: { x: 0.6, y: 0.05, width: 0.38 } },
      { image: null, seconds: 3 },
      { image: alex, seconds: 2.5, at: { x: 0.4, y: 0.1, width: 0.25 } },
      { image: null, seconds: 2.5 },
    ],
    { width: W, height: H, fps: FPS },
  );
  [rtsp, broker, receiver] = await Promise.all([
    startRtspServer({ frames, fps: FPS }),
    startMosquitto(),
    startReceiver(),
  ]);
  const root = fileTempDir('vigil-unknowns-');
  dataDir = join(root, 'data');
  d = await startTestDaemon({
    dir: root,
    toml: `${FAST_MONITORS_TOML}
[events]
flush_interval_ms = 100
retention_interval_seconds = 1
[mqtt]
enabled = true
url = "${broker.url}"
client_id = "vigil-unknowns"
reconnect_delay_seconds = 0.2
[webhooks]
first_retry_seconds = 0.2
max_retry_delay_seconds = 1`,
  });
  await enrollObamaBiden(d, 'home');
  sub = await mqtt.connectAsync(broker.url, { clientId: 'unknowns-sub', clean: true });
  sub.on('message', (topic, payload) => messages.push({ topic, payload }));
  await sub.subscribeAsync('vigil/door/events', { qos: 1 });
  const hook = await call(d, 'POST', '/v1/webhooks', { url: `${receiver.url}/hook` });
  if (hook.status !== 201) throw new Error(JSON.stringify(hook.json));
  receiver.secret = hook.json.secret;
});
test.after.always(async () => {
  await sub?.endAsync();
  await d?.close();
  await Promise.all([rtsp?.stop(), broker?.stop(), receiver?.close()]);
});

let robId = '';

test.serial(
  'a stranger passing three times is one unknown with three visits; one call enrols it; the next pass is a person_enter',
  async (t) => {
    const create = await call(d, 'POST', '/v1/monitors', {
      id: 'door',
      name: 'Door',
      source: { url: rtsp.url() },
      collection_id: 'home',
      inference_fps: 5,
      event_policy: { confirm_frames: 2, absence_timeout_seconds: 1.5, cooldown_seconds: 0 },
      zones: [
        {
          name: 'porch',
          polygon: [
            [0, 0],
            [1, 0],
            [1, 1],
            [0, 1],
          ],
        },
      ],
    });
    t.is(create.status, 201, JSON.stringify(create.json));
    t.deepEqual(create.json.monitor.faces, { track_identity: null, group_unknowns: null });
    // The stream starts at its first frame when the monitor connects: the first three passes are Rob's.
    const exits = await waitFor(
      "three unknown exits (Rob's three passes)",
      async () => {
        const e = (await history('type=unknown_exit&monitor_id=door')).reverse();
        return e.length >= 3 ? e.slice(0, 3) : undefined;
      },
      90_000,
      500,
    );
    const enters = (await history('type=unknown_enter&monitor_id=door')).reverse().slice(0, 3);
    robId = enters[0]!.unknown_id;
    t.regex(robId, /^u-[0-9a-f]{10}$/);
    for (const e of [...enters, ...exits]) t.is(e.unknown_id, robId, `${e.type} ${e.occurred_at}`);
    t.is(new Set(enters.map((e) => e.track_id)).size, 3, 'three tracks: three visits');
    // The decision's basis travels with the event.
    t.like(enters[0]!.identity, { method: 'track' });
    t.true(
      enters[0]!.identity.frames >= 1 && enters[0]!.identity.best_quality > 0,
      JSON.stringify(enters[0]!.identity),
    );

    const u = await waitFor('its crops', async () => {
      const r = (await call(d, 'GET', `/v1/unknowns/${robId}`)).json;
      return r.unknown?.crops?.length ? r : undefined;
    });
    t.like(u.unknown, { id: robId, status: 'active', cameras: ['door'] });
    t.true(u.unknown.visits >= 3, `visits ${u.unknown.visits}`);
    t.true(u.visits.length >= 3);
    t.true(
      u.visits.every((v: Json) => v.zones.includes('porch')),
      JSON.stringify(u.visits),
    );
    t.true(u.events.every((e: Json) => e.unknown_id === robId));
    const list = (await call(d, 'GET', '/v1/unknowns')).json.unknowns as Json[];
    t.is(list.filter((x) => x.visits >= 3).length, 1, JSON.stringify(list.map((x) => [x.id, x.visits])));

    // MQTT and webhooks carry the unknown_id (the same view as GET /v1/events/{id}).
    await waitFor('an MQTT unknown_enter', async () =>
      messages.some((m) => JSON.parse(m.payload.toString()).unknown_id === robId) ? true : undefined,
    );
    await waitFor('a webhook unknown_enter', async () =>
      receiver.received.some((r) => r.json.type === 'monitor.unknown_enter' && r.json.data.unknown_id === robId)
        ? true
        : undefined,
    );

    const enrolledAt = new Date().toISOString();
    const enrol = await call(d, 'POST', `/v1/unknowns/${robId}/enrol`, {
      collection_id: 'home',
      person_id: 'rob',
      create: true,
      name: 'Rob',
    });
    t.is(enrol.status, 201, JSON.stringify(enrol.json));
    t.true(enrol.json.created);
    t.is(enrol.json.person.id, 'rob');
    t.true(enrol.json.faces.length >= 1, JSON.stringify(enrol.json.rejected_images));
    t.like(enrol.json.unknown, { status: 'enrolled', enrolled_as: { collection_id: 'home', person_id: 'rob' } });
    const faces = (await call(d, 'GET', '/v1/collections/home/persons/rob/faces')).json.faces as Json[];
    t.is(faces.length, enrol.json.faces.length, "the crops are the person's faces");

    const next = await waitFor(
      "Rob's next pass as a person",
      async () =>
        (await history(`type=person_enter,unknown_enter&monitor_id=door&since=${encodeURIComponent(enrolledAt)}`))
          .reverse()
          .find((e) => e.person?.id === 'rob' || e.unknown_id === robId),
      90_000,
      500,
    );
    t.is(next.type, 'person_enter', JSON.stringify(next));
    t.is(next.person.id, 'rob');
    t.like(next.identity, { method: 'track' });
    t.true(next.identity.margin > 0, JSON.stringify(next.identity));
  },
);

test.serial('the person timeline: visits per camera with their zones, first and last seen', async (t) => {
  await waitFor('a person_exit of Rob', async () =>
    (await history('type=person_exit&person_id=rob')).length ? true : undefined,
  );
  const r = await call(d, 'GET', '/v1/collections/home/persons/rob/timeline');
  t.is(r.status, 200, JSON.stringify(r.json));
  t.true(r.json.visit_count >= 1);
  t.like(r.json.cameras[0], { monitor_id: 'door', zones: ['porch'] });
  const v = r.json.visits.find((x: Json) => x.exited_at);
  t.truthy(v, JSON.stringify(r.json.visits));
  t.true(v.seconds > 0);
  t.truthy(r.json.first_seen_at);
  t.false(r.json.truncated);
  t.is((await call(d, 'GET', '/v1/collections/home/persons/nobody/timeline')).status, 404);
});

test.serial(
  'crops are JPEGs kept 0600 under the data dir; dismiss hides an unknown, restore shows it again',
  async (t) => {
    const alexId = await waitFor(
      'the second stranger',
      async () => {
        const e = await history('type=unknown_exit&monitor_id=door');
        return e.find((x) => x.unknown_id && x.unknown_id !== robId)?.unknown_id as string | undefined;
      },
      90_000,
      500,
    );
    const u = await waitFor('its crops', async () => {
      const r = (await call(d, 'GET', `/v1/unknowns/${alexId}`)).json.unknown;
      return r?.crops?.length ? r : undefined;
    });
    const crop = await fetch(`${d.url}${u.crops[0].url}`, { headers: d.auth });
    t.is(crop.status, 200);
    t.is(crop.headers.get('content-type'), 'image/jpeg');
    const bytes = Buffer.from(await crop.arrayBuffer());
    t.is(bytes[0], 0xff);
    const dir = join(dataDir, 'events', 'unknowns');
    const files = readdirSync(dir);
    t.true(files.length >= 1);
    for (const f of files) t.is(statSync(join(dir, f)).mode & 0o777, 0o600, f);

    t.is((await call(d, 'POST', `/v1/unknowns/${alexId}/dismiss`)).json.unknown.status, 'dismissed');
    const active = (await call(d, 'GET', '/v1/unknowns')).json.unknowns as Json[];
    t.false(active.some((x) => x.id === alexId));
    const dismissed = (await call(d, 'GET', '/v1/unknowns?status=dismissed')).json.unknowns as Json[];
    t.true(dismissed.some((x) => x.id === alexId));
    t.is((await call(d, 'POST', `/v1/unknowns/${alexId}/restore`)).json.unknown.status, 'active');
    t.is((await call(d, 'GET', '/v1/unknowns/u-0000000000')).status, 404);
  },
);

test.serial('merge moves the events and the id; delete removes the unknown with its events and crops', async (t) => {
  const alexId = (await history('type=unknown_enter&monitor_id=door')).find((x) => x.unknown_id !== robId)!
    .unknown_id as string;
  const self = await call(d, 'POST', `/v1/unknowns/${robId}/merge`, { unknown_ids: [robId] });
  t.is(self.status, 400);
  const m = await call(d, 'POST', `/v1/unknowns/${robId}/merge`, { unknown_ids: [alexId] });
  t.is(m.status, 200, JSON.stringify(m.json));
  t.deepEqual(m.json.unknown.merged_ids, [alexId]);
  t.is((await history(`unknown_id=${alexId}`)).length, 0, 'its events carry the id they joined');
  // The merged-away id leads to the one it joined.
  t.is((await call(d, 'GET', `/v1/unknowns/${alexId}`)).json.unknown.id, robId);

  const before = (await history(`unknown_id=${robId}`)).length;
  t.true(before > 0);
  const cropFiles = (await call(d, 'GET', `/v1/unknowns/${robId}`)).json.unknown.crops.length as number;
  const onDisk = readdirSync(join(dataDir, 'events', 'unknowns')).length;
  t.is((await call(d, 'DELETE', `/v1/unknowns/${robId}`)).status, 204);
  t.is((await call(d, 'GET', `/v1/unknowns/${robId}`)).status, 404);
  t.is((await call(d, 'GET', `/v1/unknowns/${alexId}`)).status, 404);
  t.is((await history(`unknown_id=${robId}`)).length, 0, 'its events went with it');
  t.is(readdirSync(join(dataDir, 'events', 'unknowns')).length, onDisk - cropFiles, 'and its crops');
});

test.serial('retention: an unknown whose events age out goes with its crops', async (t) => {
  // New passes make new unknowns (the old one was deleted); wait for one with a crop, then stop the camera.
  const id = await waitFor(
    'a new unknown with crops',
    async () => {
      const l = (await call(d, 'GET', '/v1/unknowns?status=all')).json.unknowns as Json[];
      return l.find((x) => x.crops.length > 0)?.id as string | undefined;
    },
    90_000,
    500,
  );
  t.is((await call(d, 'PATCH', '/v1/monitors/door', { enabled: false })).status, 200);
  await new Promise((r) => setTimeout(r, 3000));
  // Events older than ~1 s go at once (retention runs when its settings change).
  const s = await call(d, 'PATCH', '/v1/settings', { 'events.max_age_days': 1 / 86_400 });
  t.is(s.status, 200, JSON.stringify(s.json));
  await waitFor('the unknown removed with its events', async () =>
    (await call(d, 'GET', `/v1/unknowns/${id}`)).status === 404 ? true : undefined,
  );
  t.deepEqual(readdirSync(join(dataDir, 'events', 'unknowns')), []);
});

test.serial('a monitor that does not group unknowns gives no unknown_id and keeps no crops', async (t) => {
  const create = await call(d, 'POST', '/v1/monitors', {
    id: 'private',
    name: 'Private',
    source: { url: rtsp.url() },
    collection_id: 'home',
    inference_fps: 5,
    event_policy: { confirm_frames: 2, absence_timeout_seconds: 1.5, cooldown_seconds: 0 },
    faces: { group_unknowns: false },
  });
  t.is(create.status, 201, JSON.stringify(create.json));
  t.deepEqual(create.json.monitor.faces, { track_identity: null, group_unknowns: false });
  await call(d, 'PATCH', '/v1/settings', { 'events.max_age_days': 30 });
  const e = await waitFor(
    'an unknown exit on it',
    async () => {
      const l = await history('type=unknown_exit&monitor_id=private');
      return l.length ? l : undefined;
    },
    90_000,
    500,
  );
  t.true(
    e.every((x) => x.unknown_id === null),
    JSON.stringify(e.map((x) => x.unknown_id)),
  );
  t.deepEqual((await call(d, 'GET', '/v1/unknowns?status=all&monitor_id=private')).json.unknowns, []);
  t.deepEqual(readdirSync(join(dataDir, 'events', 'unknowns')), []);
});
