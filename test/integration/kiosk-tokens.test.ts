import test from 'ava';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runKioskCommand } from '../../src/cli/kiosk.js';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import {
  addPreviewMonitor,
  endedWithin,
  enrollObamaBiden,
  FAST_MONITORS_TOML,
  waitFor,
  watchPreview,
} from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { Sink } from '../helpers/shared.js';
import { MultipartParser } from '../../src/web/mjpegParser.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * Preview-only kiosk tokens against a real daemon and RTSP stream: the token opens its monitors' preview
 * and state and nothing else, is stored hashed, works after a restart, and stops at once when revoked.
 */
const dir = fileTempDir('vigil-kiosk-');
let d: TestDaemon;
let rtsp: RtspServer;
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function firstJpeg(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; jpeg: Buffer | null }> {
  const controller = new AbortController();
  const res = await fetch(url, { headers, signal: controller.signal });
  if (res.status !== 200) return { status: res.status, jpeg: null };
  const reader = res.body!.getReader();
  const parser = new MultipartParser('frame');
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return { status: 200, jpeg: null };
      const [first] = parser.push(value);
      if (first) return { status: 200, jpeg: Buffer.from(first) };
    }
  } finally {
    controller.abort();
  }
}

const start = () => startTestDaemon({ dir, toml: FAST_MONITORS_TOML });

test.before(async () => {
  const frames = await renderScenario([{ image: face('identities/obama/1.jpg'), seconds: 2 }], {
    width: 320,
    height: 240,
    fps: 10,
  });
  [rtsp, d] = await Promise.all([startRtspServer({ frames, fps: 10 }), start()]);
  await enrollObamaBiden(d, 'gallery');
  for (const id of ['door', 'back']) await addPreviewMonitor(d, id, rtsp.url());
});
test.after.always(async () => {
  await d?.close();
  await rtsp?.stop();
});

test.serial(
  "a kiosk token opens its monitor's preview and state, nothing else; it is stored hashed; it works after a restart; revoke stops it",
  async (t) => {
    const created = await call(d, 'POST', '/v1/kiosk-tokens', { monitor_ids: ['door'], label: 'hall' });
    t.is(created.status, 201, JSON.stringify(created.json));
    const token: string = created.json.token;
    t.regex(token, /^vk_[A-Za-z0-9_-]{43}$/);
    t.is(created.json.kiosk_paths.door, `/kiosk/door#token=${token}`);
    t.deepEqual(created.json.kiosk_token.monitor_ids, ['door']);
    t.false(
      JSON.stringify((await call(d, 'GET', '/v1/kiosk-tokens')).json).includes(token),
      'lists never show the token',
    );

    await waitFor('door connected', async () =>
      (await call(d, 'GET', '/v1/monitors/door')).json.monitor.runtime.connected ? true : undefined,
    );
    const state = await call(d, 'GET', '/v1/monitors/door/state', undefined, bearer(token));
    t.is(state.status, 200);
    t.is(state.json.state.monitor_id, 'door');
    const preview = await firstJpeg(`${d.url}/v1/monitors/door/preview.mjpeg`, bearer(token));
    t.is(preview.status, 200);
    t.truthy(preview.jpeg && preview.jpeg[0] === 0xff && preview.jpeg[1] === 0xd8);

    // The scope: another monitor, the monitor resource itself, its events, changes, every other API.
    for (const [method, path, body] of [
      ['GET', '/v1/monitors/back/state'],
      ['GET', '/v1/monitors/back/preview.mjpeg'],
      ['GET', '/v1/monitors/door'],
      ['GET', '/v1/monitors/door/events'],
      ['PATCH', '/v1/monitors/door', { name: 'x' }],
      ['DELETE', '/v1/monitors/door'],
      ['GET', '/v1/monitors'],
      ['GET', '/v1/collections'],
      ['GET', '/v1/system'],
      ['GET', '/v1/events'],
      ['GET', '/v1/kiosk-tokens'],
      ['POST', '/v1/kiosk-tokens', { monitor_ids: ['back'] }],
      ['GET', '/v1/webhooks'],
      ['GET', '/metrics'],
      ['GET', '/workspaces/acme/usage'],
    ] as [string, string, unknown?][]) {
      const r = await fetch(d.url + path, {
        method,
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      });
      t.is(r.status, 401, `${method} ${path}`);
    }
    t.is((await call(d, 'GET', '/v1/monitors/door')).json.monitor.name, 'door', 'nothing changed');

    // Stored hashed: the database holds sha256(token), never the token.
    const db = new Database(join(dir, 'data', 'vigil.db'), { readonly: true });
    const row = db.prepare('SELECT * FROM kiosk_tokens WHERE id = ?').get(created.json.kiosk_token.id) as Record<
      string,
      unknown
    >;
    db.close();
    t.deepEqual(row.digest, createHash('sha256').update(token).digest());
    t.false(JSON.stringify(row).includes(token.slice(3)));

    // A restart (same data dir): the kiosk URL still shows the stream.
    await d.close();
    d = await start();
    await waitFor('door connected after restart', async () =>
      (await call(d, 'GET', '/v1/monitors/door')).json.monitor.runtime.connected ? true : undefined,
    );
    t.is((await call(d, 'GET', '/v1/monitors/door/state', undefined, bearer(token))).status, 200);
    const after = await firstJpeg(`${d.url}/v1/monitors/door/preview.mjpeg`, bearer(token));
    t.is(after.status, 200);
    t.truthy(after.jpeg);
    t.truthy((await call(d, 'GET', '/v1/kiosk-tokens')).json.kiosk_tokens[0].last_used_at);

    const revoked = await call(d, 'DELETE', `/v1/kiosk-tokens/${created.json.kiosk_token.id}`);
    t.is(revoked.status, 200);
    t.truthy(revoked.json.kiosk_token.revoked_at);
    t.is((await call(d, 'GET', '/v1/monitors/door/state', undefined, bearer(token))).status, 401);
    t.is(
      (await call(d, 'DELETE', `/v1/kiosk-tokens/${created.json.kiosk_token.id}`)).json.error.code,
      'kiosk_token_revoked',
    );
    t.is((await call(d, 'DELETE', '/v1/kiosk-tokens/kiosk_nope')).status, 404);
  },
);

