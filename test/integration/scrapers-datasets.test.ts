import test from 'ava';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startScraperDaemon, type ScraperDaemon } from '../helpers/scraperDaemon.js';
import { FakeMaps } from '../helpers/fakeMaps.js';
import { FakeReddit, fixture } from '../helpers/fakeReddit.js';
import { csvColumns } from '../../src/scrapers/datasetExport.js';
import { PlaceItem } from '../../src/scrapers/places/items.js';

/** Runs as datasets: cursor-paged items, streamed exports, retention, cancellation, incremental runs. */
let reddit: FakeReddit;
let maps: FakeMaps;
let d: TestDaemon;
const keys: Record<string, string> = {};
const WORKSPACES = ['pages', 'other', 'export', 'retain', 'cancel', 'fresh', 'thread', 'long'];

let fakes: ScraperDaemon;
test.before(async () => {
  fakes = await startScraperDaemon({
    workspaces: WORKSPACES,
    scrapers: 'free_items_per_month = 2000\nmax_concurrent_runs = 1',
  });
  ({ d, reddit, maps } = fakes);
  Object.assign(keys, fakes.keys);
});
test.after.always(async () => {
  await fakes?.close();
});

const auth = (ws: string) => ({ Authorization: `Bearer ${keys[ws]!}` });
const get = (ws: string, path: string) => call(d, 'GET', `/workspaces/${ws}${path}`, undefined, auth(ws));
const scrape = async (ws: string, kind: string, body: unknown) =>
  (await call(d, 'POST', `/workspaces/${ws}/scrapers/${kind}/scrape`, body, auth(ws))).json;
