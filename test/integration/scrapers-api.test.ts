import test from 'ava';
import { getPriority } from 'node:os';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { FakeReddit } from '../helpers/fakeReddit.js';

let fake: FakeReddit;
let d: TestDaemon;
const keys: Record<string, string> = {};
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

test.before(async () => {
  fake = await FakeReddit.start();
  d = await startTestDaemon({
    toml: `[scrapers]\nfree_items_per_month = 500\nmax_concurrent_runs = 2\n${fake.toml()}`,
  });
  for (const [id, quota] of [
    ['acme', null],
    ['globex', null],
    ['small', 5],
    ['race', 12],
    ['billing', null],
    ['lister', null],
  ] as const) {
    await d.runtime.workspaces.create({ id, name: id, monthlyItemQuota: quota });
    keys[id] = (await d.runtime.workspaces.createKey(id)).token;
  }
});
test.after.always(async () => {
  await d?.close();
  await fake?.close();
});

const scrape = (ws: string, body: unknown, token = keys[ws]!) =>
  call(d, 'POST', `/workspaces/${ws}/scrapers/forum/scrape`, body, bearer(token));
const usage = async (ws: string) =>
  (await call(d, 'GET', `/workspaces/${ws}/usage`, undefined, bearer(keys[ws]!))).json;

test('workspace keys: required, scoped to their own workspace (404, never data), revocable; the admin key does not open workspaces', async (t) => {
  const body = { community: 'typescript', max_items: 1 };
  const none = await call(d, 'POST', '/workspaces/acme/scrapers/forum/scrape', body, {});
  t.is(none.status, 401);
  t.is(none.res.headers.get('www-authenticate'), 'Bearer');
  t.is((await scrape('acme', body, d.key)).status, 401, 'the face admin key is not a workspace key');
  t.is((await scrape('acme', body, 'vgl_not-a-real-key')).status, 401);
  const foreign = await call(d, 'GET', '/workspaces/acme/usage', undefined, bearer(keys.globex!));
  t.is(foreign.status, 404);
  t.is(foreign.json.error.code, 'workspace_not_found');
  t.is(
    (await call(d, 'GET', '/workspaces/nope/usage', undefined, bearer(keys.globex!))).json.error.code,
    'workspace_not_found',
    'same answer as a missing workspace',
  );
  const own = await scrape('acme', body);
  t.is(own.status, 200);
  t.is(
    (await call(d, 'GET', `/workspaces/globex/runs/${own.json.run_id}`, undefined, bearer(keys.globex!))).status,
    404,
  );
  t.is((await call(d, 'GET', `/workspaces/acme/runs/${own.json.run_id}`, undefined, bearer(keys.acme!))).status, 200);
  const { key, token } = await d.runtime.workspaces.createKey('globex', 'temp');
  t.is((await call(d, 'GET', '/workspaces/globex/usage', undefined, bearer(token))).status, 200);
  await d.runtime.workspaces.revokeKey(key.id);
  t.is((await call(d, 'GET', '/workspaces/globex/usage', undefined, bearer(token))).status, 401);
});

test('strict body validation in the /v1 envelope', async (t) => {
  for (const [body, code, re] of [
    [{}, 'invalid_request', /at least one source/],
    [{ community: 'typescript', max_items: 500 }, 'invalid_request', /max_items/],
    [{ community: 'typescript', extra: 1 }, 'invalid_request', /unknown field/],
    [{ urls: Array.from({ length: 21 }, (_, i) => `https://redd.it/a${i}`) }, 'invalid_request', /urls/],
    [{ urls: ['https://www.reddit.com/r/typescript'], sort: 'relevance' }, 'unsupported_sort', /searches only/],
    [{ urls: ['https://example.com/x'] }, 'unsupported_url', /not a reddit.com URL/],
  ] as const) {
    const r = await scrape('acme', body);
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.json.error.code, code);
    t.regex(r.json.error.message, re);
    t.regex(r.json.request_id, /^[0-9a-f-]{36}$/);
  }
  const notJson = await call(d, 'POST', '/workspaces/acme/scrapers/forum/scrape', undefined, {
    ...bearer(keys.acme!),
    'content-type': 'text/plain',
  });
  t.is(notJson.status, 400);
});