test.serial("vigil kiosk create/list/revoke work on the running daemon's data dir", async (t) => {
  const config = join(dir, 'cli.toml');
  writeFileSync(config, `[server]\nhost = "0.0.0.0"\nport = 8080\ndata_dir = ${JSON.stringify(join(dir, 'data'))}\n`);
  const io = { stdout: new Sink(), stderr: new Sink() };
  t.is(
    await runKioskCommand(
      ['create', '--monitor', 'back', '--monitor', 'door', '--label', 'lobby', '--json'],
      config,
      io,
    ),
    0,
  );
  const out = JSON.parse(io.stdout.text) as {
    token: string;
    kiosk_token: { id: string };
    kiosk_urls: Record<string, string>;
  };
  t.is(out.kiosk_urls.back, `http://<this-box>:8080/kiosk/back#token=${out.token}`);
  t.is((await call(d, 'GET', '/v1/monitors/back/state', undefined, bearer(out.token))).status, 200);
  t.is((await call(d, 'GET', '/v1/monitors/door/state', undefined, bearer(out.token))).status, 200);
  const list = { stdout: new Sink(), stderr: new Sink() };
  t.is(await runKioskCommand(['list'], config, list), 0);
  t.regex(list.stdout.text, new RegExp(`${out.kiosk_token.id}\\tvk_.{6}…\\tback,door\\tlobby\\t`));
  t.is(await runKioskCommand(['revoke', out.kiosk_token.id], config, { stdout: new Sink(), stderr: new Sink() }), 0);
  t.is((await call(d, 'GET', '/v1/monitors/back/state', undefined, bearer(out.token))).status, 401);
  t.is(await runKioskCommand(['--help'], config, { stdout: new Sink(), stderr: new Sink() }), 0);
});

test.serial(
  'issue 36.4: revoking a kiosk token (API or CLI) ends the previews it opened; rotating the API key ends those it opened',
  async (t) => {
    await waitFor('door connected', async () =>
      (await call(d, 'GET', '/v1/monitors/door')).json.monitor.runtime.connected ? true : undefined,
    );
    const created = await call(d, 'POST', '/v1/kiosk-tokens', { monitor_ids: ['door'] });
    const token: string = created.json.token;
    const kioskView = watchPreview(`${d.url}/v1/monitors/door/preview.mjpeg`, bearer(token));
    const adminView = watchPreview(`${d.url}/v1/monitors/door/preview.mjpeg`, d.auth);
    t.teardown(() => {
      kioskView.stop();
      adminView.stop();
    });
    await waitFor('both previews deliver', async () => (kioskView.frames > 1 && adminView.frames > 1) || undefined);

    t.is((await call(d, 'DELETE', `/v1/kiosk-tokens/${created.json.kiosk_token.id}`)).status, 200);
    t.is(await endedWithin(kioskView, 5000), 'ended', 'the revoked token’s preview ended');
    const adminFrames = adminView.frames;
    await waitFor('the admin preview still delivers', async () => adminView.frames > adminFrames + 1 || undefined);

    // A revoke by the CLI (another process, straight on the database) ends the stream at the next re-check.
    const config = join(dir, 'cli-36.toml');
    writeFileSync(config, `[server]\ndata_dir = ${JSON.stringify(join(dir, 'data'))}\n`);
    const second = await call(d, 'POST', '/v1/kiosk-tokens', { monitor_ids: ['door'] });
    const cliView = watchPreview(`${d.url}/v1/monitors/door/preview.mjpeg`, bearer(second.json.token));
    t.teardown(() => cliView.stop());
    await waitFor('the second kiosk preview delivers', async () => cliView.frames > 0 || undefined);
    const io = { stdout: new Sink(), stderr: new Sink() };
    t.is(await runKioskCommand(['revoke', second.json.kiosk_token.id], config, io), 0);
    t.is(await endedWithin(cliView, 5000), 'ended', 'the CLI-revoked token’s preview ended');

    // A new API key: previews opened with the old one end (the key goes back afterwards for later tests).
    d.runtime.keys.ensureKey('rotated-key-for-test-36-4-0123456789');
    t.teardown(() => d.runtime.keys.ensureKey(d.key));
    t.is(await endedWithin(adminView, 5000), 'ended', 'the preview opened with the old key ended');
  },
);
