import test from 'ava';
import mqtt from 'mqtt';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { validateDiscovery } from '../helpers/homeAssistantSchema.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { startMosquitto, type Broker } from '../helpers/mosquitto.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * What a Home Assistant user sees on a real Mosquitto broker across the life of monitors and persons:
 * monitors whose ids differ only in '.' and '_' are separate devices (deleting one leaves the other), the
 * "last person" sensor keeps its value across a clean restart, and a deleted person leaves no retained
 * presence topic behind.
 */
let d: TestDaemon;
let broker: Broker;
let rtsp: RtspServer;
let root: string;
let clients = 0;

const toml = () => `${FAST_MONITORS_TOML}
[events]
flush_interval_ms = 100
[mqtt]
enabled = true
url = "${broker.url}"
client_id = "vigil-life"
reconnect_delay_seconds = 0.2
max_reconnect_delay_seconds = 1`;

test.before(async () => {
  const frames = await renderScenario(
    [
      { image: face('identities/obama/1.jpg'), seconds: 3 },
      { image: null, seconds: 3 },
    ],
    { width: 480, height: 270, fps: 10 },
  );
  [rtsp, broker] = await Promise.all([startRtspServer({ frames, fps: 10 }), startMosquitto()]);
  root = fileTempDir('vigil-mqtt-life-');
  d = await startTestDaemon({ toml: toml(), dir: root });
  await enrollObamaBiden(d, 'gallery');
});
test.after.always(async () => {
  await d?.close();
  await Promise.all([rtsp?.stop(), broker?.stop()]);
});

/** The retained messages a client subscribing now gets (topic -> payload). */
async function retained(filters: string[]): Promise<Map<string, Buffer>> {
  const c = await mqtt.connectAsync(broker.url, { clientId: `life-${++clients}`, clean: true });
  const got = new Map<string, Buffer>();
  c.on('message', (topic, payload, packet) => {
    if (packet.retain) got.set(topic, payload);
  });
  await c.subscribeAsync(filters, { qos: 1 });
  await new Promise((r) => setTimeout(r, 700));
  await c.endAsync();
  return got;
}

/** The retained discovery configs that describe one monitor (their topics point at its own topics). */
function configsOf(all: Map<string, Buffer>, monitorId: string) {
  return [...all.entries()]
    .filter(([topic]) => topic.startsWith('homeassistant/'))
    .map(([topic, payload]) => ({ topic, payload: JSON.parse(payload.toString()) as Record<string, any> }))
    .filter(
      (m) => m.payload.state_topic === `vigil/${monitorId}/state` || m.payload.topic === `vigil/${monitorId}/snapshot`,
    );
}

test.serial(
  'monitors side.gate and side_gate are separate Home Assistant devices; deleting one keeps the other',
  async (t) => {
    for (const id of ['side.gate', 'side_gate'])
      t.is(
        (
          await call(d, 'POST', '/v1/monitors', {
            id,
            name: id,
            enabled: false,
            source: { url: rtsp.url() },
            collection_id: 'gallery',
          })
        ).status,
        201,
      );
    const both = await waitFor(
      'both monitors discovered',
      async () => {
        const all = await retained(['homeassistant/#']);
        return configsOf(all, 'side.gate').length === 3 && configsOf(all, 'side_gate').length === 3 ? all : undefined;
      },
      15_000,
      300,
    );
    const dot = configsOf(both, 'side.gate'),
      underscore = configsOf(both, 'side_gate');
    const uniqueIds = [...dot, ...underscore].map((m) => m.payload.unique_id as string);
    t.is(new Set(uniqueIds).size, 6, JSON.stringify(uniqueIds));
    t.not(dot[0]!.payload.device.identifiers[0], underscore[0]!.payload.device.identifiers[0]);
    for (const m of [...dot, ...underscore]) t.deepEqual(validateDiscovery(m.topic, m.payload), [], m.topic);
    // The monitor whose id needed no sanitising keeps the entities it had before.
    t.true(underscore.some((m) => m.payload.unique_id === 'vigil-life_side_gate_occupancy'));

    t.is((await call(d, 'DELETE', '/v1/monitors/side.gate')).status, 204);
    const after = await waitFor(
      'side.gate removed',
      async () => {
        const all = await retained(['homeassistant/#']);
        return configsOf(all, 'side.gate').length === 0 ? all : undefined;
      },
      15_000,
      300,
    );
    t.deepEqual(
      configsOf(after, 'side_gate').map((m) => m.topic),
      underscore.map((m) => m.topic),
      "side_gate's entities stay",
    );
    t.is((await call(d, 'DELETE', '/v1/monitors/side_gate')).status, 204);
  },
);

test.serial('the last person survives a clean restart', async (t) => {
  t.is(
    (
      await call(d, 'POST', '/v1/monitors', {
        id: 'door',
        name: 'Door',
        source: { url: rtsp.url() },
        collection_id: 'gallery',
        inference_fps: 4,
        event_policy: { confirm_frames: 1, absence_timeout_seconds: 1 },
      })
    ).status,
    201,
  );
  await waitFor(
    'obama seen and gone',
    async () => {
      const all = await retained(['vigil/door/#']);
      const state = all.get('vigil/door/state');
      const s = state ? (JSON.parse(state.toString()) as Record<string, any>) : null;
      return s?.last_person?.id === 'obama' && all.get('vigil/door/person/obama')?.toString() === 'OFF'
        ? true
        : undefined;
    },
    60_000,
    500,
  );
  t.is((await call(d, 'PATCH', '/v1/monitors/door', { enabled: false })).status, 200);

  await d.close();
  const restartedAt = new Date().toISOString();
  d = await startTestDaemon({ toml: toml(), dir: root });
  const state = await waitFor(
    'the state republished by the new process',
    async () => {
      const raw = (await retained(['vigil/door/state'])).get('vigil/door/state');
      const s = raw ? (JSON.parse(raw.toString()) as Record<string, any>) : null;
      return s && s.updated_at > restartedAt ? s : undefined;
    },
    20_000,
    300,
  );
  t.is(state.last_person?.id, 'obama', JSON.stringify(state));
  t.is(state.last_person?.name, 'obama');
  t.false(state.occupied);
});

test.serial('a deleted person leaves no retained presence topic and is no longer the last person', async (t) => {
  t.is((await retained(['vigil/door/person/obama'])).get('vigil/door/person/obama')?.toString(), 'OFF');
  t.is((await call(d, 'DELETE', '/v1/collections/gallery/persons/obama')).status, 204);
  const gone = await waitFor(
    'the presence topic cleared',
    async () => {
      const all = await retained(['vigil/door/#']);
      return all.has('vigil/door/person/obama') ? undefined : all;
    },
    15_000,
    300,
  );
  const s = JSON.parse(gone.get('vigil/door/state')!.toString()) as Record<string, any>;
  t.not(s.last_person?.id, 'obama', 'the deleted person is no longer the last person');
  t.is((await call(d, 'DELETE', '/v1/monitors/door')).status, 204);
});
