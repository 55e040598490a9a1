import test from 'ava';
import { join } from 'node:path';
import { roleAllows } from '../../src/contract/users.js';
import { openDatabase, type OpenedDatabase } from '../../src/store/database.js';
import { CursorCodec } from '../../src/store/cursors.js';
import { AuditLog, cliActor } from '../../src/users/auditLog.js';
import {
  CURRENT_PARAMS,
  formatHash,
  hashPassword,
  needsRehash,
  parseHash,
  verifyPassword,
} from '../../src/users/passwordHash.js';
import { passwordProblem } from '../../src/users/passwordRules.js';
import { newSetupCode, normaliseSetupCode, setupCodeMatches } from '../../src/users/setupCode.js';
import { UserService } from '../../src/users/userService.js';
import { UserStore } from '../../src/users/userStore.js';
import { forwardedClient } from '../../src/http/browserSession.js';
import { configFromText } from '../../src/config/load.js';
import { fileTempDir } from '../helpers/tempDir.js';

const root = fileTempDir('vigil-users-test-');
const opened: OpenedDatabase[] = [];
test.after.always(() => {
  for (const o of opened) o.close();
});
let n = 0;
function freshDb(): OpenedDatabase {
  const o = openDatabase(join(root, `data-${n++}`));
  opened.push(o);
  return o;
}

/** A service on a fresh database with a clock the test moves. */
function freshService(policy = { idleMs: 60 * 60_000, maxMs: 24 * 3600_000 }) {
  const clock = { now: Date.parse('2026-01-01T00:00:00Z') };
  const db = freshDb();
  return { users: new UserService(new UserStore(db.db), policy, () => clock.now), clock, db };
}
const client = { address: '192.0.2.7', userAgent: 'test' };