test('a synchronous scrape returns the items, per-source report and billing; usage equals the returned items', async (t) => {
  const before = await usage('billing');
  const r = await scrape('billing', {
    urls: ['https://www.reddit.com/r/typescript/new', 'https://www.reddit.com/r/private_sub'],
    max_items: 100,
  });
  t.is(r.status, 200);
  t.is(r.json.status, 'partial');
  t.is(r.json.items.length, 10);
  t.is(new Set(r.json.items.map((i: any) => i.id)).size, 10);
  t.deepEqual(
    r.json.sources.map((s: any) => [s.status, s.items, s.problem?.code]),
    [
      ['ok', 10, undefined],
      ['failed', 0, 'community_private'],
    ],
  );
  t.like(r.json.billing, { billed_units: 10, quota: 500 });
  t.is(r.json.item_count, 10);
  const after = await usage('billing');
  t.is(after.used - before.used, 10);
  t.is(after.by_kind.forum.units, after.used);
  t.is(after.reserved, 0);
  // A run whose every source failed is failed and bills nothing.
  const failed = await scrape('billing', { urls: ['https://www.reddit.com/r/banned_sub'] });
  t.is(failed.json.status, 'failed');
  t.is(failed.json.error.code, 'community_banned');
  t.is(failed.json.billing.billed_units, 0);
  t.is((await usage('billing')).used, after.used);
  // Duplicates across sources are billed once.
  const dup = await scrape('billing', {
    urls: ['https://redd.it/1q2w3e5', 'https://www.reddit.com/comments/1q2w3e5'],
    max_items: 10,
  });
  t.is(dup.json.items.length, 1);
  t.is(dup.json.billing.billed_units, 1);
});

test('quota: a run is cut at the quota and says so; the next one is refused up front', async (t) => {
  const r = await scrape('small', { community: 'typescript', max_items: 25 });
  t.is(r.status, 200);
  t.is(r.json.items.length, 5);
  t.true(r.json.truncated_by_quota);
  t.false(r.json.truncated_by_max_items);
  t.like(r.json.billing, { billed_units: 5, quota: 5, used: 5, remaining: 0 });
  const refused = await scrape('small', { community: 'typescript', max_items: 1 });
  t.is(refused.status, 429);
  t.is(refused.json.error.code, 'quota_exceeded');
  t.like(refused.json.error.details, { quota: 5, used: 5 });
});

test('concurrent runs reserve quota up front and never exceed or double-count it', async (t) => {
  const posts = await Promise.all(
    Array.from({ length: 4 }, () =>
      call(
        d,
        'POST',
        '/workspaces/race/scrapers/forum/runs',
        { community: 'typescript', max_items: 5 },
        bearer(keys.race!),
      ),
    ),
  );
  const accepted = posts.filter((p) => p.status === 202);
  t.is(accepted.length, 3, '5 + 5 + 2 reserved of 12; the fourth is refused');
  t.is(posts.find((p) => p.status !== 202)!.json.error.code, 'quota_exceeded');
  const finals = await Promise.all(
    accepted.map(async (p) => {
      for (;;) {
        const r = await call(d, 'GET', p.res.headers.get('location')!, undefined, bearer(keys.race!));
        if (!['queued', 'running'].includes(r.json.status)) return r.json;
        await new Promise((res) => setTimeout(res, 50));
      }
    }),
  );
  const billed = finals.reduce((s, f) => s + f.billing.billed_units, 0);
  t.is(
    billed,
    finals.reduce((s, f) => s + f.items.length, 0),
  );
  t.is(billed, 12);
  const u = await usage('race');
  t.like(u, { used: 12, reserved: 0, remaining: 0 });
  t.is(u.by_kind.forum.runs, 3);
});

test('async run: 202 + Location, then the run resource; runs list and the worker runs at a lower priority', async (t) => {
  const r = await call(
    d,
    'POST',
    '/workspaces/lister/scrapers/forum/runs',
    { search_queries: ['strict'], search_types: ['community', 'user'] },
    bearer(keys.lister!),
  );
  t.is(r.status, 202);
  t.regex(r.res.headers.get('location')!, /^\/workspaces\/lister\/runs\/run_[0-9a-f]{32}$/);
  t.true(['queued', 'running'].includes(r.json.status));
  // Returns as soon as the run ends; the cap only matters on a starved machine (the worker runs at nice 19).
  const done = await d.runtime.scrapes.wait(r.json.run_id, 60_000);
  t.is(done!.status, 'succeeded');
  const got = await call(d, 'GET', r.res.headers.get('location')!, undefined, bearer(keys.lister!));
  t.deepEqual(
    got.json.items.map((i: any) => i.dataType),
    ['community', 'user'],
  );
  await scrape('lister', { urls: ['https://redd.it/1q2w3e5'] });
  const list = await call(d, 'GET', '/workspaces/lister/runs?limit=1', undefined, bearer(keys.lister!));
  t.is(list.json.runs.length, 1);
  t.not(list.json.runs[0].run_id, r.json.run_id, 'newest first');
  t.is(list.json.runs[0].items, undefined);
  const next = await call(
    d,
    'GET',
    `/workspaces/lister/runs?limit=1&before=${list.json.next_before}`,
    undefined,
    bearer(keys.lister!),
  );
  t.is(next.json.runs[0].run_id, r.json.run_id);
  t.is(next.json.next_before, null);
  const pid = d.runtime.scrapes.worker.pid!;
  t.is(getPriority(pid), 19);
  t.not(pid, process.pid);
});
