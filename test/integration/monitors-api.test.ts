import test from 'ava';
import Database from 'better-sqlite3';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { call, DEFAULT_THRESHOLD, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { FAST_MONITORS_TOML } from '../helpers/monitors.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * Monitor CRUD and its rules. The sources point at a closed local port: sessions run (and retry), which
 * is all capacity, persistence and cursors need.
 */
const TOML = `${FAST_MONITORS_TOML}\nmax_streams = 2`;
const SECRET_URL = 'rtsp://admin:s3cr3t-pw@127.0.0.1:9/live/main?token=abc123';
let d: TestDaemon;
let dir: string;

test.before(async () => {
  dir = fileTempDir('vigil-monitors-');
  d = await startTestDaemon({ toml: TOML, dir });
  for (const id of ['lobby', 'spare']) t0(await call(d, 'POST', '/v1/collections', { id, name: id }));
});
test.after.always(async () => {
  await d?.close();
});
function t0(r: { status: number; json: unknown }) {
  if (r.status !== 201) throw new Error(JSON.stringify(r.json));
}
const monitor = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: id,
  source: { url: 'rtsp://127.0.0.1:9/x' },
  collection_id: 'lobby',
  ...extra,
});

test.serial('create: defaults, redacted URL, encrypted at rest, never returned', async (t) => {
  const r = await call(d, 'POST', '/v1/monitors', {
    id: 'cam1',
    name: 'Camera 1',
    source: { url: SECRET_URL },
    collection_id: 'lobby',
    enabled: false,
  });
  t.is(r.status, 201, JSON.stringify(r.json));
  const m = r.json.monitor;
  t.like(m, {
    id: 'cam1',
    name: 'Camera 1',
    description: '',
    enabled: false,
    source: { type: 'rtsp', url: 'rtsp://127.0.0.1:9/live/main' },
    collection_id: 'lobby',
    inference_fps: 2,
    match_threshold: null,
    event_buffer_size: 1000,
    preview_enabled: false,
    event_policy: { confirm_frames: 3, absence_timeout_seconds: 3, cooldown_seconds: 10, emit_unknown: true },
    runtime: {
      status: 'stopped',
      connected: false,
      stream_epoch: null,
      last_frame_at: null,
      last_error: null,
      preview_active: false,
      preview_viewers: 0,
    },
  });
  t.regex(m.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  for (const body of [
    JSON.stringify(r.json),
    JSON.stringify((await call(d, 'GET', '/v1/monitors/cam1')).json),
    JSON.stringify((await call(d, 'GET', '/v1/monitors')).json),
  ]) {
    t.false(body.includes('s3cr3t'));
    t.false(body.includes('admin'));
    t.false(body.includes('abc123'));
  }
  // On disk: the database holds only the v1. ciphertext; the key file is private.
  const db = new Database(join(dir, 'data', 'vigil.db'), { readonly: true });
  const row = db.prepare('SELECT * FROM monitors WHERE id = ?').get('cam1') as Record<string, unknown>;
  db.close();
  t.regex(String(row.source_url_encrypted), /^v1\.[A-Za-z0-9_-]+$/);
  t.false(JSON.stringify(row).includes('s3cr3t'));
  for (const f of ['vigil.db', 'vigil.db-wal']) {
    try {
      t.false(readFileSync(join(dir, 'data', f)).includes('s3cr3t'), f);
    } catch {
      /* no WAL file */
    }
  }
  const key = statSync(join(dir, 'data', 'monitor-credentials.key'));
  t.is(key.size, 32);
  t.is(key.mode & 0o777, 0o600);
});

test.serial(
  'validation: rtsp:// or rtsps:// URLs only, ranges, unknown fields, _default id, 404 collection',
  async (t) => {
    const bad: [string, Record<string, unknown>][] = [
      ['http URL', monitor('v1', { source: { url: 'http://cam.lan/stream' } })],
      ['no host', monitor('v1', { source: { url: 'rtsp:///path' } })],
      ['fragment', monitor('v1', { source: { url: 'rtsp://cam.lan/a#b' } })],
      ['bad port', monitor('v1', { source: { url: 'rtsp://cam.lan:70000/a' } })],
      ['too short', monitor('v1', { source: { url: 'rtsp:/' } })],
      ['source type', monitor('v1', { source: { type: 'http', url: 'rtsp://cam.lan/a' } })],
      ['fps', monitor('v1', { inference_fps: 31 })],
      ['fps low', monitor('v1', { inference_fps: 0.05 })],
      ['threshold', monitor('v1', { match_threshold: 1.5 })],
      ['buffer', monitor('v1', { event_buffer_size: 5 })],
      ['confirm', monitor('v1', { event_policy: { confirm_frames: 0 } })],
      ['absence', monitor('v1', { event_policy: { absence_timeout_seconds: 301 } })],
      ['policy unknown', monitor('v1', { event_policy: { nope: 1 } })],
      ['unknown field', monitor('v1', { colour: 'red' })],
      ['_default id', monitor('_default')],
      ['bad id', monitor('-x')],
      ['empty name', monitor('v1', { name: '' })],
      ['missing source', { id: 'v1', name: 'v', collection_id: 'lobby' }],
    ];
    for (const [what, body] of bad) {
      const r = await call(d, 'POST', '/v1/monitors', body);
      t.is(r.status, 400, what);
      t.is(r.json.error.code, 'invalid_request', what);
    }
    const ok = await call(
      d,
      'POST',
      '/v1/monitors',
      monitor('v-ok', { source: { url: 'RTSPS://[::1]:8555/a' }, enabled: false }),
    );
    t.is(ok.status, 201, JSON.stringify(ok.json));
    t.is(ok.json.monitor.source.url, 'rtsps://[::1]:8555/a');
    const missing = await call(d, 'POST', '/v1/monitors', monitor('v2', { collection_id: 'nope' }));
    t.is(missing.status, 404);
    t.is(missing.json.error.code, 'collection_not_found');
    const dup = await call(d, 'POST', '/v1/monitors', monitor('v-ok', { enabled: false }));
    t.is(dup.status, 409);
    t.is(dup.json.error.code, 'monitor_exists');
    t.is((await call(d, 'GET', '/v1/monitors/nope')).json.error.code, 'monitor_not_found');
    t.is((await call(d, 'DELETE', '/v1/monitors/v-ok')).status, 204);
    t.is((await call(d, 'DELETE', '/v1/monitors/v-ok')).status, 404);
  },
);

test.serial('patch: at least one field, nulls refused except match_threshold, restart gives a new epoch', async (t) => {
  t.is((await call(d, 'POST', '/v1/monitors', monitor('p1'))).status, 201);
  const epoch = (await call(d, 'GET', '/v1/monitors/p1')).json.monitor.runtime.stream_epoch;
  t.regex(epoch, /^[0-9a-f-]{36}$/);
  for (const body of [
    {},
    { name: null },
    { event_policy: {} },
    { event_policy: { confirm_frames: null } },
    { source: { url: 'ftp://x/y' } },
    { extra: 1 },
  ]) {
    const r = await call(d, 'PATCH', '/v1/monitors/p1', body);
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.json.error.code, 'invalid_request');
  }
  const live = await call(d, 'PATCH', '/v1/monitors/p1', {
    name: 'Renamed',
    description: 'd',
    event_buffer_size: 20,
    preview_enabled: true,
  });
  t.is(live.status, 200);
  t.like(live.json.monitor, { name: 'Renamed', description: 'd', event_buffer_size: 20, preview_enabled: true });
  t.is(live.json.monitor.runtime.stream_epoch, epoch, 'live fields keep the session');
  const th = await call(d, 'PATCH', '/v1/monitors/p1', {
    match_threshold: 0.55,
    event_policy: { cooldown_seconds: 0 },
  });
  t.is(th.json.monitor.match_threshold, 0.55);
  t.deepEqual(th.json.monitor.event_policy, {
    confirm_frames: 3,
    absence_timeout_seconds: 3,
    cooldown_seconds: 0,
    emit_unknown: true,
  });
  const epoch2 = th.json.monitor.runtime.stream_epoch;
  t.not(epoch2, epoch, 'a restart field starts a new stream epoch');
  t.is((await call(d, 'GET', '/v1/monitors/p1/state')).json.state.threshold, 0.55);
  const reset = await call(d, 'PATCH', '/v1/monitors/p1', { match_threshold: null });
  t.is(reset.json.monitor.match_threshold, null);
  t.is(
    (await call(d, 'GET', '/v1/monitors/p1/state')).json.state.threshold,
    DEFAULT_THRESHOLD,
    'null inherits the collection threshold',
  );
  const off = await call(d, 'PATCH', '/v1/monitors/p1', { enabled: false });
  t.like(off.json.monitor, { enabled: false, runtime: { status: 'stopped', stream_epoch: null } });
  const moved = await call(d, 'PATCH', '/v1/monitors/p1', { collection_id: 'nope' });
  t.is(moved.status, 404);
  t.is((await call(d, 'DELETE', '/v1/monitors/p1')).status, 204);
});

