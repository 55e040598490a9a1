import test from 'ava';
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Box identity in sqlite mode (a single box, no PostgreSQL): monitors and events from before box_id
 * existed become the starting box's, so the box keeps running everything it had; a data dir started
 * under another box_id shows the monitors as the other box's and does not run them.
 */
const start = (boxId: string, dir?: string): Promise<TestDaemon> =>
  startTestDaemon({ server: [`box_id = "${boxId}"`], ...(dir ? { dir } : {}) });
const dbFile = (d: TestDaemon) => join(d.runtime.loaded.config.server.data_dir, 'vigil.db');

test('rows from before box identity are stamped with the starting box; another box_id does not run them', async (t) => {
  // Its own dir: the test restarts on it (startTestDaemon removes a dir it made at close()).
  const dir = tempDir(t, 'vigil-box-');
  let d = await start('solo', dir);
  t.is((await call(d, 'POST', '/v1/collections', { id: 'staff', name: 'Staff' })).status, 201);
  const m = await call(d, 'POST', '/v1/monitors', {
    id: 'door',
    name: 'Door',
    enabled: false,
    source: { url: 'rtsp://127.0.0.1:9/x' },
    collection_id: 'staff',
  });
  t.is(m.status, 201, JSON.stringify(m.json));
  t.is(m.json.monitor.box_id, 'solo');
  const file = dbFile(d);
  await d.close();

  // As a database written before migration 0009 would be: no box on the monitor or the event.
  const id = randomUUID();
  const db = new Database(file);
  db.prepare('UPDATE monitors SET box_id = NULL').run();
  db.prepare(
    `INSERT INTO events (id, type, monitor_id, collection_id, stream_epoch, sequence, occurred_at, occurred_ms, box_id)
    VALUES (?, 'monitor_error', 'door', 'staff', 'e1', 1, ?, ?, '')`,
  ).run(id, new Date().toISOString(), Date.now());
  db.close();

  d = await start('renamed', dir);
  try {
    const mon = (await call(d, 'GET', '/v1/monitors/door')).json.monitor;
    t.is(mon.box_id, 'renamed', 'the first start after the upgrade owns the old rows');
    t.is(mon.runtime.status, 'stopped');
    t.is((await call(d, 'PATCH', '/v1/monitors/door', { name: 'Front door' })).status, 200);
    const ev = (await call(d, 'GET', `/v1/events/${id}`)).json.event;
    t.is(ev.box_id, 'renamed');
    t.deepEqual(
      (await call(d, 'GET', '/v1/events?box_id=renamed')).json.events.map((e: { id: string }) => e.id),
      [id],
    );
    t.deepEqual((await call(d, 'GET', '/v1/events?box_id=elsewhere')).json.events, []);
    t.is((await call(d, 'GET', '/v1/events')).json.fleet, undefined, 'sqlite mode: the list is as before');
    const dir = (await call(d, 'GET', '/v1/fleet/monitors')).json;
    t.like(dir, { fleet: { source: 'local', degraded: false } });
    t.deepEqual(
      dir.monitors.map((m: { box_id: string; id: string }) => `${m.box_id}/${m.id}`),
      ['renamed/door'],
    );
  } finally {
    await d.close();
  }

  // Sqlite mode without [server] box_id: the id this data dir ran as is kept (a renamed host keeps its monitors).
  d = await startTestDaemon({ dir });
  try {
    const mon = (await call(d, 'GET', '/v1/monitors/door')).json.monitor;
    t.is(mon.box_id, 'renamed');
    t.is(mon.runtime.status, 'stopped');
  } finally {
    await d.close();
  }

  d = await start('intruder', dir);
  try {
    const mon = (await call(d, 'GET', '/v1/monitors/door')).json.monitor;
    t.is(mon.box_id, 'renamed');
    t.is(mon.runtime.status, 'other_box');
    const patch = await call(d, 'PATCH', '/v1/monitors/door', { enabled: true });
    t.is(patch.status, 409);
    t.is(patch.json.error.code, 'monitor_other_box');
    // Another box may delete it (a cloned disk's leftovers).
    t.is((await call(d, 'DELETE', '/v1/monitors/door')).status, 204);
  } finally {
    await d.close();
  }
});