test('hash format: versioned scrypt string with its parameters, salt and key; verifies, and a wrong password does not', async (t) => {
  const h = await hashPassword('correct horse battery');
  t.regex(h, /^\$scrypt\$v=1\$n=32768,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
  t.deepEqual(CURRENT_PARAMS, { N: 32768, r: 8, p: 1 });
  t.true(await verifyPassword('correct horse battery', h));
  t.false(await verifyPassword('correct horse batterY', h));
  t.false(await verifyPassword('', h));
  // A per-user salt: the same password hashes differently each time.
  t.not(await hashPassword('correct horse battery'), h);
  t.false(needsRehash(h));
});

test('hash format: composed and decomposed spellings of one password are one password (NFC)', async (t) => {
  const h = await hashPassword('Caf\u00e9 au lait!');
  t.true(await verifyPassword('Cafe\u0301 au lait!', h));
});

test('hash format: hashes of older parameters still verify and ask for a re-hash; broken or absurd ones never match', async (t) => {
  const old = await hashPassword('a long enough phrase', { N: 2 ** 14, r: 8, p: 1 });
  t.true(old.includes('$n=16384,r=8,p=1$'));
  t.true(await verifyPassword('a long enough phrase', old));
  t.true(needsRehash(old));
  const parsed = parseHash(old)!;
  t.is(parsed.salt.length, 16);
  t.is(parsed.key.length, 32);
  // N not a power of two, N or r too large (a tampered row must not cost gigabytes), wrong version, truncated.
  t.is(parseHash(formatHash({ N: 3000, r: 8, p: 1 }, parsed.salt, parsed.key)), null);
  t.is(parseHash(formatHash({ N: 2 ** 22, r: 8, p: 1 }, parsed.salt, parsed.key)), null);
  t.is(parseHash(formatHash({ N: 2 ** 14, r: 64, p: 1 }, parsed.salt, parsed.key)), null);
  t.is(parseHash(old.replace('$v=1$', '$v=2$')), null);
  t.is(parseHash(old.slice(0, -2)), null);
  t.false(await verifyPassword('a long enough phrase', old.replace('$v=1$', '$v=2$')));
  t.true(needsRehash('plaintext'));
});

test('password rules: at least 10 characters (code points), at most 256 bytes, no control characters, not the username', (t) => {
  t.is(passwordProblem('123456789', 'ana'), 'too_short');
  t.is(passwordProblem('1234567890', 'ana'), null);
  // Ten characters of a non-Latin script pass though they are more bytes; 86 three-byte characters do not.
  t.is(passwordProblem('パスワードパスワード', 'ana'), null);
  t.is(passwordProblem('パ'.repeat(85), 'ana'), null);
  t.is(passwordProblem('パ'.repeat(86), 'ana'), 'too_long');
  t.is(passwordProblem('x'.repeat(256), 'ana'), null);
  t.is(passwordProblem('x'.repeat(257), 'ana'), 'too_long');
  t.is(passwordProblem('long enough\n', 'ana'), 'control_characters');
  t.is(passwordProblem('Operator-One', 'operator-one'), 'same_as_username');
});

test('roles are ordered viewer < operator < admin', (t) => {
  t.true(roleAllows('admin', 'viewer'));
  t.true(roleAllows('operator', 'operator'));
  t.false(roleAllows('viewer', 'operator'));
  t.false(roleAllows('operator', 'admin'));
});

test('set-up codes: 3 groups of 4 unambiguous symbols; typed in any case, with or without dashes and spaces', (t) => {
  const code = newSetupCode();
  t.regex(code, /^[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}-[A-HJKMNP-Z2-9]{4}$/);
  t.not(newSetupCode(), code);
  t.true(setupCodeMatches(code, code.toLowerCase().replaceAll('-', ' ')));
  t.is(normaliseSetupCode(' ab-cd ef '), 'ABCDEF');
  t.false(setupCodeMatches(code, code.slice(0, -1)));
});

test('X-Forwarded-For: the rightmost hop that is not a trusted proxy is the client', (t) => {
  const trusted = new Set(['127.0.0.1', '10.0.0.2']);
  t.is(forwardedClient('127.0.0.1', '203.0.113.9', trusted), '203.0.113.9');
  // A client that sends its own X-Forwarded-For cannot pick its address: the proxy appends the real one.
  t.is(forwardedClient('127.0.0.1', '198.51.100.1, 203.0.113.9', trusted), '203.0.113.9');
  t.is(forwardedClient('127.0.0.1', '203.0.113.9, 10.0.0.2', trusted), '203.0.113.9');
  t.is(forwardedClient('127.0.0.1', 'garbage', trusted), '127.0.0.1');
  t.is(forwardedClient('127.0.0.1', '::ffff:203.0.113.9', trusted), '203.0.113.9');
});

test('[server] trusted_proxies takes IPv4 and IPv6 addresses only; loopback by default', (t) => {
  t.deepEqual(configFromText('', null, {}).server.trusted_proxies, ['127.0.0.1', '::1']);
  t.deepEqual(configFromText('[server]\ntrusted_proxies = ["10.0.0.5", "fd00::1"]', null, {}).server.trusted_proxies, [
    '10.0.0.5',
    'fd00::1',
  ]);
  t.throws(() => configFromText('[server]\ntrusted_proxies = ["proxy.lan"]', null, {}), {
    message: /trusted_proxies.*IPv4 or IPv6/s,
  });
});

test('sessions end when idle too long, at their absolute end, at sign-out and at a password change', async (t) => {
  const { users, clock } = freshService({ idleMs: 60 * 60_000, maxMs: 3 * 3600_000 });
  await users.create({ username: 'ana', password: 'first password', role: 'viewer' });
  const a = await users.signIn('ANA', 'first password', client);
  t.is(a.user.username, 'ana');
  t.deepEqual(users.authenticate(a.token), {
    sessionId: a.session.id,
    userId: a.user.id,
    username: 'ana',
    role: 'viewer',
  });
  // Used every 50 minutes, the session lives until its absolute end (3 h), not one minute longer.
  for (let i = 0; i < 3; i++) {
    clock.now += 50 * 60_000;
    t.truthy(users.authenticate(a.token), `after ${(i + 1) * 50} minutes`);
  }
  clock.now += 31 * 60_000;
  t.is(users.authenticate(a.token), null, 'past the absolute end');
  // Idle: an hour without use ends it.
  const b = await users.signIn('ana', 'first password', client);
  clock.now += 61 * 60_000;
  t.is(users.authenticate(b.token), null, 'idle for an hour');
  t.false(users.sessionValid(b.session.id));
  // Sign-out and a password change by an admin.
  const c = await users.signIn('ana', 'first password', client);
  users.signOut(c.session.id);
  t.is(users.authenticate(c.token), null);
  const d = await users.signIn('ana', 'first password', client);
  await users.update(d.user.id, { password: 'second password' });
  t.is(users.authenticate(d.token), null);
  await t.throwsAsync(users.signIn('ana', 'first password', client), { message: 'The username or password is wrong.' });
  t.truthy(await users.signIn('ana', 'second password', client));
  t.true(users.prune() >= 0);
});

test('a wrong username and a wrong password get the same answer; the CSRF token is bound to its session', async (t) => {
  const { users } = freshService();
  await users.create({ username: 'ana', password: 'first password', role: 'admin' });
  const wrongName = await t.throwsAsync(users.signIn('bob', 'first password', client));
  const wrongPassword = await t.throwsAsync(users.signIn('ana', 'first passworD', client));
  t.deepEqual([wrongName.message, (wrongName as any).code], [wrongPassword.message, (wrongPassword as any).code]);
  const a = await users.signIn('ana', 'first password', client);
  const b = await users.signIn('ana', 'first password', client);
  t.true(users.csrfMatches(a.token, a.csrfToken));
  t.false(users.csrfMatches(a.token, b.csrfToken));
  t.false(users.csrfMatches(a.token, ''));
});

test('the last admin cannot be removed or demoted; usernames are case-insensitive; own password change keeps the session', async (t) => {
  const { users } = freshService();
  const admin = await users.create({ username: 'Root.Admin', password: 'first password', role: 'admin' });
  await t.throwsAsync(users.create({ username: 'root.admin', password: 'other password', role: 'viewer' }), {
    message: 'A user named "root.admin" already exists.',
  });
  t.throws(() => users.remove(admin.id), { message: /Root\.Admin is the last admin/ });
  await t.throwsAsync(users.update(admin.id, { role: 'operator' }), { message: /last admin/ });
  const second = await users.create({ username: 'second', password: 'other password', role: 'admin' });
  t.is((await users.update(admin.id, { role: 'operator' })).role, 'operator');
  t.throws(() => users.remove(second.id), { message: /last admin/ });
  await t.throwsAsync(users.create({ username: 'short', password: 'too short', role: 'viewer' }), {
    message: 'Request validation failed: the password must be at least 10 characters.',
  });
  // Own password change: the current password is asked, the other sessions end, this one stays.
  const here = await users.signIn('second', 'other password', client);
  const there = await users.signIn('second', 'other password', client);
  const me = users.authenticate(here.token)!;
  await t.throwsAsync(users.changeOwnPassword(me, 'wrong password', 'a new password'));
  await users.changeOwnPassword(me, 'other password', 'a new password');
  t.truthy(users.authenticate(here.token));
  t.is(users.authenticate(there.token), null);
});

test('set-up code: issued only while no user exists, creates one admin once, then is gone', async (t) => {
  const { users } = freshService();
  const code = users.issueSetupCode()!;
  t.truthy(code);
  t.is(users.issueSetupCode(), code, 'the same code until it is used');
  await t.throwsAsync(users.setUp('AAAA-AAAA-AAAA', 'first', 'first password', client), {
    message: /set-up code is not valid/,
  });
  const s = await users.setUp(code.toLowerCase(), 'first', 'first password', client);
  t.is(s.user.role, 'admin');
  await t.throwsAsync(users.setUp(code, 'again', 'first password', client), { message: /Set-up is not available/ });
  t.is(users.issueSetupCode(), null);
});

test('audit log: newest first, filtered, cursor bound to the filters, pruned by age', (t) => {
  const db = freshDb();
  const clock = { now: Date.parse('2026-01-01T00:00:00Z') };
  const audit = new AuditLog(db.db, new CursorCodec(Buffer.alloc(32, 7)), () => clock.now);
  for (let i = 0; i < 5; i++) {
    audit.record({ source: 'api', actor_type: 'user', actor: i % 2 ? 'ana' : 'bob', action: `op_${i}` });
    clock.now += 86_400_000;
  }
  const first = audit.list({ limit: 2 } as never);
  t.deepEqual(
    first.items.map((e) => e.action),
    ['op_4', 'op_3'],
  );
  const second = audit.list({ limit: 2, cursor: first.next_cursor } as never);
  t.deepEqual(
    second.items.map((e) => e.action),
    ['op_2', 'op_1'],
  );
  t.deepEqual(
    audit.list({ limit: 10, actor: 'ana' } as never).items.map((e) => e.action),
    ['op_3', 'op_1'],
  );
  t.throws(() => audit.list({ limit: 2, actor: 'ana', cursor: first.next_cursor } as never), {
    message: /cursor is invalid/,
  });
  t.deepEqual(
    audit
      .list({ limit: 10, since: '2026-01-03T00:00:00Z', until: '2026-01-05T00:00:00Z' } as never)
      .items.map((e) => e.action),
    ['op_3', 'op_2'],
  );
  // Now is 2026-01-06: entries older than 3 days (01-01, 01-02) go.
  t.is(audit.prune(3), 2);
  t.is(audit.prune(0), 0, '0 keeps everything');
  t.is(audit.list({ limit: 10 } as never).items.length, 3);
});

test('the CLI actor names the user who ran sudo', (t) => {
  const me = cliActor({});
  t.truthy(me);
  t.is(cliActor({ SUDO_USER: 'ana' }), me === 'ana' ? 'ana' : `ana (sudo as ${me})`);
});
