import test from 'ava';
import pino from 'pino';
import { nominalSchedule, retryDelayMs } from '../../src/webhooks/retrySchedule.js';
import { newWebhookSecret, signWebhook } from '../../src/webhooks/signature.js';
import { endpointMatches, WebhookOutbox, webhookBody } from '../../src/webhooks/webhookOutbox.js';
import { WebhookStore, type WebhookEndpoint } from '../../src/webhooks/webhookStore.js';
import { CredentialCipher } from '../../src/store/credentialCipher.js';
import { openDatabase } from '../../src/store/database.js';
import { startReceiver, verifyStandardWebhook } from '../helpers/webhookReceiver.js';
import { waitFor } from '../helpers/monitors.js';
import { fileTempDir } from '../helpers/tempDir.js';

test('signatures match the Standard Webhooks reference vector', (t) => {
  t.is(
    signWebhook(
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'msg_p5jXN8AQM9LWM0D4loKWxJek',
      1614265330,
      '{"test": 2432232314}',
    ),
    'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  );
  const secret = newWebhookSecret();
  t.regex(secret, /^whsec_/);
  t.is(Buffer.from(secret.slice(6), 'base64').length, 32);
  const sig = signWebhook(secret, 'msg_1', 1_700_000_000, '{"a":1}');
  t.true(
    verifyStandardWebhook(
      secret,
      { 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', 'webhook-signature': sig },
      '{"a":1}',
      300,
      1_700_000_100,
    ),
  );
  t.false(
    verifyStandardWebhook(
      secret,
      { 'webhook-id': 'msg_2', 'webhook-timestamp': '1700000000', 'webhook-signature': sig },
      '{"a":1}',
      300,
      1_700_000_100,
    ),
  );
  t.false(
    verifyStandardWebhook(
      secret,
      { 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', 'webhook-signature': sig },
      '{"a":1}',
      300,
      1_700_001_000,
    ),
    'too old',
  );
});

test('retry delays double from first_retry up to the cap, with bounded jitter', (t) => {
  const p = { firstRetryMs: 5000, maxDelayMs: 300_000, jitter: 0.2 };
  t.deepEqual(nominalSchedule(p, 8), [5000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000]);
  t.is(
    retryDelayMs(1, p, () => 0),
    4000,
  );
  t.is(
    retryDelayMs(1, p, () => 1),
    6000,
  );
  t.is(
    retryDelayMs(50, p, () => 0.5),
    300_000,
  );
});

test('endpoint matching: scope, types (empty = all) and tag filters', (t) => {
  const e = { scope: 'admin', event_types: [] as string[], filters: {} as Record<string, string[]> };
  const m = { scope: 'admin', type: 'monitor.person_enter', tags: { monitor_id: 'door' } };
  t.true(endpointMatches(e, m));
  t.false(endpointMatches({ ...e, scope: 'ws:acme' }, m));
  t.false(endpointMatches({ ...e, event_types: ['monitor.person_exit'] }, m));
  t.true(endpointMatches({ ...e, event_types: ['monitor.person_enter'] }, m));
  t.false(endpointMatches({ ...e, filters: { monitor_id: ['gate'] } }, m));
  t.true(endpointMatches({ ...e, filters: { monitor_id: ['gate', 'door'] } }, m));
  t.false(endpointMatches({ ...e, filters: { run_kind: ['forum'] } }, m), 'a filter on a tag the message lacks');
  t.is(
    webhookBody('x.y', '2026-01-01T00:00:00.000Z', { a: 1 }),
    '{"type":"x.y","timestamp":"2026-01-01T00:00:00.000Z","data":{"a":1}}',
  );
});

function outboxWith(o: Partial<ConstructorParameters<typeof WebhookOutbox>[1]> = {}) {
  const dir = fileTempDir('vigil-wh-');
  const db = openDatabase(dir);
  const store = new WebhookStore(db.db, CredentialCipher.open(dir));
  const outbox = new WebhookOutbox(
    store,
    {
      timeoutMs: 1000,
      retry: { firstRetryMs: 50, maxDelayMs: 200, jitter: 0 },
      disableAfterFailures: 0,
      maxPendingPerEndpoint: 1000,
      logSize: 50,
      maxRedirects: 2,
      ...o,
    },
    pino({ level: 'silent' }),
  );
  const add = (url: string): WebhookEndpoint => {
    const now = new Date().toISOString();
    const e: WebhookEndpoint = {
      id: `wh_${Math.random().toString(36).slice(2)}`,
      scope: 'admin',
      url,
      description: '',
      event_types: [],
      filters: {},
      secret: newWebhookSecret(),
      enabled: true,
      disabled_reason: null,
      disabled_at: null,
      failure_streak: 0,
      last_success_at: null,
      last_failure_at: null,
      created_at: now,
      updated_at: now,
    };
    store.insertEndpoint(e);
    outbox.invalidate();
    return e;
  };
  return { db, store, outbox, add };
}

test('signing secrets are stored encrypted with the box key; plaintext ones of an older version are encrypted once', (t) => {
  const { db, store, add } = outboxWith();
  t.teardown(() => db.close());
  const e = add('http://127.0.0.1:9/hook');
  const raw = () =>
    (db.db.prepare('SELECT secret FROM webhook_endpoints WHERE id = ?').get(e.id) as { secret: string }).secret;
  t.true(CredentialCipher.isToken(raw()));
  t.false(raw().includes(e.secret.slice('whsec_'.length)));
  t.is(store.getEndpoint(e.id)!.secret, e.secret);
  t.is(store.encryptPlaintextSecrets(), 0, 'nothing to do');

  // A row as an older version wrote it: encrypted at the next start, then left alone.
  const old = newWebhookSecret();
  db.db.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ?').run(old, e.id);
  t.is(store.encryptPlaintextSecrets(), 1);
  const once = raw();
  t.true(CredentialCipher.isToken(once));
  t.is(store.getEndpoint(e.id)!.secret, old);
  t.is(store.enabledEndpoints().find((x) => x.id === e.id)!.secret, old);
  t.is(store.encryptPlaintextSecrets(), 0);
  t.is(raw(), once);
  t.is(db.db.pragma('secure_delete', { simple: true }), 0, "the connection's setting is restored");
});

test('the outbox delivers in order, retries a failing head before anything behind it, and logs every attempt', async (t) => {
  const r = await startReceiver();
  const { db, store, outbox, add } = outboxWith();
  const e = add(`${r.url}/a`);
  r.secret = e.secret;
  let failures = 3;
  r.respond = () => (failures-- > 0 ? 503 : 200);
  outbox.start();
  for (let i = 0; i < 20; i++) outbox.enqueue({ scope: 'admin', type: 't.x', tags: {}, data: { i } });
  await waitFor('all', async () => (r.received.length >= 20 ? true : undefined), 10_000, 50);
  t.deepEqual(
    r.received.map((x) => x.json.data.i),
    [...Array(20).keys()],
  );
  const log = store.attempts(e.id, null, 100);
  t.is(log.filter((a) => a.outcome === 'failed').length, 3);
  t.deepEqual(
    log
      .filter((a) => a.outcome === 'failed')
      .map((a) => a.attempt)
      .sort(),
    [1, 2, 3],
  );
  t.is(log.filter((a) => a.outcome === 'failed')[0]!.status_code, 503);
  t.is(store.pendingCount(e.id), 0);
  t.is(store.getEndpoint(e.id)!.failure_streak, 0);
  await outbox.close();
  db.close();
  await r.close();
});

test('redirects: same-origin 307 is followed, another host or a 302 is not; slow receivers time out; a failure streak or 410 disables', async (t) => {
  const r = await startReceiver();
  const other = await startReceiver();
  const { db, store, outbox, add } = outboxWith({ disableAfterFailures: 3, timeoutMs: 300 });
  r.respond = (x) =>
    x.path === '/moved'
      ? { status: 307, location: '/here' }
      : x.path === '/away'
        ? { status: 307, location: `${other.url}/x` }
        : x.path === '/302'
          ? { status: 302, location: '/here' }
          : x.path === '/slow'
            ? { status: 200, delayMs: 1500 }
            : x.path === '/gone'
              ? 410
              : 200;
  const moved = add(`${r.url}/moved`),
    away = add(`${r.url}/away`),
    found = add(`${r.url}/302`),
    slow = add(`${r.url}/slow`),
    gone = add(`${r.url}/gone`);
  outbox.start();
  outbox.enqueue({ scope: 'admin', type: 't.x', tags: {}, data: {} });
  await waitFor(
    'settled',
    async () =>
      store.getEndpoint(away.id)!.enabled ||
      store.getEndpoint(slow.id)!.enabled ||
      store.getEndpoint(gone.id)!.enabled ||
      store.getEndpoint(found.id)!.enabled
        ? undefined
        : true,
    20_000,
    50,
  );
  t.is(store.pendingCount(moved.id), 0, 'the same-origin 307 was delivered');
  t.true(r.received.some((x) => x.path === '/here'));
  t.is(other.received.length, 0, 'never followed to another host');
  t.regex(store.attempts(away.id, null, 1)[0]!.error!, /another host/);
  t.regex(store.attempts(found.id, null, 1)[0]!.error!, /302 redirect not followed/);
  t.regex(store.attempts(slow.id, null, 1)[0]!.error!, /timed out/);
  t.regex(store.getEndpoint(slow.id)!.disabled_reason!, /^failure_streak: 3 consecutive failed attempts/);
  t.regex(store.getEndpoint(gone.id)!.disabled_reason!, /^gone/);
  t.is(store.pendingCount(slow.id), 1, 'a disabled endpoint keeps its messages');
  await outbox.close();
  db.close();
  await Promise.all([r.close(), other.close()]);
});