test.serial(
  'capacity: 429 monitor_limit_exceeded with max_monitors; concurrent creates cannot both take the last slot',
  async (t) => {
    t.is((await call(d, 'POST', '/v1/monitors', monitor('c1'))).status, 201);
    const racers = await Promise.all(
      ['c2', 'c3', 'c4', 'c5'].map((id) => call(d, 'POST', '/v1/monitors', monitor(id))),
    );
    t.deepEqual(racers.map((r) => r.status).sort(), [201, 429, 429, 429]);
    const refused = racers.find((r) => r.status === 429)!;
    t.is(refused.json.error.code, 'monitor_limit_exceeded');
    t.deepEqual(refused.json.error.details, { max_monitors: 2 });
    const list = await call(d, 'GET', '/v1/monitors?limit=100');
    t.is(list.json.monitors.filter((m: { enabled: boolean }) => m.enabled).length, 2, 'a refused create leaves no row');
    // Disabled monitors do not count; enabling one past the capacity is 429 and changes nothing.
    t.is((await call(d, 'POST', '/v1/monitors', monitor('c9', { enabled: false }))).status, 201);
    const enable = await call(d, 'PATCH', '/v1/monitors/c9', { enabled: true, name: 'changed' });
    t.is(enable.status, 429);
    t.like((await call(d, 'GET', '/v1/monitors/c9')).json.monitor, { enabled: false, name: 'c9' });
    await call(d, 'DELETE', '/v1/monitors/c1');
    t.is((await call(d, 'PATCH', '/v1/monitors/c9', { enabled: true })).status, 200, 'a freed slot can be taken');
  },
);

