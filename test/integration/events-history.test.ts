import test from 'ava';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import sharp from 'sharp';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { validateDiscovery } from '../helpers/homeAssistantSchema.js';
import { allEvents, enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { startMosquitto, type Broker } from '../helpers/mosquitto.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { startReceiver, verifyStandardWebhook, type Receiver } from '../helpers/webhookReceiver.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * Monitor events end to end on a real H.264 stream: the durable history with snapshots, the same
 * events over a real Mosquitto broker (topics, presence, Home Assistant discovery) and signed webhooks
 * to a real HTTP receiver; enrolment from an event; deletes; a restart keeps everything.
 */
const FPS = 10;
let d: TestDaemon;
let rtsp: RtspServer;
let broker: Broker;
let receiver: Receiver;
let sub: mqtt.MqttClient;
const messages: { topic: string; payload: Buffer; retain: boolean }[] = [];
let dir: string;

const toml = (brokerUrl: string) => `${FAST_MONITORS_TOML}
[events]
flush_interval_ms = 100
[mqtt]
enabled = true
url = "${brokerUrl}"
client_id = "vigil-test"
reconnect_delay_seconds = 0.2
max_reconnect_delay_seconds = 1
[webhooks]
first_retry_seconds = 0.2
max_retry_delay_seconds = 1`;

test.before(async () => {
  const frames = await renderScenario(
    [
      { image: face('identities/obama/1.jpg'), seconds: 4 },
      { image: null, seconds: 2.5 },
      { image: face('identities/rose_leslie/1.jpg'), seconds: 4 },
      { image: null, seconds: 2.5 },
    ],
    { width: 960, height: 540, fps: FPS },
  );
  [rtsp, broker, receiver] = await Promise.all([
    startRtspServer({ frames, fps: FPS }),
    startMosquitto(),
    startReceiver(),
  ]);
  // The file's own dir: a later test restarts the daemon on it.
  const root = fileTempDir('vigil-events-');
  d = await startTestDaemon({ toml: toml(broker.url), dir: root });
  dir = join(root, 'data');
  await enrollObamaBiden(d, 'gallery');
  sub = await mqtt.connectAsync(broker.url, { clientId: 'test-sub', clean: true });
  sub.on('message', (topic, payload, packet) => messages.push({ topic, payload, retain: packet.retain }));
  await sub.subscribeAsync(['vigil/#', 'homeassistant/#'], { qos: 1 });
});
test.after.always(async () => {
  await sub?.endAsync();
  await d?.close();
  await Promise.all([rtsp?.stop(), broker?.stop(), receiver?.close()]);
});

const history = async (q = '') => (await call(d, 'GET', `/v1/events?limit=500${q}`)).json;

test.serial(
  'every ring event is in the history, in order, with snapshots; the same events reach MQTT and a signed webhook',
  async (t) => {
    const hook = await call(d, 'POST', '/v1/webhooks', { url: `${receiver.url}/hook`, description: 'test receiver' });
    t.is(hook.status, 201, JSON.stringify(hook.json));
    t.regex(hook.json.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
    receiver.secret = hook.json.secret;
    t.is(
      (await call(d, 'GET', `/v1/webhooks/${hook.json.webhook.id}`)).json.secret,
      undefined,
      'the secret is shown once',
    );

    const create = await call(d, 'POST', '/v1/monitors', {
      id: 'door',
      name: 'Front door',
      source: { url: rtsp.url() },
      collection_id: 'gallery',
      inference_fps: 4,
      event_policy: { confirm_frames: 2, absence_timeout_seconds: 1, cooldown_seconds: 60 },
    });
    t.is(create.status, 201);
    const ring = await waitFor(
      'unknown_exit',
      async () => {
        const ev = await allEvents(d, 'door');
        return ev.some((e) => e.type === 'unknown_exit') ? ev : undefined;
      },
      60_000,
      500,
    );
    const h = await waitFor('history caught up', async () => {
      const list = (await history()).events as Record<string, any>[];
      return list.length >= ring.length && list.every((e) => e.snapshot.status !== 'pending') ? list : undefined;
    });
    const ordered = [...h].reverse();
    t.deepEqual(
      ordered.slice(0, ring.length).map((e) => e.id),
      ring.map((e) => e.id),
      'same events, same order',
    );
    t.deepEqual(
      ordered.slice(0, 4).map((e) => `${e.type}:${e.person?.id ?? '-'}`),
      ['person_enter:obama', 'person_exit:obama', 'unknown_enter:-', 'unknown_exit:-'],
    );
    const enter = ordered[0]!;
    t.is(enter.monitor_id, 'door');
    t.is(enter.collection_id, 'gallery');
    t.is(enter.stream_epoch, ring[0]!.stream_epoch);
    t.true(enter.similarity >= 0.4);
    t.truthy(enter.face.bbox.pixels);
    t.is(enter.snapshot.status, 'ready');
    t.true(enter.snapshot.width <= 640 && enter.snapshot.width > 0, JSON.stringify(enter.snapshot));

    // Pictures: a downscaled frame and a crop with margin that the detector finds a face in.
    const frame = await fetch(`${d.url}${enter.snapshot.frame_url}`, { headers: d.auth });
    t.is(frame.headers.get('content-type'), 'image/jpeg');
    const frameMeta = await sharp(Buffer.from(await frame.arrayBuffer())).metadata();
    t.is(frameMeta.width, 640);
    t.is(frameMeta.height, 360);
    const crop = Buffer.from(
      await (await fetch(`${d.url}${enter.snapshot.crop_url}`, { headers: d.auth })).arrayBuffer(),
    );
    const cropMeta = await sharp(crop).metadata();
    t.true(cropMeta.width! > enter.face.bbox.pixels.width, 'the crop is wider than the face box (margin)');
    const detect = await post(d, '/v1/detect', form({ image: crop }));
    t.is(detect.json.faces.length, 1, 'the crop is good enough for the detector');
    const unauth = await fetch(`${d.url}${enter.snapshot.crop_url}`);
    t.is(unauth.status, 401);
    const files = readdirSync(join(dir, 'events', 'snapshots'));
    t.true(files.length >= 1);

    // MQTT: the events topic carries the same events in the same order; presence and state are retained.
    const mqttEvents = await waitFor('mqtt events', async () => {
      const ev = messages
        .filter((m) => m.topic === 'vigil/door/events')
        .map((m) => JSON.parse(m.payload.toString()) as { id: string });
      return ev.length >= ring.length ? ev : undefined;
    });
    t.deepEqual(
      mqttEvents.slice(0, ring.length).map((e) => e.id),
      ring.map((e) => e.id),
    );
    const presence = messages.filter((m) => m.topic === 'vigil/door/person/obama').map((m) => m.payload.toString());
    t.deepEqual(presence.slice(0, 2), ['ON', 'OFF']);
    const states = messages.filter((m) => m.topic === 'vigil/door/state').map((m) => JSON.parse(m.payload.toString()));
    t.true(states.some((s) => s.occupied && s.persons[0]?.id === 'obama'));
    t.is(states.at(-1).last_person.id, 'obama');
    const snap = messages.filter((m) => m.topic === 'vigil/door/snapshot').at(-1)!;
    t.is((await sharp(snap.payload).metadata()).format, 'jpeg');
    const availability = messages.filter((m) => m.topic === 'vigil/available').map((m) => m.payload.toString());
    t.is(availability.at(-1), 'online');

    // Home Assistant discovery: box + occupancy, last person, camera, each valid for HA's schema.
    const discovery = messages.filter((m) => m.topic.startsWith('homeassistant/') && m.payload.length);
    const topics = discovery.map((m) => m.topic);
    for (const tp of [
      'homeassistant/binary_sensor/vigil-test/status/config',
      'homeassistant/binary_sensor/vigil-test/door_occupancy/config',
      'homeassistant/sensor/vigil-test/door_last_person/config',
      'homeassistant/camera/vigil-test/door_snapshot/config',
    ])
      t.true(topics.includes(tp), tp);
    for (const m of discovery) t.deepEqual(validateDiscovery(m.topic, JSON.parse(m.payload.toString())), [], m.topic);
    // Retained: a client subscribing now gets every config (and the state) at once.
    const late = await mqtt.connectAsync(broker.url, { clientId: 'test-late', clean: true });
    const retained: { topic: string; retain: boolean }[] = [];
    late.on('message', (topic, _p, packet) => retained.push({ topic, retain: packet.retain }));
    await late.subscribeAsync(['homeassistant/#', 'vigil/door/state', 'vigil/door/snapshot', 'vigil/available'], {
      qos: 1,
    });
    await waitFor('retained', async () => (retained.length >= 7 ? true : undefined), 5000, 100);
    await late.endAsync();
    for (const tp of [...new Set(topics)])
      t.true(
        retained.some((r) => r.topic === tp && r.retain),
        `${tp} retained`,
      );
    for (const tp of ['vigil/door/state', 'vigil/door/snapshot', 'vigil/available'])
      t.true(
        retained.some((r) => r.topic === tp && r.retain),
        `${tp} retained`,
      );
    const occ = JSON.parse(discovery.find((m) => m.topic.endsWith('door_occupancy/config'))!.payload.toString());
    t.is(occ.device.via_device, 'vigil-test');
    t.is(occ.state_topic, 'vigil/door/state');
    // The validator is not a rubber stamp.
    t.true(validateDiscovery('homeassistant/camera/x/y/config', { name: 'n' }).length > 0);
    t.true(
      validateDiscovery('homeassistant/binary_sensor/x/y/config', {
        state_topic: 's',
        device_class: 'face',
        unique_id: 'u',
        device: { name: 'no ids' },
      }).length >= 2,
    );

    // Webhooks: every event, in order, signed (verified independently), webhook-id = msg_<event id>.
    const got = await waitFor('webhooks', async () =>
      receiver.received.length >= ring.length ? receiver.received : undefined,
    );
    t.is(receiver.rejected, 0);
    t.deepEqual(
      got.slice(0, ring.length).map((r) => r.id),
      ring.map((e) => `msg_${e.id}`),
    );
    t.is(got[0]!.json.type, 'monitor.person_enter');
    t.is(got[0]!.json.data.person.id, 'obama');
    t.is(got[0]!.path, '/hook');
    t.true(
      verifyStandardWebhook(
        hook.json.secret,
        {
          'webhook-id': got[0]!.id,
          'webhook-timestamp': String(got[0]!.timestamp),
          'webhook-signature': got[0]!.signature,
        },
        got[0]!.body,
      ),
    );
    t.false(
      verifyStandardWebhook(
        hook.json.secret,
        {
          'webhook-id': got[0]!.id,
          'webhook-timestamp': String(got[0]!.timestamp),
          'webhook-signature': got[0]!.signature,
        },
        `${got[0]!.body} `,
      ),
    );
    const log = (await call(d, 'GET', `/v1/webhooks/${hook.json.webhook.id}/deliveries?limit=5`)).json;
    t.is(log.deliveries[0].outcome, 'delivered');
    t.is(log.deliveries[0].status_code, 204);
    t.is(typeof log.deliveries[0].latency_ms, 'number');

    const status = (await call(d, 'GET', '/v1/events/status')).json;
    t.true(status.mqtt.connected);
    t.is(status.mqtt.dropped, 0);
    t.true(status.history.events >= ring.length);
    t.true(status.history.snapshot_bytes > 0);
    t.is(status.webhooks.endpoints, 1);
    await call(d, 'PATCH', '/v1/monitors/door', { enabled: false });
  },
);

test.serial('the history and its pictures survive a restart', async (t) => {
  const before = (await history()).events as Record<string, any>[];
  const withPicture = before.find((e) => e.snapshot.status === 'ready');
  await d.close();
  d = await startTestDaemon({ toml: toml(broker.url), dir: join(dir, '..') });
  const after = (await history()).events as Record<string, any>[];
  t.deepEqual(
    after.map((e) => e.id),
    before.map((e) => e.id),
  );
  if (withPicture) t.is((await fetch(`${d.url}${withPicture.snapshot.crop_url}`, { headers: d.auth })).status, 200);
  else t.fail('expected an event with a picture');
});

test.serial('filters, cursors, enrol from an unknown event, deletes and the person-delete rule', async (t) => {
  const all = (await history()).events as Record<string, any>[];
  const unknown = (await history('&unknown_only=true')).events as Record<string, any>[];
  t.true(unknown.length >= 2 && unknown.every((e) => e.type.startsWith('unknown_')));
  const obama = (await history('&collection_id=gallery&person_id=obama')).events as Record<string, any>[];
  t.true(obama.length >= 2 && obama.every((e) => e.person.id === 'obama'));
  t.is(
    (await history('&type=person_enter,person_exit')).events.length,
    all.filter((e) => e.type.startsWith('person_')).length,
  );
  t.is((await history('&monitor_id=nope')).events.length, 0);
  const cut = all[Math.floor(all.length / 2)]!.occurred_at;
  const older = (await history(`&until=${encodeURIComponent(cut)}`)).events as Record<string, any>[];
  t.true(older.every((e) => e.occurred_at < cut));
  // Pages of 2, newest first, cursors bound to the filter.
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const r: Record<string, any> = (
      await call(d, 'GET', `/v1/events?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    ).json;
    seen.push(...r.events.map((e: { id: string }) => e.id));
    cursor = r.next_cursor;
  } while (cursor);
  t.deepEqual(
    seen,
    all.map((e) => e.id),
  );
  const page1 = (await call(d, 'GET', '/v1/events?limit=1&monitor_id=door')).json;
  const wrong = await call(d, 'GET', `/v1/events?limit=1&cursor=${encodeURIComponent(page1.next_cursor)}`);
  t.is(wrong.json.error.code, 'invalid_cursor');
  t.is((await call(d, 'GET', '/v1/events?type=person_left')).json.error.code, 'invalid_request');

  // Enrol the unknown face as a new person, then add a face to Obama from his enter event.
  const u = unknown.find((e) => e.type === 'unknown_enter')!;
  const enrolled = await call(d, 'POST', `/v1/events/${u.id}/enrol`, { person_id: 'rose', name: 'Rose', create: true });
  t.is(enrolled.status, 201, JSON.stringify(enrolled.json));
  t.is(enrolled.json.person.id, 'rose');
  t.is(enrolled.json.faces.length, 1);
  t.is(enrolled.json.person.metadata.enrolled_from_event, u.id);
  const search = await post(d, '/v1/collections/gallery/search', form({ image: face('identities/rose_leslie/2.jpg') }));
  t.is(search.json.matches[0]?.person.id, 'rose', 'the enrolled crop is good enough for the recognizer');
  const obamaEnter = obama.find((e) => e.type === 'person_enter')!;
  const added = await call(d, 'POST', `/v1/events/${obamaEnter.id}/enrol`, { person_id: 'obama' });
  t.is(added.status, 201);
  t.is(added.json.person.face_count, 3);
  t.is(
    (await call(d, 'POST', `/v1/events/${obamaEnter.id}/enrol`, { person_id: 'ghost' })).json.error.code,
    'person_not_found',
  );
  const err = all.find((e) => !e.face);
  if (err)
    t.is(
      (await call(d, 'POST', `/v1/events/${err.id}/enrol`, { person_id: 'obama' })).json.error.code,
      'event_not_enrollable',
    );

  // Delete one, then a range; then deleting a person deletes its events and their files.
  const victim = unknown[0]!;
  t.is((await call(d, 'DELETE', `/v1/events/${victim.id}`)).status, 204);
  t.is((await call(d, 'GET', `/v1/events/${victim.id}`)).json.error.code, 'event_not_found');
  t.is((await call(d, 'GET', `/v1/events/${victim.id}/crop.jpg`)).status, 404);
  t.is((await call(d, 'DELETE', '/v1/events')).json.error.code, 'invalid_request', 'no filter needs all=true');
  const range = await call(d, 'DELETE', '/v1/events?unknown_only=true');
  t.is(range.json.deleted, unknown.length - 1);
  const obamaFile = join(dir, 'events', 'snapshots', `${obamaEnter.occurred_at.slice(0, 10)}/${obamaEnter.id}.jpg`);
  t.true(existsSync(obamaFile));
  t.is((await call(d, 'DELETE', '/v1/collections/gallery/persons/obama')).status, 204);
  t.is((await history('&person_id=obama')).events.length, 0, 'a deleted person takes its events along');
  await waitFor('pictures removed', async () => (existsSync(obamaFile) ? undefined : true), 10_000, 200);
  t.false(existsSync(obamaFile), 'and their pictures');
});
