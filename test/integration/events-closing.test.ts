import test from 'ava';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { call, face, type TestDaemon } from '../helpers/daemon.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemonProcess.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { startReceiver, type Receiver } from '../helpers/webhookReceiver.js';

/**
 * Every person_enter gets its person_exit, in the history and in the webhooks, however the tracking ends:
 * a monitor disabled, restarted by a patch or deleted while a face is in view, the daemon stopped
 * (SIGTERM: the exit is durable before the process exits) or killed (SIGKILL: the next start closes the
 * previous process's open tracks with synthetic exits). A real daemon process on a real RTSP stream
 * showing one face all the time, and a real webhook receiver.
 */
let d: DaemonProcess;
let rtsp: RtspServer;
let receiver: Receiver;

const TOML = `${FAST_MONITORS_TOML}
[events]
flush_interval_ms = 100
[webhooks]
first_retry_seconds = 0.2
max_retry_delay_seconds = 0.5`;

type HistoryEvent = {
  id: string;
  type: string;
  monitor_id: string;
  track_id: string | null;
  stream_epoch: string;
  person: { id: string } | null;
  reason: string | null;
  synthetic: boolean;
};

const api = () => d as unknown as TestDaemon;

async function history(monitorId: string): Promise<HistoryEvent[]> {
  const r = await call(api(), 'GET', `/v1/events?limit=500&monitor_id=${monitorId}`);
  if (r.status !== 200) throw new Error(JSON.stringify(r.json));
  return (r.json.events as HistoryEvent[]).reverse();
}

/** The newest person_enter of the monitor that has no exit yet (waits for one). */
function openEnter(monitorId: string, notIn: string[] = []): Promise<HistoryEvent> {
  return waitFor(
    `${monitorId}: an open person_enter`,
    async () => {
      const h = await history(monitorId);
      return h.find(
        (e) =>
          e.type === 'person_enter' &&
          !notIn.includes(e.id) &&
          !h.some((x) => x.type === 'person_exit' && x.track_id === e.track_id),
      );
    },
    60_000,
    300,
  );
}

function exitOf(monitorId: string, enter: HistoryEvent): Promise<HistoryEvent> {
  return waitFor(
    `${monitorId}: the exit of track ${enter.track_id}`,
    async () =>
      (await history(monitorId)).find(
        (e) => e.type === 'person_exit' && e.track_id === enter.track_id && e.stream_epoch === enter.stream_epoch,
      ),
    30_000,
    200,
  );
}

function delivered(eventId: string) {
  return waitFor(
    `webhook msg_${eventId}`,
    async () => receiver.received.find((r) => r.id === `msg_${eventId}`),
    30_000,
    100,
  );
}

test.before(async () => {
  const frames = await renderScenario([{ image: face('identities/obama/1.jpg'), seconds: 5 }], {
    width: 480,
    height: 270,
    fps: 10,
  });
  [rtsp, receiver] = await Promise.all([startRtspServer({ frames, fps: 10 }), startReceiver()]);
  d = await startDaemonProcess({ toml: TOML, logLevel: 'info' });
  await enrollObamaBiden(api(), 'gallery');
  const hook = await call(api(), 'POST', '/v1/webhooks', { url: `${receiver.url}/hook` });
  if (hook.status !== 201) throw new Error(JSON.stringify(hook.json));
  receiver.secret = hook.json.secret;
});
test.after.always(async () => {
  await d?.stop();
  await Promise.all([rtsp?.stop(), receiver?.close()]);
});

const monitor = (id: string) => ({
  id,
  name: id,
  source: { url: rtsp.url() },
  collection_id: 'gallery',
  inference_fps: 4,
  event_policy: { confirm_frames: 1, absence_timeout_seconds: 5 },
});