test.serial('list: keyset pages with signed cursors', async (t) => {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const r: Awaited<ReturnType<typeof call>> = await call(
      d,
      'GET',
      `/v1/monitors?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    t.is(r.status, 200);
    ids.push(...r.json.monitors.map((m: { id: string }) => m.id));
    cursor = r.json.next_cursor;
  } while (cursor);
  t.deepEqual(ids, [...ids].sort());
  t.true(ids.length >= 3);
  const first = (await call(d, 'GET', '/v1/monitors?limit=1')).json.next_cursor as string;
  // Replace the second-to-last character with a different one (comparing with that character, not the last).
  const tampered = `${first.slice(0, -2)}${first.at(-2) === 'A' ? 'B' : 'A'}${first.slice(-1)}`;
  t.not(tampered, first);
  t.is((await call(d, 'GET', `/v1/monitors?cursor=${encodeURIComponent(tampered)}`)).json.error.code, 'invalid_cursor');
  t.is((await call(d, 'GET', '/v1/monitors?limit=0')).json.error.code, 'invalid_request');
});

test.serial(
  'events: next_cursor is always a string, signed and scoped; stopped monitors and epoch changes',
  async (t) => {
    t.is((await call(d, 'POST', '/v1/monitors', monitor('ev', { enabled: false }))).status, 201);
    const stopped = await call(d, 'GET', '/v1/monitors/ev/events');
    t.like(stopped.json, {
      monitor_id: 'ev',
      stream_epoch: null,
      events: [],
      oldest_sequence: null,
      latest_sequence: 0,
      has_more: false,
      truncated: false,
      stream_reset: false,
    });
    t.is(typeof stopped.json.next_cursor, 'string');
    await call(d, 'DELETE', '/v1/monitors/c9');
    t.is((await call(d, 'PATCH', '/v1/monitors/ev', { enabled: true })).status, 200);
    // The source is down, so the session records monitor_error events.
    let page: Record<string, any> = {};
    for (let i = 0; i < 100 && !(page.events?.length > 0); i++) {
      page = (await call(d, 'GET', `/v1/monitors/ev/events?cursor=${encodeURIComponent(stopped.json.next_cursor)}`))
        .json;
      if (!page.events.length) await new Promise((r) => setTimeout(r, 200));
    }
    t.true(page.stream_reset, 'a cursor from the stopped epoch resets');
    t.is(page.events[0].type, 'monitor_error');
    t.is(page.events[0].error.code, 'rtsp_source_unavailable');
    t.regex(page.events[0].id, /^[0-9a-f-]{36}$/);
    const next = await call(d, 'GET', `/v1/monitors/ev/events?cursor=${encodeURIComponent(page.next_cursor)}`);
    t.false(next.json.stream_reset);
    t.true(
      next.json.events.every((e: { sequence: number }) => e.sequence > page.events[page.events.length - 1].sequence),
    );
    t.is(typeof next.json.next_cursor, 'string');
    const other = (await call(d, 'GET', '/v1/monitors?limit=1')).json.next_cursor as string;
    t.is(
      (await call(d, 'GET', `/v1/monitors/ev/events?cursor=${encodeURIComponent(other)}`)).json.error.code,
      'invalid_cursor',
      'a list cursor is another scope',
    );
    t.is(
      (await call(d, 'GET', `/v1/monitors/ev/events?cursor=${encodeURIComponent(`${page.next_cursor}x`)}`)).json.error
        .code,
      'invalid_cursor',
    );
    t.is((await call(d, 'GET', '/v1/monitors/ev/events?limit=1001')).json.error.code, 'invalid_request');
    // A restart is a new epoch: the old cursor gives stream_reset and the newest events.
    t.is((await call(d, 'PATCH', '/v1/monitors/ev', { inference_fps: 1 })).status, 200);
    const reset = await call(d, 'GET', `/v1/monitors/ev/events?cursor=${encodeURIComponent(next.json.next_cursor)}`);
    t.true(reset.json.stream_reset);
    t.not(reset.json.stream_epoch, page.stream_epoch);
  },
);

test.serial('collection_in_use: a collection referenced by a monitor cannot be deleted, even with force', async (t) => {
  t.is(
    (await call(d, 'POST', '/v1/monitors', monitor('uses-spare', { collection_id: 'spare', enabled: false }))).status,
    201,
  );
  for (const q of ['', '?force=true']) {
    const r = await call(d, 'DELETE', `/v1/collections/spare${q}`);
    t.is(r.status, 409);
    t.is(r.json.error.code, 'collection_in_use');
  }
  t.is((await call(d, 'DELETE', '/v1/monitors/uses-spare')).status, 204);
  t.is((await call(d, 'DELETE', '/v1/collections/spare')).status, 204);
});

test.serial(
  'restart on the same data dir: enabled monitors are restored, disabled ones stay stopped, URLs still decrypt',
  async (t) => {
    const before = (await call(d, 'GET', '/v1/monitors?limit=100')).json.monitors as {
      id: string;
      enabled: boolean;
      source: { url: string };
    }[];
    await d.close();
    d = await startTestDaemon({ toml: TOML, dir });
    const after = (await call(d, 'GET', '/v1/monitors?limit=100')).json.monitors as {
      id: string;
      enabled: boolean;
      source: { url: string };
      runtime: { status: string; stream_epoch: string | null };
    }[];
    t.deepEqual(
      after.map((m) => [m.id, m.enabled, m.source.url]),
      before.map((m) => [m.id, m.enabled, m.source.url]),
    );
    for (const m of after) {
      if (m.enabled) {
        t.not(m.runtime.status, 'stopped', m.id);
        t.truthy(m.runtime.stream_epoch);
      } else t.is(m.runtime.status, 'stopped', m.id);
    }
    t.true(after.some((m) => m.enabled));
  },
);

test.serial('restore beyond a lowered capacity: the monitors that do not fit show status error', async (t) => {
  const enabled = (
    (await call(d, 'GET', '/v1/monitors?limit=100')).json.monitors as { id: string; enabled: boolean }[]
  ).filter((m) => m.enabled);
  t.is(enabled.length, 2);
  await d.close();
  d = await startTestDaemon({ toml: `${FAST_MONITORS_TOML}\nmax_streams = 1`, dir });
  const after = (
    (await call(d, 'GET', '/v1/monitors?limit=100')).json.monitors as {
      id: string;
      enabled: boolean;
      runtime: { status: string; last_error: { message: string } | null };
    }[]
  ).filter((m) => m.enabled);
  const failed = after.filter((m) => m.runtime.status === 'error');
  t.is(failed.length, 1);
  t.is(failed[0]!.runtime.last_error?.message, 'The Monitor could not be restored at startup.');
  t.is((await call(d, 'GET', `/v1/monitors/${failed[0]!.id}/state`)).json.state.status, 'error');
});