const usage = async (ws: string) => (await get(ws, '/usage')).json;
const until = async (f: () => boolean | Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

test.serial('items are paged with a signed cursor bound to the run', async (t) => {
  const run = await scrape('pages', 'places', { search_queries: ['pages 45 places'], max_places: 45 });
  t.is(run.items.length, 45);
  const seen: any[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page = await get(
      'pages',
      `/runs/${run.run_id}/items?limit=20${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    t.is(page.status, 200);
    t.is(page.json.status, 'succeeded');
    seen.push(...page.json.items);
    cursor = page.json.next_cursor;
    pages++;
  } while (cursor);
  t.is(pages, 3);
  t.deepEqual(seen, run.items, 'the same items, in delivery order');
  const first = (await get('pages', `/runs/${run.run_id}/items?limit=20`)).json;
  const other = await scrape('pages', 'places', { search_queries: ['pages 3 places'] });
  const replayed = await get('pages', `/runs/${other.run_id}/items?cursor=${encodeURIComponent(first.next_cursor)}`);
  t.is(replayed.status, 400, 'a cursor of another run');
  t.is(replayed.json.error.code, 'invalid_cursor');
  const tampered = `${first.next_cursor.slice(0, -2)}${first.next_cursor.endsWith('A') ? 'B' : 'A'}A`;
  t.is(
    (await get('pages', `/runs/${run.run_id}/items?cursor=${encodeURIComponent(tampered)}`)).json.error.code,
    'invalid_cursor',
  );
  t.is((await get('pages', `/runs/${run.run_id}/items?limit=5000`)).status, 400);
  t.is(
    (await call(d, 'GET', `/workspaces/other/runs/${run.run_id}/items`, undefined, auth('other'))).json.error.code,
    'run_not_found',
  );
  t.regex(run.items_expire_at, /^\d{4}-/);
  t.true(Date.parse(run.items_expire_at) - Date.parse(run.finished_at) === 48 * 3600_000);
});

test.serial('exports stream JSON, JSON Lines and CSV with the documented flattened columns', async (t) => {
  const run = await scrape('export', 'places', { search_queries: ['export 45 places'], max_places: 45 });
  const base = `${d.url}/workspaces/export/runs/${run.run_id}/export`;
  const json = await fetch(`${base}?format=json`, { headers: auth('export') });
  t.is(json.status, 200);
  t.regex(json.headers.get('content-type')!, /^application\/json/);
  t.is(json.headers.get('content-disposition'), `attachment; filename="${run.run_id}.json"`);
  t.is(json.headers.get('content-length'), null, 'streamed (chunked), not buffered with a length');
  t.deepEqual(await json.json(), run.items);
  const jsonl = await (await fetch(`${base}?format=jsonl`, { headers: auth('export') })).text();
  t.deepEqual(
    jsonl
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l)),
    run.items,
  );
  const csvRes = await fetch(`${base}?format=csv`, { headers: auth('export') });
  t.regex(csvRes.headers.get('content-type')!, /^text\/csv/);
  const lines = (await csvRes.text()).trimEnd().split('\r\n');
  const header = lines[0]!.split(',');
  t.deepEqual(header, csvColumns(PlaceItem));
  t.true(
    header.includes('location.lat') && header.includes('reviewsDistribution.fiveStar') && header.includes('reviews'),
  );
  t.is(lines.length, 46);
  const first = lines[1]!;
  t.true(first.startsWith(`"${run.items[0].title}"`) || first.startsWith(run.items[0].title));
  t.true(first.includes(String(run.items[0].location.lat)));
  t.true(first.includes('"[""Coffee shop"",""Cafe""]"'), 'arrays are one cell of JSON');
  t.is((await fetch(`${base}?format=xml`, { headers: auth('export') })).status, 400);
  // The forum's dataTypes share one header: every field of every dataType.
  const forum = await scrape('export', 'forum', { urls: ['https://redd.it/1q2w3e4'] });
  const forumCsv = (
    await (
      await fetch(`${d.url}/workspaces/export/runs/${forum.run_id}/export?format=csv`, { headers: auth('export') })
    ).text()
  )
    .trimEnd()
    .split('\r\n');
  t.true(forumCsv[0]!.startsWith('dataType,id,url,createdAt,scrapedAt,'));
  t.is(forumCsv.length, 1 + forum.items.length);
});

test.serial(
  'retention: items are deleted after the period; counts, sources and billing stay, and items answer 410',
  async (t) => {
    const run = await scrape('retain', 'forum', { urls: ['https://redd.it/1q2w3e5'] });
    t.is(run.items.length, 1);
    t.is((await d.runtime.scrapes.store.purgeResults(new Date(Date.now() + 60_000))) >= 1, true);
    const view = (await get('retain', `/runs/${run.run_id}`)).json;
    t.true(view.result_purged);
    t.is(view.items, undefined);
    t.is(view.item_count, 1);
    t.is(view.sources.length, 1);
    t.is(view.billing.billed_units, 1);
    const items = await get('retain', `/runs/${run.run_id}/items`);
    t.is(items.status, 410);
    t.is(items.json.error.code, 'run_items_purged');
    t.is((await get('retain', `/runs/${run.run_id}/export?format=csv`)).status, 410);
  },
);

test.serial(
  'cancel: a queued run ends at once, billed nothing; a running one stops at its next request and bills only what it delivered',
  async (t) => {
    reddit.latencyMs = 250;
    const start = reddit.requests.length;
    try {
      const a = await call(
        d,
        'POST',
        '/workspaces/cancel/scrapers/forum/runs',
        { community: 'typescript', max_items: 50 },
        auth('cancel'),
      );
      const b = await call(
        d,
        'POST',
        '/workspaces/cancel/scrapers/forum/runs',
        { community: 'typescript', max_items: 50 },
        auth('cancel'),
      );
      t.like(await usage('cancel'), { reserved: 100 });
      const queued = await call(
        d,
        'POST',
        `/workspaces/cancel/runs/${b.json.run_id}/cancel`,
        undefined,
        auth('cancel'),
      );
      t.is(queued.status, 202);
      t.like(queued.json, { status: 'cancelled', item_count: 0, billing: { billed_units: 0 } });
      await until(async () => (await d.runtime.scrapes.store.byId(a.json.run_id))!.status === 'running');
      await until(() => reddit.requests.slice(start).some((r) => r.path.startsWith('/comments/')));
      const before = reddit.requests.length;
      const running = await call(
        d,
        'POST',
        `/workspaces/cancel/runs/${a.json.run_id}/cancel`,
        undefined,
        auth('cancel'),
      );
      t.is(running.status, 202);
      t.true(running.json.cancel_requested);
      const done = await d.runtime.scrapes.wait(a.json.run_id, 10_000);
      t.is(done!.status, 'cancelled');
      t.true(reddit.requests.length - before <= 1, 'at most the request in flight');
      const view = (await get('cancel', `/runs/${a.json.run_id}`)).json;
      t.true(view.items.length >= 1 && view.items.length < 10, `delivered before the cancel: ${view.items.length}`);
      t.is(view.billing.billed_units, view.items.length);
      t.true(view.sources.every((s: any) => s.stop_reason === 'cancelled'));
      t.like(await usage('cancel'), { used: view.items.length, reserved: 0 });
      const again = await call(d, 'POST', `/workspaces/cancel/runs/${a.json.run_id}/cancel`, undefined, auth('cancel'));
      t.is(again.status, 202, 'cancelling a cancelled run is a no-op');
    } finally {
      reddit.latencyMs = 0;
    }
    const finished = await scrape('cancel', 'forum', { urls: ['https://redd.it/1q2w3e5'] });
    const late = await call(d, 'POST', `/workspaces/cancel/runs/${finished.run_id}/cancel`, undefined, auth('cancel'));
    t.is(late.status, 409);
    t.like(late.json.error, { code: 'run_not_active', details: { status: 'succeeded' } });
  },
);

test.serial('only_new: items delivered to the workspace before are not delivered or billed again', async (t) => {
  const first = await scrape('fresh', 'forum', { community: 'typescript' });
  t.is(first.items.length, 10);
  const again = await scrape('fresh', 'forum', { community: 'typescript', only_new: true });
  t.is(again.status, 'succeeded');
  t.deepEqual(again.items, []);
  t.is(again.billing.billed_units, 0);
  t.is(again.sources[0].filtered.seen, 5, 'the community and its 4 posts (threads of seen posts are not re-read)');
  reddit.transform = (path, q, doc) => {
    if (path !== '/r/typescript/new' || q.get('after')) return doc;
    const post = structuredClone(doc.data.children[1]);
    Object.assign(post.data, {
      id: 'nw1p0st',
      name: 't3_nw1p0st',
      permalink: '/r/typescript/comments/nw1p0st/fresh/',
      num_comments: 0,
      title: 'Fresh post',
    });
    return { ...doc, data: { ...doc.data, children: [post, ...doc.data.children] } };
  };
  try {
    const incremental = await scrape('fresh', 'forum', { community: 'typescript', only_new: true });
    t.deepEqual(
      incremental.items.map((i: any) => i.id),
      ['t3_nw1p0st'],
    );
    t.is(incremental.billing.billed_units, 1);
    const u = await usage('fresh');
    t.is(u.used, 11);
    t.is(u.seen_items.by_kind.forum, 11);
  } finally {
    reddit.transform = (_p, _q, doc) => doc;
  }
});

test.serial('only_new on a post URL re-reads its thread and delivers only the new comments', async (t) => {
  const first = await scrape('thread', 'forum', { urls: ['https://redd.it/1q2w3e4'] });
  t.is(first.items.length, 6);
  reddit.transform = (path, _q, doc) => {
    if (path !== '/comments/1q2w3e4') return doc;
    const reply = structuredClone(doc[1].data.children[1]);
    Object.assign(reply.data, {
      id: 'kq5e',
      name: 't1_kq5e',
      body: 'A new comment.',
      permalink: '/r/typescript/comments/1q2w3e4/x/kq5e/',
    });
    doc[1].data.children.push(reply);
    return doc;
  };
  try {
    const next = await scrape('thread', 'forum', { urls: ['https://redd.it/1q2w3e4'], only_new: true });
    t.deepEqual(
      next.items.map((i: any) => i.id),
      ['t1_kq5e'],
    );
    t.is(next.billing.billed_units, 1);
    t.is(next.sources[0].filtered.seen, 6);
  } finally {
    reddit.transform = (_p, _q, doc) => doc;
  }
  t.is(fixture('comments_1q2w3e4.json')[1].data.children.length, 2, 'the fixture itself is untouched');
});

test.serial(
  '37.8 only_new on a long thread: each run delivers the next unseen comments, behind "more" and "continue" stubs too',
  async (t) => {
    // 470 comments: 20 chains shown down to depth 2 (their last 2 replies behind "continue this thread"), the
    // other 74 chains behind one "load more comments" stub.
    const all = reddit.longThread('l0ngthr', { topLevel: 94, chain: 4, shownTopLevel: 20, shownDepth: 2 });
    t.is(all.length, 470);
    const body = { urls: ['https://www.reddit.com/r/typescript/comments/l0ngthr/long_thread/'], max_items: 100 };
    const first = await scrape('long', 'forum', body);
    t.is(first.items.length, 100);
    const delivered = new Set<string>(first.items.map((i: any) => i.id));
    const counts: number[] = [];
    for (let i = 0; i < 5; i++) {
      const run = await scrape('long', 'forum', { ...body, only_new: true });
      t.is(run.status, 'succeeded');
      counts.push(run.items.length);
      for (const item of run.items) {
        t.false(delivered.has(item.id), `${item.id} was delivered before`);
        delivered.add(item.id);
      }
    }
    // Before: 1, 0, 0, 0, 0 (every run re-read the first 100 comments of the thread and stopped there).
    t.deepEqual(counts, [100, 100, 100, 71, 0]);
    t.deepEqual(
      [...delivered].filter((id) => id.startsWith('t1_')).sort(),
      [...all].sort(),
      'every comment of the thread, once',
    );
    const u = await usage('long');
    t.is(u.used, 471);
  },
);

test.serial(
  'the seen-set is bounded: past seen_items_per_kind the least recently delivered keys are forgotten (and can be billed again)',
  async (t) => {
    const dd = await startTestDaemon({ toml: `[scrapers]\nseen_items_per_kind = 100\n${maps.toml()}` });
    try {
      await dd.runtime.workspaces.create({ id: 'bound', name: 'bound' });
      const h = { Authorization: `Bearer ${(await dd.runtime.workspaces.createKey('bound')).token}` };
      const body = { search_queries: ['bound 150 places'], max_places: 150 };
      const first = (await call(dd, 'POST', '/workspaces/bound/scrapers/places/scrape', body, h)).json;
      t.is(first.items.length, 150);
      const u = (await call(dd, 'GET', '/workspaces/bound/usage', undefined, h)).json;
      t.deepEqual(u.seen_items, { by_kind: { places: 100 }, capacity_per_kind: 100 });
      const again = (await call(dd, 'POST', '/workspaces/bound/scrapers/places/scrape', { ...body, only_new: true }, h))
        .json;
      t.is(again.items.length, 50, 'the 50 forgotten keys are new again');
      t.is(again.sources[0].filtered.seen, 100);
      t.is(again.billing.billed_units, 50);
    } finally {
      await dd.close();
    }
  },
);