test.serial(
  'disabling, restarting and deleting a monitor with a person in view end the enter with an exit',
  async (t) => {
    t.is((await call(api(), 'POST', '/v1/monitors', monitor('door'))).status, 201);
    const seen: string[] = [];
    for (const [change, reason] of [
      [{ enabled: false }, 'monitor_disabled'],
      [{ inference_fps: 5 }, 'monitor_restarted'],
      [null, 'monitor_deleted'],
    ] as const) {
      if (change && 'inference_fps' in change)
        t.is((await call(api(), 'PATCH', '/v1/monitors/door', { enabled: true })).status, 200);
      const enter = await openEnter('door', seen);
      seen.push(enter.id);
      const r = change
        ? await call(api(), 'PATCH', '/v1/monitors/door', change)
        : await call(api(), 'DELETE', '/v1/monitors/door');
      t.true(r.status === 200 || r.status === 204, JSON.stringify(r.json));
      const exit = await exitOf('door', enter);
      t.is(exit.reason, reason);
      t.false(exit.synthetic);
      t.is(exit.person?.id, 'obama');
      const hook = await delivered(exit.id);
      t.is(hook.json.type, 'monitor.person_exit');
      t.is(hook.json.data.reason, reason);
      t.is(hook.json.data.track_id, enter.track_id);
      if (reason === 'monitor_disabled') {
        // Enabled again: the person still in view is a new enter of a new session.
        t.is((await call(api(), 'PATCH', '/v1/monitors/door', { enabled: true })).status, 200);
        const again = await openEnter('door', seen);
        t.not(again.stream_epoch, enter.stream_epoch);
        seen.push(again.id);
        t.is((await call(api(), 'PATCH', '/v1/monitors/door', { enabled: false })).status, 200);
        await exitOf('door', again);
      }
    }
    // Every enter of the monitor has exactly one exit.
    const h = await history('door');
    for (const e of h.filter((x) => x.type === 'person_enter'))
      t.is(h.filter((x) => x.type === 'person_exit' && x.track_id === e.track_id).length, 1, e.id);
  },
);

test.serial(
  'SIGTERM with a person in view: the exit is in the history and the webhook outbox before the process exits, and is delivered',
  async (t) => {
    t.is((await call(api(), 'POST', '/v1/monitors', monitor('gate'))).status, 201);
    const enter = await openEnter('gate');
    await delivered(enter.id);
    await receiver.down(); // so the exit can only be in the outbox when the process is gone
    await d.stop();
    const db = new Database(join(d.dataDir, 'vigil.db'), { readonly: true, fileMustExist: true });
    let exitId: string;
    try {
      const exit = db
        .prepare("SELECT * FROM events WHERE monitor_id = 'gate' AND type = 'person_exit' AND track_id = ?")
        .get(enter.track_id) as { id: string; reason: string } | undefined;
      t.truthy(exit, 'the exit was written before the process exited');
      t.is(exit?.reason, 'daemon_stopped');
      exitId = exit!.id;
      t.truthy(
        db.prepare('SELECT 1 FROM webhook_outbox WHERE message_id = ?').get(`msg_${exitId}`),
        'and queued for the webhook',
      );
    } finally {
      db.close();
    }
    await receiver.up();
    await d.start();
    const hook = await delivered(exitId);
    t.is(hook.json.data.reason, 'daemon_stopped');
    t.false(hook.json.data.synthetic);
    // The restarted daemon does not close that track a second time.
    const next = await openEnter('gate', [enter.id]);
    t.not(next.stream_epoch, enter.stream_epoch);
    const old = (await history('gate')).filter((e) => e.stream_epoch === enter.stream_epoch);
    t.deepEqual(
      old.map((e) => `${e.type}:${e.reason ?? '-'}`),
      ['person_enter:-', 'person_exit:daemon_stopped'],
    );
  },
);

test.serial('SIGKILL with a person in view: the next start closes the track with a synthetic exit', async (t) => {
  const enter = await openEnter('gate');
  await delivered(enter.id);
  await d.kill();
  await d.start();
  const exit = await exitOf('gate', enter);
  t.is(exit.reason, 'daemon_restarted');
  t.true(exit.synthetic);
  t.is(exit.person?.id, 'obama');
  const hook = await delivered(exit.id);
  t.is(hook.json.type, 'monitor.person_exit');
  t.true(hook.json.data.synthetic);
  t.is(hook.json.data.track_id, enter.track_id);
  // Only once: a second restart finds nothing open from that epoch.
  await d.stop();
  await d.start();
  await openEnter('gate', [enter.id]);
  const old = (await history('gate')).filter((e) => e.stream_epoch === enter.stream_epoch);
  t.is(old.filter((e) => e.type === 'person_exit').length, 1);
  t.is((await call(api(), 'DELETE', '/v1/monitors/gate')).status, 204);
});
