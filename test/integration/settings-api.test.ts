import test from 'ava';
import { readFileSync } from 'node:fs';
import mqtt from 'mqtt';
import sharp from 'sharp';
import { call, face, form, post, startTestDaemon, TEST_KEY, type TestDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/monitors.js';
import { startMosquitto, type Broker } from '../helpers/mosquitto.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { freePort } from '../helpers/shared.js';

/**
 * Issue 40 items 3 and 4 on a real daemon: GET/PATCH /v1/settings write server.toml keeping its comments
 * and apply what can be applied without a restart (MQTT connects to a real Mosquitto, retention, the log
 * level), refuse an invalid value with the file unchanged, report restart-only keys; the camera set-up's
 * connection test against the real RTSP test server and a closed port; the decode pipelines.
 */
let d: TestDaemon;
let broker: Broker;
let rtsp: RtspServer;
let file: string;

const HAND_WRITTEN = `
# Events: a month unless the site says otherwise.
[events]
# a month of history
max_age_days = 30 # days
flush_interval_ms = 100
`;

test.before(async () => {
  const frames = await renderScenario([{ image: null, seconds: 1 }], { width: 320, height: 240, fps: 10 });
  [rtsp, broker] = await Promise.all([startRtspServer({ frames, fps: 10 }), startMosquitto()]);
  d = await startTestDaemon({ toml: HAND_WRITTEN });
  file = d.runtime.loaded.file!;
});
test.after.always(async () => {
  await d?.close();
  await Promise.all([rtsp?.stop(), broker?.stop()]);
});

type Entry = Record<string, any>;
const settings = async () => {
  const r = await call(d, 'GET', '/v1/settings');
  return new Map<string, Entry>((r.json.settings as Entry[]).map((s) => [s.key, s]));
};

test.serial('GET /v1/settings: running values with defaults and sources; secrets are never returned', async (t) => {
  const r = await call(d, 'GET', '/v1/settings');
  t.is(r.status, 200);
  t.false(JSON.stringify(r.json).includes(TEST_KEY), 'the API key is nowhere in the answer');
  t.is(r.json.config_file, file);
  t.true(r.json.writable);
  const s = new Map<string, Entry>((r.json.settings as Entry[]).map((e) => [e.key, e]));
  t.like(s.get('server.host'), { value: '127.0.0.1', source: 'file', editable: false });
  t.like(s.get('events.max_age_days'), { value: 30, default: 30, source: 'file', apply: 'live', editable: true });
  t.like(s.get('mqtt.url'), { value: 'mqtt://127.0.0.1:1883', source: 'default', apply: 'live' });
  t.like(s.get('auth.api_key'), { value: null, secret: true, is_set: true, source: 'env', env: 'VIGIL_API_KEY' });
  t.like(s.get('detection.input_sizes'), { apply: 'restart', restart_pending: false });
  t.is(s.get('mqtt.qos')!.schema.anyOf.length, 3, 'the JSON Schema a form needs');
  // Only admins: without a credential the answer is 401.
  t.is((await call(d, 'GET', '/v1/settings', undefined, {})).status, 401);
});

test.serial('PATCH writes the file keeping its comments and applies live keys at once', async (t) => {
  const r = await call(d, 'PATCH', '/v1/settings', {
    'events.max_age_days': 7,
    'mqtt.topic_prefix': 'cams',
    'server.log_level': 'warn',
  });
  t.is(r.status, 200, JSON.stringify(r.json));
  t.false(r.json.restart_required);
  for (const key of ['events.max_age_days', 'mqtt.topic_prefix', 'server.log_level'])
    t.deepEqual(r.json.results[key], { applied: true, restart_required: false, reason: null }, key);
  t.like(
    (r.json.settings as Entry[]).find((s) => s.key === 'events.max_age_days'),
    { value: 7, source: 'file' },
  );
  const text = readFileSync(file, 'utf8');
  for (const kept of [
    '# Events: a month unless the site says otherwise.',
    '# a month of history',
    'flush_interval_ms = 100',
  ])
    t.true(text.includes(kept), kept);
  t.regex(text, /max_age_days = 7 # days/);
  t.regex(text, /\[mqtt\]\ntopic_prefix = "cams"/);
  // Applied: the history enforces 7 days, the logger is at warn, the running config says so.
  const status = await call(d, 'GET', '/v1/events/status');
  t.is(status.json.history.retention.max_age_days, 7);
  t.is(d.runtime.log.level, 'warn');
  t.is(d.runtime.loaded.config.events.max_age_days, 7);
  t.is((await settings()).get('events.max_age_days')!.restart_pending, false);
});

test.serial('an invalid value is refused with its key and the file is unchanged', async (t) => {
  const before = readFileSync(file, 'utf8');
  const bad = await call(d, 'PATCH', '/v1/settings', { 'mqtt.enabled': true, 'events.max_age_days': -1 });
  t.is(bad.status, 400);
  t.is(bad.json.error.code, 'settings_invalid');
  t.is(bad.json.error.details.key, 'events.max_age_days');
  t.regex(bad.json.error.message, /^events\.max_age_days: /);
  t.is(readFileSync(file, 'utf8'), before, 'nothing written, not even the valid key');
  t.false((await call(d, 'GET', '/v1/events/status')).json.mqtt.enabled);
  const secret = await call(d, 'PATCH', '/v1/settings', { 'mqtt.password': 'hunter2' });
  t.is(secret.json.error.code, 'setting_not_editable');
  const port = await call(d, 'PATCH', '/v1/settings', { 'server.port': 9000 });
  t.is(port.json.error.code, 'setting_not_editable');
  const typo = await call(d, 'PATCH', '/v1/settings', { 'mqtt.ulr': 'mqtt://x:1883' });
  t.is(typo.json.error.code, 'setting_unknown');
  t.is(typo.json.error.details.suggestion, 'mqtt.url');
  const empty = await call(d, 'PATCH', '/v1/settings', {});
  t.is(empty.json.error.code, 'settings_invalid');
  const list = await call(d, 'PATCH', '/v1/settings', [1]);
  t.is(list.json.error.code, 'invalid_request');
  t.is(readFileSync(file, 'utf8'), before);
});

test.serial('a restart-only key is saved, reported restart_required and shown pending until removed', async (t) => {
  const r = await call(d, 'PATCH', '/v1/settings', {
    'detection.input_sizes': [
      [96, 96],
      [640, 640],
    ],
  });
  t.is(r.status, 200, JSON.stringify(r.json));
  t.true(r.json.restart_required);
  t.like(r.json.results['detection.input_sizes'], { applied: false, restart_required: true });
  t.regex(r.json.results['detection.input_sizes'].reason, /restart/);
  const s = (await settings()).get('detection.input_sizes')!;
  t.deepEqual(s.value, [
    [96, 96],
    [512, 512],
  ]);
  t.true(s.restart_pending);
  t.deepEqual(s.configured_value, [
    [96, 96],
    [640, 640],
  ]);
  t.deepEqual(d.runtime.inference!.systemProfile.input_sizes, [
    [96, 96],
    [512, 512],
  ]);
  // null removes the key from the file: the default (what runs) again, nothing pending.
  const back = await call(d, 'PATCH', '/v1/settings', { 'detection.input_sizes': null });
  t.false(back.json.restart_required);
  t.false((await settings()).get('detection.input_sizes')!.restart_pending);
  t.false(readFileSync(file, 'utf8').includes('input_sizes'));
});

test.serial('the detection threshold applies to the next request without a restart', async (t) => {
  const detect = async () => (await post(d, '/v1/detect', form({ image: face('identities/obama/2.jpg') }))).json;
  const before = await detect();
  t.is(before.faces.length, 1);
  const score = before.faces[0].detection_score as number;
  const r = await call(d, 'PATCH', '/v1/settings', { 'detection.threshold': Math.min(1, score + 0.001) });
  t.true(r.json.results['detection.threshold'].applied);
  t.deepEqual((await detect()).faces, [], 'a face below the new threshold is dropped');
  await call(d, 'PATCH', '/v1/settings', { 'detection.threshold': null });
  t.is((await detect()).faces.length, 1);
  t.is(d.runtime.inference!.systemProfile.threshold, 0.5);
});

test.serial(
  'MQTT turned on by PATCH reaches a real Mosquitto without a restart, and follows a new prefix',
  async (t) => {
    const seen: { topic: string; payload: string }[] = [];
    const sub = await mqtt.connectAsync(broker.url, { clientId: 'settings-watch', clean: true });
    t.teardown(() => sub.endAsync());
    sub.on('message', (topic, payload) => seen.push({ topic, payload: payload.toString() }));
    await sub.subscribeAsync(['cams/available', 'site/available'], { qos: 1 });
    const on = await call(d, 'PATCH', '/v1/settings', {
      'mqtt.enabled': true,
      'mqtt.url': broker.url,
      'mqtt.reconnect_delay_seconds': 0.2,
    });
    t.is(on.status, 200, JSON.stringify(on.json));
    t.true(on.json.results['mqtt.enabled'].applied);
    await waitFor('online on cams/available', async () =>
      seen.some((m) => m.topic === 'cams/available' && m.payload === 'online') ? true : undefined,
    );
    const status = await call(d, 'GET', '/v1/events/status');
    t.like(status.json.mqtt, { enabled: true, connected: true, topic_prefix: 'cams' });
    const metrics = await (await fetch(`${d.url}/metrics`, { headers: d.auth })).text();
    t.regex(metrics, /^vigil_mqtt_connected 1$/m, 'the MQTT families appear once it is on');
    // A new prefix: offline on the old availability topic, online on the new one, same connection settings.
    await call(d, 'PATCH', '/v1/settings', { 'mqtt.topic_prefix': 'site' });
    await waitFor('offline on cams, online on site', async () =>
      seen.some((m) => m.topic === 'cams/available' && m.payload === 'offline') &&
      seen.some((m) => m.topic === 'site/available' && m.payload === 'online')
        ? true
        : undefined,
    );
    const off = await call(d, 'PATCH', '/v1/settings', { 'mqtt.enabled': false });
    t.true(off.json.results['mqtt.enabled'].applied);
    await waitFor('offline on site', async () =>
      seen.filter((m) => m.topic === 'site/available').at(-1)?.payload === 'offline' ? true : undefined,
    );
    t.like((await call(d, 'GET', '/v1/events/status')).json.mqtt, { enabled: false, connected: false });
  },
);

test.serial('the decode pipelines this box can run, and choosing one by its id', async (t) => {
  const r = await call(d, 'GET', '/v1/monitor-pipelines');
  t.is(r.status, 200);
  t.is(r.json.current, 'software');
  const software = (r.json.pipelines as Entry[]).find((p) => p.id === 'software')!;
  t.like(software, { available: true, problem: null, current: true });
  t.deepEqual(
    (r.json.pipelines as Entry[]).map((p) => p.id),
    ['software', 'jetson', 'vaapi', 'v4l2'],
  );
  const hw = (r.json.pipelines as Entry[]).find((p) => p.id === 'jetson')!;
  if (!hw.available) t.regex(hw.problem, /nvv4l2decoder|element/);
  // An id is stored as its template.
  const set = await call(d, 'PATCH', '/v1/settings', { 'monitors.pipeline': 'software' });
  t.true(set.json.results['monitors.pipeline'].applied);
  t.false(readFileSync(file, 'utf8').includes('pipeline = "software"'));
});

test.serial('test connection: a snapshot from the RTSP test server, the cause from a closed port', async (t) => {
  const ok = await call(d, 'POST', '/v1/monitors/test', { source: { url: rtsp.url() }, timeout_seconds: 20 });
  t.is(ok.status, 200, JSON.stringify(ok.json));
  t.true(ok.json.test.ok, ok.json.test.message);
  t.like(ok.json.test, {
    ok: true,
    stage: 'frame',
    cause: null,
    pipeline: 'software',
    frame: { width: 320, height: 240 },
  });
  const jpeg = Buffer.from(ok.json.test.snapshot.data_base64, 'base64');
  const meta = await sharp(jpeg).metadata();
  t.is(meta.format, 'jpeg');
  t.is(meta.width, 320);
  const port = await freePort();
  const closed = await call(d, 'POST', '/v1/monitors/test', {
    source: { url: `rtsp://admin:secret@127.0.0.1:${port}/stream` },
  });
  t.is(closed.status, 200);
  t.like(closed.json.test, { ok: false, stage: 'probe', cause: 'connection_refused', snapshot: null });
  t.is(closed.json.test.source, `rtsp://127.0.0.1:${port}/stream`, 'no credentials in the answer');
  const notRtsp = await call(d, 'POST', '/v1/monitors/test', { source: { url: 'http://127.0.0.1/x' } });
  t.like(notRtsp.json.test, { ok: false, stage: 'url' });
  const missing = await call(d, 'POST', '/v1/monitors/test', { source: { url: rtsp.url('/nothing') } });
  t.like(missing.json.test, { ok: false, stage: 'probe', cause: 'not_found' });
  const badPipeline = await call(d, 'POST', '/v1/monitors/test', { source: { url: rtsp.url() }, pipeline: 'jetson' });
  if (!badPipeline.json.test.ok) t.like(badPipeline.json.test, { stage: 'pipeline', pipeline: 'jetson' });
});

test.serial('test connection of a saved monitor uses its stored URL', async (t) => {
  t.is((await call(d, 'POST', '/v1/collections', { id: 'cams', name: 'Cameras' })).status, 201);
  const created = await call(d, 'POST', '/v1/monitors', {
    id: 'door',
    name: 'Door',
    collection_id: 'cams',
    enabled: false,
    source: { url: rtsp.url() },
  });
  t.is(created.status, 201, JSON.stringify(created.json));
  const r = await call(d, 'POST', '/v1/monitors/door/test');
  t.is(r.status, 200, JSON.stringify(r.json));
  t.like(r.json.test, { ok: true, stage: 'frame' });
  t.is((await call(d, 'POST', '/v1/monitors/nobody/test')).json.error.code, 'monitor_not_found');
  await call(d, 'DELETE', '/v1/monitors/door');
});

test.serial('a [monitors] decoding key restarts the running cameras with it, without a service restart', async (t) => {
  const created = await call(d, 'POST', '/v1/monitors', {
    id: 'yard',
    name: 'Yard',
    collection_id: 'cams',
    source: { url: rtsp.url() },
  });
  t.is(created.status, 201, JSON.stringify(created.json));
  t.teardown(() => call(d, 'DELETE', '/v1/monitors/yard').then(() => undefined));
  const state = async () => (await call(d, 'GET', '/v1/monitors/yard/state')).json.state as Entry;
  const first = await waitFor('yard running', async () => {
    const s = await state();
    return s.status === 'running' ? s : undefined;
  });
  const r = await call(d, 'PATCH', '/v1/settings', { 'monitors.latency_ms': 50, 'monitors.max_streams': 3 });
  t.deepEqual(r.json.results['monitors.latency_ms'], { applied: true, restart_required: false, reason: null });
  t.true(r.json.results['monitors.max_streams'].applied);
  // A new session (a new stream epoch) that reads frames again.
  await waitFor('yard restarted and running', async () => {
    const s = await state();
    return s.stream_epoch !== first.stream_epoch && s.status === 'running' ? true : undefined;
  });
  t.is(d.runtime.loaded.config.monitors.latency_ms, 50);
});

test.serial('roles: only admins read or change settings; operators test cameras, viewers do neither', async (t) => {
  /** A signed-in browser of a new user with that role: its session cookie, CSRF token and origin. */
  const browser = async (role: string) => {
    const password = `${role} password 1`;
    t.is((await call(d, 'POST', '/v1/users', { username: role, password, role })).status, 201);
    const headers = { Origin: d.url, 'Sec-Fetch-Site': 'same-origin' };
    const login = await call(d, 'POST', '/v1/auth/login', { username: role, password }, headers);
    const cookie = login.res.headers
      .getSetCookie()
      .find((c) => c.startsWith('vigil_session='))!
      .split(';')[0]!;
    return { ...headers, Cookie: cookie, 'X-CSRF-Token': login.json.csrf_token as string };
  };
  const viewer = await browser('viewer');
  const operator = await browser('operator');
  for (const who of [viewer, operator]) {
    const get = await call(d, 'GET', '/v1/settings', undefined, who);
    t.is(get.status, 403);
    t.like(get.json.error, { code: 'forbidden_role', details: { required_role: 'admin' } });
    t.is((await call(d, 'PATCH', '/v1/settings', { 'events.max_age_days': 1 }, who)).status, 403);
  }
  const port = await freePort();
  const source = { url: `rtsp://127.0.0.1:${port}/x` };
  t.is((await call(d, 'POST', '/v1/monitors/test', { source }, viewer)).status, 403);
  t.is((await call(d, 'GET', '/v1/monitor-pipelines', undefined, viewer)).status, 403);
  const tested = await call(d, 'POST', '/v1/monitors/test', { source }, operator);
  t.is(tested.status, 200);
  t.like(tested.json.test, { ok: false, cause: 'connection_refused' });
  t.is(d.runtime.loaded.config.events.max_age_days, 7, 'nothing changed');
  // The admin's change is in the audit log with the keys it changed.
  await call(d, 'PATCH', '/v1/settings', { 'events.max_age_days': 8 });
  const audit = await call(d, 'GET', '/v1/audit?action=patch_settings_v1_settings_patch');
  t.like(audit.json.entries[0], { source: 'api', detail: { keys: ['events.max_age_days'], restart_required: false } });
});
