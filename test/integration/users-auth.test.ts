import test from 'ava';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { runUsersCommand } from '../../src/cli/users.js';
import { apiRoutes } from '../../src/http/app.js';
import { cliActor } from '../../src/users/auditLog.js';
import { ROLE_TABLE_PAGE, roleTable } from '../../scripts/role-table.js';
import { call, face, REPO, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
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
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * User accounts against a real daemon: the first admin from the set-up code, password sign-in with the
 * session cookie, CSRF, roles on every kind of operation, sessions and their revoke (open previews
 * included), the failure throttle shared with the API key, and the audit log from the API and the CLI.
 */
const dir = fileTempDir('vigil-users-');
let d: TestDaemon;
let rtsp: RtspServer;

/** A browser as far as the server can tell: its cookie, its CSRF token and its origin. */
interface Browser {
  cookie: string;
  csrf: string;
  userId: string;
  sessionId: string;
}

const origin = () => d.url;
const browserHeaders = (b: Browser | null, extra: Record<string, string> = {}) => ({
  Origin: origin(),
  'Sec-Fetch-Site': 'same-origin',
  ...(b ? { Cookie: `vigil_session=${b.cookie}`, 'X-CSRF-Token': b.csrf } : {}),
  ...extra,
});

/** The value and attributes of the Set-Cookie of vigil_session. */
function sessionSetCookie(res: Response): { value: string; attrs: string[] } | null {
  const line = res.headers.getSetCookie().find((c) => c.startsWith('vigil_session='));
  if (!line) return null;
  const [pair, ...attrs] = line.split(';').map((s) => s.trim());
  return { value: pair!.slice('vigil_session='.length), attrs };
}

async function signIn(username: string, password: string, extra: Record<string, string> = {}) {
  const r = await call(d, 'POST', '/v1/auth/login', { username, password }, browserHeaders(null, extra));
  const cookie = sessionSetCookie(r.res);
  const browser: Browser | null =
    r.status === 200 && cookie
      ? { cookie: cookie.value, csrf: r.json.csrf_token, userId: r.json.user.id, sessionId: r.json.session.id }
      : null;
  return { ...r, cookie, browser };
}

/** A request from a signed-in browser (cookie, CSRF token, same origin). */
const as = (b: Browser, method: string, path: string, body?: unknown, extra: Record<string, string> = {}) =>
  call(d, method, path, body, browserHeaders(b, extra));

const PASSWORDS = { root: 'root password 1', viewer: 'viewer password 1', operator: 'operator password 1' };
let admin: Browser;
let viewer: Browser;
let operator: Browser;

test.before(async () => {
  const frames = await renderScenario([{ image: face('identities/obama/1.jpg'), seconds: 2 }], {
    width: 320,
    height: 240,
    fps: 10,
  });
  [rtsp, d] = await Promise.all([
    startRtspServer({ frames, fps: 10 }),
    startTestDaemon({ dir, toml: `${FAST_MONITORS_TOML}\n[auth]\nmax_failures = 5\nfailure_window_seconds = 600` }),
  ]);
  await enrollObamaBiden(d, 'gallery');
  await addPreviewMonitor(d, 'door', rtsp.url());
});
test.after.always(async () => {
  await d?.close();
  await rtsp?.stop();
});

test.serial('the first admin: the set-up code printed at start, from the sign-in page only, once', async (t) => {
  t.deepEqual((await call(d, 'GET', '/v1/auth/setup', undefined, {})).json.setup_required, true);
  // The code the daemon logged at start (issueSetupCode gives the same code until a user exists).
  const code = d.runtime.users.issueSetupCode()!;
  t.regex(code, /^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$/);
  const body = { setup_code: code, username: 'root', password: PASSWORDS.root };
  // Not from a page (no Origin, no Sec-Fetch-Site: curl), or from another site: refused.
  const curl = await call(d, 'POST', '/v1/auth/setup', body, {});
  t.is(curl.status, 403);
  t.is(curl.json.error.code, 'csrf_failed');
  const evil = await call(d, 'POST', '/v1/auth/setup', body, {
    Origin: 'http://evil.example',
    'Sec-Fetch-Site': 'cross-site',
  });
  t.deepEqual([evil.status, evil.json.error.details.reason], [403, 'cross_site']);
  const wrong = await call(
    d,
    'POST',
    '/v1/auth/setup',
    { ...body, setup_code: 'AAAA-BBBB-CCCC' },
    browserHeaders(null),
  );
  t.deepEqual([wrong.status, wrong.json.error.code], [401, 'setup_code_invalid']);
  const weak = await call(d, 'POST', '/v1/auth/setup', { ...body, password: 'short' }, browserHeaders(null));
  t.deepEqual(
    [weak.status, weak.json.error.code, weak.json.error.details.reason],
    [400, 'invalid_password', 'too_short'],
  );

  const made = await call(
    d,
    'POST',
    '/v1/auth/setup',
    { ...body, setup_code: code.toLowerCase() },
    browserHeaders(null),
  );
  t.is(made.status, 201, JSON.stringify(made.json));
  t.is(made.json.user.role, 'admin');
  t.truthy(sessionSetCookie(made.res));
  const again = await call(d, 'POST', '/v1/auth/setup', { ...body, username: 'second' }, browserHeaders(null));
  t.deepEqual([again.status, again.json.error.code], [409, 'setup_not_available']);
  t.false((await call(d, 'GET', '/v1/auth/setup', undefined, {})).json.setup_required);
  t.is(d.runtime.users.issueSetupCode(), null);
});

test.serial(
  'password sign-in: HttpOnly SameSite=Strict cookie, Secure over HTTPS, whoami after a reload, sign-out',
  async (t) => {
    const wrong = await signIn('root', 'not the password');
    t.deepEqual([wrong.status, wrong.json.error.code], [401, 'invalid_credentials']);
    t.is(wrong.cookie, null);
    const unknown = await signIn('nobody', PASSWORDS.root);
    t.deepEqual([unknown.status, unknown.json.error.message], [401, wrong.json.error.message]);

    const ok = await signIn('ROOT', PASSWORDS.root);
    t.is(ok.status, 200);
    admin = ok.browser!;
    t.is(ok.json.user.username, 'root');
    t.is(ok.json.role, 'admin');
    t.regex(ok.cookie!.value, /^[A-Za-z0-9_-]{43}$/);
    t.deepEqual(ok.cookie!.attrs.sort(), ['HttpOnly', 'Max-Age=604800', 'Path=/', 'SameSite=Strict']);
    t.false(JSON.stringify(ok.json).includes(ok.cookie!.value), 'the session token is only in the cookie');
    // Behind a TLS proxy (loopback is a trusted proxy by default) the cookie is Secure.
    const tls = await signIn('root', PASSWORDS.root, {
      'X-Forwarded-Proto': 'https',
      Origin: origin().replace('http:', 'https:'),
    });
    t.true(tls.cookie!.attrs.includes('Secure'));

    // After a reload the page has the cookie only: whoami gives it the user and the CSRF token back.
    const who = await call(d, 'GET', '/v1/auth/session', undefined, { Cookie: `vigil_session=${admin.cookie}` });
    t.is(who.status, 200);
    t.like(who.json, { credential: 'session', role: 'admin', csrf_token: admin.csrf });
    t.is(who.json.session.id, admin.sessionId);
    t.true(who.json.session.current);
    // The API key is admin and unchanged.
    t.like((await call(d, 'GET', '/v1/auth/session')).json, { credential: 'api_key', role: 'admin', user: null });

    // Create the other users (as the admin, through the cookie).
    for (const role of ['viewer', 'operator'] as const) {
      const r = await as(admin, 'POST', '/v1/users', { username: role, password: PASSWORDS[role], role });
      t.is(r.status, 201, JSON.stringify(r.json));
    }
    viewer = (await signIn('viewer', PASSWORDS.viewer)).browser!;
    operator = (await signIn('operator', PASSWORDS.operator)).browser!;

    // Sign-out: 204, the cookie is cleared, and the old token is refused from then on.
    const out = await as(tls.browser!, 'POST', '/v1/auth/logout');
    t.is(out.status, 204);
    t.true(sessionSetCookie(out.res)!.attrs.includes('Max-Age=0'));
    const after = await call(d, 'GET', '/v1/monitors', undefined, { Cookie: `vigil_session=${tls.browser!.cookie}` });
    t.deepEqual([after.status, after.json.error.code], [401, 'unauthorized']);
    t.regex(after.json.error.message, /session has ended/);
    // Signing out needs a session (the API key has none).
    t.is((await call(d, 'POST', '/v1/auth/logout')).json.error.code, 'not_signed_in');
  },
);

test.serial(
  'CSRF: cookie requests that change something need the session token and this origin; Bearer clients do not',
  async (t) => {
    const cookie = { Cookie: `vigil_session=${operator.cookie}` };
    const body = { id: 'csrf-test', name: 'csrf' };
    const missing = await call(d, 'POST', '/v1/collections', body, cookie);
    t.deepEqual(
      [missing.status, missing.json.error.code, missing.json.error.details.reason],
      [403, 'csrf_failed', 'missing_token'],
    );
    const wrong = await call(d, 'POST', '/v1/collections', body, { ...cookie, 'X-CSRF-Token': viewer.csrf });
    t.is(wrong.json.error.details.reason, 'wrong_token');
    for (const extra of [
      { Origin: 'http://evil.example' } as Record<string, string>,
      { 'Sec-Fetch-Site': 'cross-site' },
      // Another port of this host is same-site: SameSite=Strict sends the cookie, the origin check does not pass it.
      { 'Sec-Fetch-Site': 'same-site', Origin: origin().replace(/:\d+$/, ':1') },
    ]) {
      const r = await as(operator, 'POST', '/v1/collections', body, extra);
      t.deepEqual([r.status, r.json.error.details.reason], [403, 'cross_site'], JSON.stringify(extra));
    }
    // Reads need no token.
    t.is((await call(d, 'GET', '/v1/collections', undefined, cookie)).status, 200);
    t.is((await as(operator, 'POST', '/v1/collections', body)).status, 201);
    // Bearer: as before, no token, no origin check.
    t.is(
      (await call(d, 'DELETE', '/v1/collections/csrf-test', undefined, { ...d.auth, Origin: 'http://evil.example' }))
        .status,
      204,
    );
    // A login form posted by another site (login CSRF) is refused too.
    const cross = await call(
      d,
      'POST',
      '/v1/auth/login',
      { username: 'viewer', password: PASSWORDS.viewer },
      { Origin: 'http://evil.example' },
    );
    t.deepEqual([cross.status, cross.json.error.code], [403, 'csrf_failed']);
  },
);

test.serial(
  'roles: a viewer watches but cannot enrol, delete, export or read settings; an operator manages but is no admin',
  async (t) => {
    const refused = async (b: Browser, method: string, path: string, need: string, body?: unknown) => {
      const r = await as(b, method, path, body);
      t.is(r.status, 403, `${method} ${path}: ${JSON.stringify(r.json)}`);
      t.is(r.json.error.code, 'forbidden_role');
      t.deepEqual(r.json.error.details, { required_role: need, role: b === viewer ? 'viewer' : 'operator' });
      t.truthy(r.json.request_id);
    };
    for (const path of ['/v1/monitors', '/v1/monitors/door', '/v1/monitors/door/state', '/v1/events'])
      t.is((await as(viewer, 'GET', path)).status, 200, path);
    await refused(viewer, 'POST', '/v1/collections/gallery/persons/obama/faces', 'operator', {});
    await refused(viewer, 'POST', '/v1/events/evt_x/enrol', 'operator', {
      collection_id: 'gallery',
      person_id: 'obama',
    });
    await refused(viewer, 'DELETE', '/v1/collections/gallery/persons/obama', 'operator');
    await refused(viewer, 'DELETE', '/v1/events?all=true', 'operator');
    await refused(viewer, 'DELETE', '/v1/monitors/door', 'operator');
    await refused(viewer, 'GET', '/v1/collections/gallery/export', 'admin');
    await refused(viewer, 'GET', '/v1/system', 'operator');
    await refused(viewer, 'GET', '/v1/webhooks', 'admin');
    await refused(viewer, 'GET', '/v1/users', 'admin');
    await refused(viewer, 'GET', '/v1/audit', 'admin');
    // The operator manages collections and cameras, not exports, keys, users or webhooks.
    t.is((await as(operator, 'GET', '/v1/collections/gallery/persons')).status, 200);
    t.is((await as(operator, 'PATCH', '/v1/monitors/door', { description: 'front door' })).status, 200);
    await refused(operator, 'GET', '/v1/collections/gallery/export', 'admin');
    await refused(operator, 'POST', '/v1/kiosk-tokens', 'admin', { monitor_ids: ['door'] });
    await refused(operator, 'POST', '/v1/users', 'admin', { username: 'x', password: 'long enough 1', role: 'admin' });
    await refused(operator, 'POST', '/v1/webhooks', 'admin', { url: 'http://127.0.0.1:9/x' });
    // The admin exports; the API key still does everything.
    const exported = await fetch(`${d.url}/v1/collections/gallery/export`, { headers: browserHeaders(admin) });
    t.is(exported.status, 200);
    t.regex((await exported.text()).split('\n')[0]!, /embedding_contract_id/);
    t.is((await call(d, 'GET', '/v1/users')).status, 200);
    // A role change applies to the next request of the user's existing session.
    t.is((await as(admin, 'PATCH', `/v1/users/${viewer.userId}`, { role: 'operator' })).json.user.role, 'operator');
    t.is((await as(viewer, 'GET', '/v1/system')).status, 200);
    t.is((await as(admin, 'PATCH', `/v1/users/${viewer.userId}`, { role: 'viewer' })).json.user.role, 'viewer');
    t.is((await as(viewer, 'GET', '/v1/system')).status, 403);
    // The only admin cannot demote or delete itself.
    const last = await as(admin, 'DELETE', `/v1/users/${admin.userId}`);
    t.deepEqual([last.status, last.json.error.code], [409, 'last_admin']);
  },
);

test.serial(
  'sessions: each user lists its own, admins all; a revoke ends the session and its open preview at once',
  async (t) => {
    const own = await as(viewer, 'GET', '/v1/auth/sessions');
    t.true(own.json.sessions.length >= 1);
    t.true(own.json.sessions.every((s: { username: string }) => s.username === 'viewer'));
    const all = await as(admin, 'GET', '/v1/auth/sessions');
    const names = new Set(all.json.sessions.map((s: { username: string }) => s.username));
    t.deepEqual([...names].sort(), ['operator', 'root', 'viewer']);
    t.is(all.json.sessions.find((s: { id: string }) => s.id === viewer.sessionId).address, '127.0.0.1');
    // Another user's session is "not found" to a non-admin.
    t.is((await as(viewer, 'DELETE', `/v1/auth/sessions/${admin.sessionId}`)).status, 404);

    await waitFor('door connected', async () =>
      (await call(d, 'GET', '/v1/monitors/door')).json.monitor.runtime.connected ? true : undefined,
    );
    const preview = watchPreview(`${d.url}/v1/monitors/door/preview.mjpeg`, {
      Cookie: `vigil_session=${viewer.cookie}`,
    });
    t.teardown(() => preview.stop());
    await waitFor('the viewer preview delivers', async () => preview.frames > 1 || undefined);
    const revoked = await as(admin, 'DELETE', `/v1/auth/sessions/${viewer.sessionId}`);
    t.is(revoked.status, 200);
    t.is(revoked.json.session.username, 'viewer');
    t.is(await endedWithin(preview, 3000), 'ended', 'the revoked session’s preview ended');
    t.is((await as(viewer, 'GET', '/v1/monitors')).status, 401);
    viewer = (await signIn('viewer', PASSWORDS.viewer)).browser!;

    // Deleting a user ends its sessions too; so does a password change by an admin.
    const temp = await as(admin, 'POST', '/v1/users', {
      username: 'temp',
      password: 'temp password 1',
      role: 'viewer',
    });
    const tempBrowser = (await signIn('temp', 'temp password 1')).browser!;
    t.is((await as(admin, 'PATCH', `/v1/users/${temp.json.user.id}`, { password: 'temp password 2' })).status, 200);
    t.is((await as(tempBrowser, 'GET', '/v1/monitors')).status, 401);
    const again = (await signIn('temp', 'temp password 2')).browser!;
    t.is((await as(admin, 'DELETE', `/v1/users/${temp.json.user.id}`)).status, 200);
    t.is((await as(again, 'GET', '/v1/monitors')).status, 401);
  },
);

test.serial(
  'failed sign-ins and wrong API keys share one budget per client address (through a trusted proxy)',
  async (t) => {
    // Loopback is a trusted proxy: X-Forwarded-For names the client, so each test address has its own budget.
    const from = (address: string) => ({ 'X-Forwarded-For': address });
    for (let i = 0; i < 3; i++) t.is((await signIn('viewer', `wrong password ${i}`, from('203.0.113.5'))).status, 401);
    for (let i = 0; i < 2; i++)
      t.is(
        (
          await call(d, 'GET', '/v1/monitors', undefined, {
            Authorization: 'Bearer wrong-key-wrong-key',
            ...from('203.0.113.5'),
          })
        ).status,
        401,
      );
    // Five failures (max_failures = 5): even the right password is now 429, with Retry-After.
    const blocked = await signIn('viewer', PASSWORDS.viewer, from('203.0.113.5'));
    t.deepEqual([blocked.status, blocked.json.error.code], [429, 'too_many_auth_failures']);
    t.truthy(blocked.res.headers.get('retry-after'));
    const key = await call(d, 'GET', '/v1/monitors', undefined, {
      Authorization: 'Bearer another-wrong-key',
      ...from('203.0.113.5'),
    });
    t.is(key.status, 429);
    // Another client is unaffected.
    t.is((await signIn('viewer', PASSWORDS.viewer, from('203.0.113.6'))).status, 200);
    // Wrong set-up codes count too (here: set-up is over, so 409 without counting).
    t.is(
      (
        await call(
          d,
          'POST',
          '/v1/auth/setup',
          { setup_code: 'x', username: 'x', password: 'long enough 1' },
          browserHeaders(null, from('203.0.113.7')),
        )
      ).status,
      409,
    );
  },
);

test.serial(
  'the audit log: who did what from the API, the web UI and the CLI, visible to admins, paged with a cursor',
  async (t) => {
    const config = join(dir, 'cli.toml');
    writeFileSync(config, `[server]\ndata_dir = ${JSON.stringify(join(dir, 'data'))}\n`);
    const io = { stdout: new Sink(), stderr: new Sink() };
    const stdin = (text: string) => ({ stdin: Readable.from([text]), prompt: new Sink() });
    t.is(
      await runUsersCommand(
        ['add', 'cli-made', '--role', 'operator', '--password-stdin'],
        config,
        io,
        stdin('from the cli 1\n'),
      ),
      0,
    );
    t.regex(io.stdout.text, /created operator cli-made/);
    t.is((await signIn('cli-made', 'from the cli 1')).status, 200, 'the trailing newline is not part of the password');
    t.is(await runUsersCommand(['passwd', 'cli-made', '--password-stdin'], config, io, stdin('from the cli 2')), 0);
    t.is(await runUsersCommand(['remove', 'cli-made'], config, io), 0);
    const list = { stdout: new Sink(), stderr: new Sink() };
    t.is(await runUsersCommand(['list', '--json'], config, list), 0);
    t.deepEqual(
      (JSON.parse(list.stdout.text) as { username: string }[]).map((u) => u.username),
      ['operator', 'root', 'viewer'],
    );
    // No terminal and no --password-stdin: a usage error, nothing created.
    await t.throwsAsync(
      runUsersCommand(['add', 'x-user', '--role', 'viewer'], config, io, {
        stdin: Readable.from([]),
        prompt: new Sink(),
      }),
      {
        message: /--password-stdin/,
      },
    );

    const entries: Record<string, any>[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `?limit=20&cursor=${encodeURIComponent(cursor)}` : '?limit=20';
      const page = await as(admin, 'GET', `/v1/audit${q}`);
      t.is(page.status, 200);
      entries.push(...page.json.entries);
      cursor = page.json.next_cursor;
    } while (cursor);
    const find = (action: string, actor: string, pred: (e: Record<string, any>) => boolean = () => true) =>
      entries.find((e) => e.action === action && e.actor === actor && pred(e));
    // The API key's enrolment, the set-up, sign-ins (failed ones name the username tried), the UI's changes.
    t.like(find('create_person_v1_collections__collection_id__persons_post', 'api key #1'), {
      source: 'api',
      actor_type: 'api_key',
      status: 201,
      path: '/v1/collections/gallery/persons',
    });
    t.like(
      find('setup_v1_auth_setup_post', 'root', (e) => e.status === 201),
      { actor_type: 'user', detail: { username: 'root', role: 'admin' } },
    );
    t.like(
      find('login_v1_auth_login_post', 'anonymous', (e) => e.detail.username === 'root'),
      {
        status: 401,
        error_code: 'invalid_credentials',
        detail: { username: 'root' },
        address: '127.0.0.1',
      },
    );
    t.like(
      find('create_user_v1_users_post', 'root', (e) => e.detail.username === 'viewer'),
      {
        status: 201,
        detail: { role: 'viewer' },
      },
    );
    t.like(find('export_gallery_v1_collections__collection_id__export_get', 'root'), { status: 200, method: 'GET' });
    // Refusals are recorded with who was refused.
    t.like(find('delete_person_v1_collections__collection_id__persons__person_id__delete', 'viewer'), {
      status: 403,
      error_code: 'forbidden_role',
    });
    t.like(
      find('revoke_session_v1_auth_sessions__session_id__delete', 'root', (e) => e.status === 200),
      { detail: { username: 'viewer' } },
    );
    t.like(
      find('login_v1_auth_login_post', 'anonymous', (e) => e.address === '203.0.113.5' && e.status === 401),
      { error_code: 'invalid_credentials' },
    );
    // So are attempts refused by the throttle.
    t.like(
      find('login_v1_auth_login_post', 'anonymous', (e) => e.address === '203.0.113.5' && e.status === 429),
      { error_code: 'too_many_auth_failures', detail: { username: 'viewer' } },
    );
    // The CLI's changes, with the operating-system user.
    const me = cliActor();
    t.like(find('create_user_v1_users_post', me), {
      source: 'cli',
      actor_type: 'cli',
      detail: { username: 'cli-made', role: 'operator' },
      status: null,
    });
    t.like(find('update_user_v1_users__user_id__patch', me), {
      source: 'cli',
      detail: { username: 'cli-made', password_changed: true },
    });
    t.like(find('delete_user_v1_users__user_id__delete', me), { source: 'cli' });
    // Reads are not recorded; request bodies (passwords) never are.
    t.falsy(entries.find((e) => e.action === 'list_monitors_v1_monitors_get'));
    t.false(JSON.stringify(entries).includes(PASSWORDS.viewer));
    // Filters.
    const byViewer = await as(admin, 'GET', '/v1/audit?actor=viewer&limit=500');
    t.true(byViewer.json.entries.length > 0);
    t.true(byViewer.json.entries.every((e: { actor: string }) => e.actor === 'viewer'));
  },
);

test.serial(
  '/openapi.json and docs/operations/users.md give every operation the role the guard enforces',
  async (t) => {
    const spec = (await (await fetch(`${d.url}/openapi.json`)).json()) as any;
    const routes = apiRoutes(d.runtime);
    for (const r of routes.filter((x) => !x.public && x.auth !== 'workspace'))
      t.is(spec.paths[r.path][r.method]['x-vigil-role'], r.role ?? 'admin', `${r.method} ${r.path}`);
    t.is(spec.paths['/v1/monitors/{monitor_id}/preview.mjpeg'].get['x-vigil-role'], 'viewer');
    t.is(spec.paths['/v1/collections/{collection_id}/export'].get['x-vigil-role'], 'admin');
    t.true(spec.paths['/v1/collections/{collection_id}/export'].get['x-vigil-audited']);
    const page = readFileSync(join(REPO, ROLE_TABLE_PAGE), 'utf8');
    t.true(page.includes(roleTable(routes)), 'run npm run docs:roles');
  },
);
