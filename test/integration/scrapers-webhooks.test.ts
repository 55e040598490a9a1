import test from 'ava';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startScraperDaemon, type ScraperDaemon } from '../helpers/scraperDaemon.js';
import { FakeMaps, REAL_QUERY } from '../helpers/fakeMaps.js';
import { FakeReddit, fixture } from '../helpers/fakeReddit.js';
import { startReceiver, verifyStandardWebhook, type Receiver } from '../helpers/webhookReceiver.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Run webhooks (issue 19 item 8): real scrape runs against the replay fakes are delivered to real local
 * receivers by the shared outbox, signed (verified with the receiver's own Standard Webhooks check),
 * retried after a failure, and only ever to the endpoints of the run's own workspace.
 */
let reddit: FakeReddit;
let maps: FakeMaps;
let d: TestDaemon;
const keys: Record<string, string> = {};
const WORKSPACES = ['hooks', 'other', 'retry', 'filtered', 'limits'];
const receivers: Receiver[] = [];

let fakes: ScraperDaemon;
test.before(async () => {
  fakes = await startScraperDaemon({
    workspaces: WORKSPACES,
    scrapers: 'free_items_per_month = 1000',
    toml: '[webhooks]\nfirst_retry_seconds = 0.2\nmax_retry_delay_seconds = 1\nmax_endpoints_per_workspace = 2',
  });
  ({ d, reddit, maps } = fakes);
  Object.assign(keys, fakes.keys);
});
test.after.always(async () => {
  await fakes?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

const auth = (ws: string) => ({ Authorization: `Bearer ${keys[ws]!}` });
const api = (ws: string, method: string, path: string, body?: unknown) =>
  call(d, method, `/workspaces/${ws}${path}`, body, auth(ws));
const scrape = async (ws: string, kind: string, body: unknown) =>
  (await api(ws, 'POST', `/scrapers/${kind}/scrape`, body)).json;
const until = async (f: () => boolean | Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

/** A receiver with a run-webhook endpoint of `ws` pointing at it; the receiver verifies every signature with the secret. */
async function endpointFor(ws: string, extra: Record<string, unknown> = {}) {
  const r = await startReceiver();
  receivers.push(r);
  const created = await api(ws, 'POST', '/webhooks', { url: `${r.url}/hook`, description: `${ws} runs`, ...extra });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.json)}`);
  r.secret = created.json.secret;
  return { r, webhook: created.json.webhook, secret: created.json.secret as string };
}
const forRun = (r: Receiver, runId: string) => r.received.filter((m) => m.json.data.run_id === runId);

test.serial(
  "a real scrape run delivers a signed scrape.run.<status> webhook with its counts to the workspace's receiver",
  async (t) => {
    const { r, webhook, secret } = await endpointFor('hooks');
    t.regex(secret, /^whsec_/);
    t.like(webhook, {
      url: `${r.url}/hook`,
      description: 'hooks runs',
      event_types: [],
      enabled: true,
      pending_messages: 0,
    });
    t.false('monitors' in webhook, 'workspace endpoints have no monitor filter');

    // Partial: one post's /comments fails (replayed in Reddit's format); the others are kept.
    reddit.fault(/^\/comments\/1q2w3e4$/, { kind: 'status', status: 404, body: fixture('error_notfound.json') });
    const partial = await scrape('hooks', 'forum', { community: 'typescript', max_items: 100 });
    t.is(partial.status, 'partial');
    await until(() => forRun(r, partial.run_id).length === 1);
    const [msg] = forRun(r, partial.run_id);
    t.is(msg!.path, '/hook');
    t.is(msg!.id, `msg_${partial.run_id}`, 'webhook-id is stable per run');
    t.true(
      verifyStandardWebhook(
        secret,
        { 'webhook-id': msg!.id, 'webhook-timestamp': String(msg!.timestamp), 'webhook-signature': msg!.signature },
        msg!.body,
      ),
    );
    t.false(
      verifyStandardWebhook(
        secret,
        { 'webhook-id': msg!.id, 'webhook-timestamp': String(msg!.timestamp), 'webhook-signature': msg!.signature },
        msg!.body.replace('"partial"', '"succeeded"'),
      ),
      'the signature covers the body',
    );
    t.is(msg!.json.type, 'scrape.run.partial');
    t.is(msg!.json.timestamp, partial.finished_at);
    t.deepEqual(msg!.json.data, {
      run_id: partial.run_id,
      workspace_id: 'hooks',
      kind: 'forum',
      status: 'partial',
      counts: {
        items: partial.items.length,
        billed_units: partial.billing.billed_units,
        billed_reviews: 0,
        problems: 1,
        sources: 1,
        failed_sources: 0,
      },
      created_at: partial.created_at,
      started_at: partial.started_at,
      finished_at: partial.finished_at,
      error: null,
      links: {
        run: `/workspaces/hooks/runs/${partial.run_id}`,
        items: `/workspaces/hooks/runs/${partial.run_id}/items`,
        export: `/workspaces/hooks/runs/${partial.run_id}/export`,
      },
    });
    t.is(partial.items.length, 5);

    // Succeeded: a places run, with its billed items and reviews.
    const ok = await scrape('hooks', 'places', { search_queries: ['hooks 12 places'], max_places: 12 });
    t.is(ok.status, 'succeeded');
    await until(() => forRun(r, ok.run_id).length === 1);
    const okMsg = forRun(r, ok.run_id)[0]!.json;
    t.is(okMsg.type, 'scrape.run.succeeded');
    t.like(okMsg.data, {
      kind: 'places',
      status: 'succeeded',
      counts: {
        items: 12,
        billed_units: 12,
        billed_reviews: ok.billing.billed_reviews,
        problems: 0,
        sources: 1,
        failed_sources: 0,
      },
      error: null,
    });

    // Failed: every source failed (an unexpected Maps document); nothing billed, the error is in the message.
    maps.searchTransform = (q, doc) => (q.includes('bare array') ? [] : doc);
    try {
      const failed = await scrape('hooks', 'places', { search_queries: [`${REAL_QUERY} bare array`] });
      t.is(failed.status, 'failed');
      await until(() => forRun(r, failed.run_id).length === 1);
      const failedMsg = forRun(r, failed.run_id)[0]!.json;
      t.is(failedMsg.type, 'scrape.run.failed');
      t.like(failedMsg.data, {
        status: 'failed',
        counts: { items: 0, billed_units: 0, problems: 1, sources: 1, failed_sources: 1 },
        error: { code: 'unexpected_document' },
      });
    } finally {
      maps.searchTransform = (_q, doc) => doc;
    }

    // Cancelled: an async run cancelled at once (queued: ends at once; running: at its next upstream request).
    reddit.latencyMs = 200;
    try {
      const queued = await api('hooks', 'POST', '/scrapers/forum/runs', { community: 'typescript', max_items: 100 });
      t.is(queued.status, 202);
      const cancel = await api('hooks', 'POST', `/runs/${queued.json.run_id}/cancel`);
      t.is(cancel.status, 202);
      await until(() => forRun(r, queued.json.run_id).length === 1);
      const view = (await api('hooks', 'GET', `/runs/${queued.json.run_id}`)).json;
      t.is(view.status, 'cancelled');
      const cancelled = forRun(r, queued.json.run_id)[0]!.json;
      t.is(cancelled.type, 'scrape.run.cancelled');
      t.like(cancelled.data, {
        status: 'cancelled',
        counts: { items: view.item_count, billed_units: view.billing.billed_units },
      });
    } finally {
      reddit.latencyMs = 0;
    }

    t.is(r.rejected, 0, 'every delivery verified');
    const log = await api('hooks', 'GET', `/webhooks/${webhook.id}/deliveries`);
    t.is(log.status, 200);
    t.is(log.json.deliveries.length, 4, 'one message per run');
    t.true(
      log.json.deliveries.every((a: any) => a.outcome === 'delivered' && a.attempt === 1 && a.status_code === 204),
    );
    t.is((await api('hooks', 'GET', `/webhooks/${webhook.id}`)).json.webhook.pending_messages, 0);
  },
);

test.serial('a receiver that fails first gets the same signed message again on the retry', async (t) => {
  const { r, webhook, secret } = await endpointFor('retry');
  const seen: { id: string; signature: string; timestamp: number }[] = [];
  r.respond = (m) => {
    seen.push({ id: m.id, signature: m.signature, timestamp: m.timestamp });
    return seen.length === 1 ? 503 : 204;
  };
  const run = await scrape('retry', 'forum', { urls: ['https://redd.it/1q2w3e6'], skip_comments: true });
  t.is(run.status, 'succeeded');
  await until(() => forRun(r, run.run_id).length === 1);
  t.is(seen.length, 2, 'one failed attempt, then the delivered retry');
  t.is(seen[0]!.id, `msg_${run.run_id}`);
  t.is(seen[1]!.id, seen[0]!.id, 'the same webhook-id on the retry');
  const msg = forRun(r, run.run_id)[0]!;
  t.true(
    verifyStandardWebhook(
      secret,
      { 'webhook-id': msg.id, 'webhook-timestamp': String(msg.timestamp), 'webhook-signature': msg.signature },
      msg.body,
    ),
  );
  t.is(msg.json.type, 'scrape.run.succeeded');
  t.is(msg.json.data.counts.items, run.items.length);
  const log = (await api('retry', 'GET', `/webhooks/${webhook.id}/deliveries`)).json.deliveries;
  t.deepEqual(
    log.map((a: any) => [a.attempt, a.outcome, a.status_code, a.message_id]),
    [
      [2, 'delivered', 204, msg.id],
      [1, 'failed', 503, msg.id],
    ],
  );
  t.truthy(log[1].next_attempt_at, 'the failed attempt says when it is retried');
  const after = (await api('retry', 'GET', `/webhooks/${webhook.id}`)).json.webhook;
  t.like(after, { failure_streak: 0, pending_messages: 0, enabled: true });
  t.truthy(after.last_failure_at);
});

test.serial(
  'event_types filters: an endpoint for failed runs only gets nothing for a success; the test event still reaches it',
  async (t) => {
    const { r, webhook } = await endpointFor('filtered', { event_types: ['scrape.run.failed'] });
    t.deepEqual(webhook.event_types, ['scrape.run.failed']);
    const ok = await scrape('filtered', 'forum', { urls: ['https://redd.it/1q2w3e6'], skip_comments: true });
    t.is(ok.status, 'succeeded');
    const sent = await api('filtered', 'POST', `/webhooks/${webhook.id}/test`);
    t.is(sent.status, 202);
    // Messages of one endpoint are delivered in order: once the test event is in, a success would have been too.
    await until(() => r.received.some((m) => m.json.type === 'webhook.test'));
    t.deepEqual(
      r.received.map((m) => m.json.type),
      ['webhook.test'],
    );
    const bad = await api('filtered', 'PATCH', `/webhooks/${webhook.id}`, { event_types: ['monitor.person_enter'] });
    t.is(bad.status, 400, "monitor events are not a workspace's");
    const patched = await api('filtered', 'PATCH', `/webhooks/${webhook.id}`, { event_types: [] });
    t.deepEqual(patched.json.webhook.event_types, []);
  },
);

test.serial('a workspace only ever receives its own runs and sees only its own endpoints', async (t) => {
  const mine = await endpointFor('other');
  const hooksList = (await api('hooks', 'GET', '/webhooks')).json.webhooks;
  t.is(hooksList.length, 1);
  const hooksEndpoint = hooksList[0];
  const before = receivers[0]!.received.length;
  // Another workspace's run: only its own receiver hears of it.
  const run = await scrape('other', 'forum', { urls: ['https://redd.it/1q2w3e5'], skip_comments: true });
  t.is(run.status, 'succeeded');
  await until(() => mine.r.received.length === 1);
  // A run of 'hooks' after it: once 'hooks' hears of its run, 'other' would have heard of it too by now if it were sent.
  const own = await scrape('hooks', 'forum', { urls: ['https://redd.it/1q2w3e7'], skip_comments: true });
  await until(() => forRun(receivers[0]!, own.run_id).length === 1);
  // Run messages are queued in the transaction that finalises the run: anything meant for 'other' would be
  // in its delivery log or still pending now.
  const otherLog = (await api('other', 'GET', `/webhooks/${mine.webhook.id}/deliveries`)).json.deliveries;
  t.deepEqual(
    otherLog.map((a: any) => a.message_id),
    [`msg_${run.run_id}`],
  );
  t.is((await api('other', 'GET', `/webhooks/${mine.webhook.id}`)).json.webhook.pending_messages, 0);
  t.deepEqual(
    mine.r.received.map((m) => [m.json.type, m.json.data.workspace_id, m.json.data.run_id]),
    [['scrape.run.succeeded', 'other', run.run_id]],
  );
  t.false(
    receivers[0]!.received.slice(before).some((m) => m.json.data.workspace_id !== 'hooks'),
    "hooks never receives another workspace's run",
  );
  for (const [i, r] of receivers.entries()) {
    const wss = new Set(r.received.filter((m) => m.json.type !== 'webhook.test').map((m) => m.json.data.workspace_id));
    t.true(wss.size <= 1, `receiver ${i} got runs of one workspace only`);
  }

  // Endpoints are the workspace's: another workspace's key, another workspace's path and the admin API see none of them.
  t.is((await api('other', 'GET', `/webhooks/${hooksEndpoint.id}`)).json.error.code, 'webhook_not_found');
  t.is(
    (await api('other', 'PATCH', `/webhooks/${hooksEndpoint.id}`, { enabled: false })).json.error.code,
    'webhook_not_found',
  );
  t.is((await api('other', 'DELETE', `/webhooks/${hooksEndpoint.id}`)).status, 404);
  t.is(
    (await call(d, 'GET', '/workspaces/hooks/webhooks', undefined, auth('other'))).json.error.code,
    'workspace_not_found',
  );
  t.is((await call(d, 'GET', '/workspaces/hooks/webhooks', undefined, {})).status, 401);
  t.deepEqual(
    (await api('other', 'GET', '/webhooks')).json.webhooks.map((w: any) => w.id),
    [mine.webhook.id],
  );
  const admin = await call(d, 'GET', '/v1/webhooks');
  t.false(
    admin.json.webhooks.some((w: any) => w.id === hooksEndpoint.id || w.id === mine.webhook.id),
    'admin endpoints are another scope',
  );
  t.is((await call(d, 'GET', `/v1/webhooks/${hooksEndpoint.id}`)).json.error.code, 'webhook_not_found');

  // Deleting an endpoint stops its deliveries.
  t.is((await api('other', 'DELETE', `/webhooks/${mine.webhook.id}`)).status, 204);
  t.is((await api('other', 'GET', `/webhooks/${mine.webhook.id}`)).status, 404);
});

test.serial('a workspace may register [webhooks] max_endpoints_per_workspace endpoints', async (t) => {
  const make = () => api('limits', 'POST', '/webhooks', { url: 'http://127.0.0.1:9/none' });
  t.is((await make()).status, 201);
  const second = await make();
  t.is(second.status, 201);
  const third = await make();
  t.is(third.status, 409);
  t.like(third.json.error, { code: 'webhook_limit_reached', details: { limit: 2 } });
  t.is((await api('limits', 'DELETE', `/webhooks/${second.json.webhook.id}`)).status, 204);
  t.is((await make()).status, 201, 'room again after a delete');
  t.is(
    (await call(d, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/admin' })).status,
    201,
    'the admin endpoints are not bounded by it',
  );
});

test.serial(
  'a run that ends while its receiver is down is delivered after a restart (the outbox row is written with the run)',
  async (t) => {
    const dir = tempDir(t, 'vigil-runhooks-');
    const toml = `[scrapers]\nfree_items_per_month = 100\n${reddit.toml()}\n[webhooks]\nfirst_retry_seconds = 0.2\nmax_retry_delay_seconds = 0.5`;
    let first: TestDaemon | null = await startTestDaemon({ dir, toml });
    let second: TestDaemon | null = null;
    const r = await startReceiver();
    receivers.push(r);
    try {
      await first.runtime.workspaces.create({ id: 'durable', name: 'durable' });
      const key = { Authorization: `Bearer ${(await first.runtime.workspaces.createKey('durable')).token}` };
      const created = await call(first, 'POST', '/workspaces/durable/webhooks', { url: r.url }, key);
      r.secret = created.json.secret;
      await r.down();
      const run = (
        await call(
          first,
          'POST',
          '/workspaces/durable/scrapers/forum/scrape',
          { urls: ['https://redd.it/1q2w3e6'], skip_comments: true },
          key,
        )
      ).json;
      t.is(run.status, 'succeeded');
      await until(
        async () =>
          (
            await call(
              first!,
              'GET',
              `/workspaces/durable/webhooks/${created.json.webhook.id}/deliveries`,
              undefined,
              key,
            )
          ).json.deliveries.length >= 1,
      );
      await first.close();
      first = null;
      await r.up();
      second = await startTestDaemon({ dir, toml });
      await until(() => forRun(r, run.run_id).length === 1);
      const msg = forRun(r, run.run_id)[0]!;
      t.is(msg.id, `msg_${run.run_id}`);
      t.like(msg.json, {
        type: 'scrape.run.succeeded',
        data: { workspace_id: 'durable', counts: { items: run.items.length } },
      });
      t.is(r.rejected, 0);
    } finally {
      await first?.close();
      await second?.close();
    }
  },
);

test('the OpenAPI document lists the workspace webhook routes and the run webhook payloads', async (t) => {
  const doc = (await (await fetch(`${d.url}/openapi.json`)).json()) as any;
  t.truthy(doc.paths['/workspaces/{workspace_id}/webhooks'].post);
  t.truthy(doc.paths['/workspaces/{workspace_id}/webhooks/{webhook_id}'].patch);
  t.deepEqual(Object.keys(doc.webhooks).sort(), [
    'scrape.run.cancelled',
    'scrape.run.failed',
    'scrape.run.partial',
    'scrape.run.succeeded',
  ]);
  t.is(
    doc.webhooks['scrape.run.partial'].post.requestBody.content['application/json'].schema.$ref,
    '#/components/schemas/ScrapeRunWebhookPayload',
  );
  t.truthy(doc.components.schemas.ScrapeRunWebhookData.properties.counts);
});
