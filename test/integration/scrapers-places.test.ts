import test from 'ava';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { BLUE_FERN, BLUE_FERN_URL, FakeMaps, REAL_QUERY, SOURDOUGH } from '../helpers/fakeMaps.js';

let fake: FakeMaps;
let d: TestDaemon;
const keys: Record<string, string> = {};
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const WORKSPACES = ['val', 'paging', 'real', 'details', 'rev', 'lim', 'blocks', 'trunc', 'quota', 'retry'];

test.before(async () => {
  fake = await FakeMaps.start();
  d = await startTestDaemon({
    toml: `[scrapers]\nfree_items_per_month = 500\nfree_reviews_per_month = 4\n${fake.toml()}`,
  });
  for (const id of WORKSPACES) {
    await d.runtime.workspaces.create({ id, name: id, monthlyItemQuota: id === 'quota' ? 3 : null });
    keys[id] = (await d.runtime.workspaces.createKey(id)).token;
  }
});
test.after.always(async () => {
  await d?.close();
  await fake?.close();
});

const scrape = (ws: string, body: unknown) =>
  call(d, 'POST', `/workspaces/${ws}/scrapers/places/scrape`, body, bearer(keys[ws]!));
const usage = async (ws: string) =>
  (await call(d, 'GET', `/workspaces/${ws}/usage`, undefined, bearer(keys[ws]!))).json;
const searches = (q: string) => fake.requests.filter((r) => r.path === '/search' && r.query.get('q') === q);

test('strict validation in the envelope: sources, bounds, place ids, URL kinds', async (t) => {
  for (const [body, code, re] of [
    [{}, 'invalid_request', /at least one source/],
    [{ search_queries: ['x'], max_places: 1001 }, 'invalid_request', /max_places/],
    [{ search_queries: ['x'], max_reviews: 100_001 }, 'invalid_request', /max_reviews/],
    [{ place_ids: ['abc'] }, 'invalid_request', /place id/],
    [{ search_queries: ['x'], language: 'English' }, 'invalid_request', /language/],
    [{ search_queries: ['x'], maxPlaces: 3 }, 'invalid_request', /unknown field/],
    [
      { urls: Array.from({ length: 21 }, (_, i) => `https://www.google.com/maps/search/q${i}`) },
      'invalid_request',
      /urls/,
    ],
    [{ urls: ['https://example.com/maps/place/x'] }, 'unsupported_url', /not a Google Maps URL/],
    [{ urls: ['https://maps.app.goo.gl/x1'] }, 'unsupported_url', /short links/],
  ] as const) {
    const r = await scrape('val', body);
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.json.error.code, code);
    t.regex(r.json.error.message, re);
  }
  t.is((await call(d, 'POST', '/workspaces/val/scrapers/places/scrape', { search_queries: ['x'] }, {})).status, 401);
  t.is((await usage('val')).reserved, 0, 'a refused request reserves nothing');
});

test('search paging: !8i offsets until max_places, ranks across pages, one unit per place', async (t) => {
  const q = 'bakery 45 places';
  const r = await scrape('paging', { search_queries: [q], max_places: 45 });
  t.is(r.status, 200);
  t.is(r.json.status, 'succeeded');
  t.is(r.json.items.length, 45);
  t.deepEqual(
    r.json.items.map((i: any) => i.rank),
    Array.from({ length: 45 }, (_, i) => i + 1),
  );
  t.true(
    r.json.items.every((i: any) => i.searchString === q && i.language === 'en' && typeof i.scrapedAt === 'string'),
  );
  t.is(new Set(r.json.items.map((i: any) => i.fid)).size, 45);
  t.deepEqual(
    searches(q).map((s) => /!8i(\d+)/.exec(s.query.get('pb')!)![1]),
    ['0', '20', '40'],
  );
  t.like(r.json.billing, { billed_units: 45, billed_reviews: 0 });
  t.deepEqual(r.json.sources, [
    { source: `search:${q}`, status: 'ok', items: 45, filtered: {}, problems: [], stop_reason: 'max_items' },
  ]);
  // max_places stops paging early; the upstream's end (a short page) stops it too.
  const q2 = 'bakery 60 places';
  const cut = await scrape('paging', { search_queries: [q2], max_places: 25 });
  t.is(cut.json.items.length, 25);
  t.true(cut.json.truncated_by_max_items);
  t.is(searches(q2).length, 2);
  const q3 = 'bakery 7 places';
  const end = await scrape('paging', { search_queries: [q3], max_places: 100 });
  t.is(end.json.items.length, 7);
  t.false(end.json.truncated_by_max_items);
  t.is(searches(q3).length, 1);
  const u = await usage('paging');
  t.like(u, { used: 77, reserved: 0 });
  t.like(u.by_kind.places, { units: 77, runs: 3, reviews: 0 });
});

test('the real payload: nulls where the upstream has nothing, closed places, dedupe across queries, URLs and place ids', async (t) => {
  const r = await scrape('real', {
    search_queries: [REAL_QUERY, `${REAL_QUERY} again`],
    urls: [BLUE_FERN_URL],
    place_ids: [SOURDOUGH.placeId],
    max_places: 50,
    language: 'de',
  });
  t.is(r.json.status, 'succeeded');
  t.is(r.json.items.length, 2);
  const [fern, lab] = r.json.items;
  t.like(fern, {
    title: 'Blue Fern Coffee',
    website: 'https://bluefern.example/',
    permanentlyClosed: false,
    cid: BLUE_FERN.cid,
    placeId: BLUE_FERN.placeId,
    rank: 1,
    searchString: REAL_QUERY,
    language: 'de',
  });
  t.like(lab, { title: 'Sourdough Lab', permanentlyClosed: true, rank: 2 });
  t.true('website' in lab);
  t.is(lab.website, null, 'no website is exactly null (a lead signal)');
  t.is(fern.openingHours, null, 'details only when asked for');
  t.deepEqual(
    r.json.sources.map((s: any) => [s.status, s.items, s.filtered]),
    [
      ['ok', 2, {}],
      ['ok', 0, { duplicate: 2 }],
      ['ok', 0, { duplicate: 1 }],
      ['ok', 0, { duplicate: 1 }],
    ],
  );
  t.is(r.json.billing.billed_units, 2, 'duplicates are billed once');
  t.true(
    searches(REAL_QUERY).some((x) => x.query.get('hl') === 'de'),
    'language goes out as hl=',
  );
  // The XHR-wrapped variant of the same payload gives the same places.
  const xhr = await scrape('real', { search_queries: ['xhr coffee'] });
  t.deepEqual(
    xhr.json.items.map((i: any) => i.title),
    ['Blue Fern Coffee', 'Sourdough Lab'],
  );
});

test('details: include_details re-reads each result; place pages, cid URLs and place ids parse APP_INITIALIZATION_STATE / preview JSON', async (t) => {
  const r = await scrape('details', { search_queries: [REAL_QUERY], include_details: true, language: 'fr' });
  t.is(
    fake.requests.filter((x) => x.path === '/maps/preview/place' && x.query.get('hl') === 'fr').length,
    2,
    'one preview per result',
  );
  const [fern] = r.json.items;
  t.deepEqual(fern.openingHours[0], { day: 'Monday', hours: '7 am–6 pm' });
  t.is(fern.popularTimes.length, 2);
  t.like(fern, {
    phoneInternational: '+1 415-555-0100',
    ownerName: 'Blue Fern Coffee (Owner)',
    rank: 1,
    searchString: REAL_QUERY,
  });
  const page = await scrape('details', {
    urls: [
      BLUE_FERN_URL,
      'https://www.google.com/maps?cid=1885667171979194497',
      `https://www.google.com/maps/place/Sourdough+Lab/data=!4m2!3m1!1s${SOURDOUGH.fid}`,
    ],
    include_details: true,
  });
  t.is(page.json.items.length, 2, 'the cid URL is the same place as the place URL');
  t.like(page.json.items[0], {
    title: 'Blue Fern Coffee',
    cid: BLUE_FERN.cid,
    kgmid: '/g/11fake0001',
    rank: null,
    searchString: null,
  });
  t.is(page.json.items[0].openingHours.length, 3);
  t.like(page.json.items[1], { title: 'Sourdough Lab', permanentlyClosed: true, website: null });
  t.deepEqual(
    page.json.sources.map((s: any) => s.filtered),
    [{}, { duplicate: 1 }, {}],
  );
  const missing = await scrape('details', { place_ids: ['ChIJdoesNotExist00000000000'] });
  t.is(missing.json.status, 'failed');
  t.is(missing.json.error.code, 'not_found');
  t.is(missing.json.billing.billed_units, 0);
});

test('missing indexes: a shortened and a hollowed-out place array still map, with nulls', async (t) => {
  const r = await scrape('details', { search_queries: [`${REAL_QUERY} missing`] });
  t.is(r.json.status, 'succeeded');
  const [a, b] = r.json.items;
  t.like(a, {
    title: 'Blue Fern Coffee',
    fid: BLUE_FERN.fid,
    cid: BLUE_FERN.cid,
    placeId: null,
    totalScore: null,
    reviewsCount: null,
    phone: null,
    street: null,
    reviewsDistribution: null,
  });
  t.like(b, { title: null, website: null, placeId: SOURDOUGH.placeId, totalScore: 4.3, reviewsDistribution: null });
});

test.serial('reviews: token pagination, max_reviews, images; delivered reviews billed apart from places', async (t) => {
  const before = fake.count(/listugcposts/);
  const r = await scrape('rev', { place_ids: [BLUE_FERN.placeId], max_reviews: 10, max_images: 1 });
  t.is(r.json.status, 'succeeded');
  const [fern] = r.json.items;
  t.deepEqual(
    fern.reviews.map((x: any) => [x.reviewer.name, x.stars]),
    [
      ['Ana P.', 5],
      ['Marco R.', 3],
      ['Li W.', 4],
    ],
  );
  t.is(fern.reviews[0].ownerResponse.text, 'Thanks Ana, see you soon!');
  t.is(fern.reviewsStatus, 'ended_early', '3 of 214: Google stopped paging');
  t.is(fake.count(/listugcposts/) - before, 2);
  const tokens = fake.requests
    .filter((x) => x.path === '/maps/rpc/listugcposts')
    .slice(-2)
    .map((x) => /!2s([^!]*)/.exec(x.query.get('pb')!.split('!2m2')[1]!)![1]);
  t.deepEqual(tokens, ['', 'CAESBkVnSUlDZw==']);
  t.deepEqual(fern.images, [
    { title: 'All', url: 'https://lh5.googleusercontent.com/p/AF1QipFAKE0001=w298-h298-k-no' },
  ]);
  t.is(fern.imagesStatus, 'limited_by_max_images');
  t.like(r.json.billing, { billed_units: 1, billed_reviews: 3 });
  const one = await scrape('rev', { place_ids: [BLUE_FERN.placeId], max_reviews: 1 });
  t.is(one.json.items[0].reviews.length, 1);
  t.is(one.json.items[0].reviewsStatus, 'limited_by_max_reviews');
  t.is(one.json.billing.billed_reviews, 1);
  const u = await usage('rev');
  t.like(u, { used: 2 });
  t.like(u.reviews, { quota: 4, used: 4, reserved: 0, remaining: 0 });
  t.like(u.by_kind.places, { units: 2, reviews: 4 });
});

test.serial(
  'limited view: withheld reviews are an explicit per-place status, not an empty success, and bill nothing',
  async (t) => {
    fake.limitedView.add(SOURDOUGH.fid);
    try {
      fake.limitedMode = 'empty';
      const r = await scrape('lim', { search_queries: [REAL_QUERY], max_reviews: 1 });
      t.is(r.json.status, 'succeeded');
      const [fern, lab] = r.json.items;
      t.is(fern.reviewsStatus, 'limited_by_max_reviews');
      t.deepEqual(lab.reviews, []);
      t.is(lab.reviewsStatus, 'unavailable_signed_out');
      t.true(r.json.warnings.some((w: string) => /signed-out/.test(w)));
      t.is(r.json.billing.billed_reviews, 1);
      fake.limitedMode = 'forbidden';
      const f = await scrape('lim', { place_ids: [SOURDOUGH.placeId], max_reviews: 5 });
      t.is(f.json.items[0].reviewsStatus, 'unavailable_signed_out');
      t.is(f.json.billing.billed_reviews, 0);
    } finally {
      fake.limitedView.clear();
    }
  },
);

test.serial(
  'review quota: reviews are capped at what is left, places still come back, and the status says so',
  async (t) => {
    // "rev" used its 4 reviews above; a new run still gets its places.
    const r = await scrape('rev', { search_queries: [REAL_QUERY], max_reviews: 5 });
    t.is(r.status, 200);
    t.is(r.json.items.length, 2);
    t.true(r.json.items.every((i: any) => i.reviewsStatus === 'limited_by_quota' && i.reviews.length === 0));
    t.true(r.json.warnings.some((w: string) => /review quota/.test(w)));
    t.is(r.json.billing.billed_reviews, 0);
  },
);

test('consent wall and sorry page are typed problems per source; the run fails and bills nothing', async (t) => {
  const c = await scrape('blocks', { search_queries: ['consent please', REAL_QUERY] });
  t.is(c.json.status, 'failed');
  t.is(c.json.error.code, 'consent_wall');
  t.deepEqual(
    c.json.sources.map((s: any) => [s.status, s.problem?.code]),
    [
      ['failed', 'consent_wall'],
      ['failed', 'consent_wall'],
    ],
    'the egress problem fails the later sources too',
  );
  t.regex(c.json.sources[0].problem.message, /consent/);
  t.is(c.json.billing.billed_units, 0);
  const s = await scrape('blocks', { search_queries: ['sorry'] });
  t.is(s.json.error.code, 'unusual_traffic');
  t.is(s.json.sources[0].problem.details.status, 429);
  const partial = await scrape('blocks', {
    search_queries: ['bakery 2 places', 'sorry again'],
    place_ids: [BLUE_FERN.placeId],
  });
  t.is(partial.json.status, 'partial', 'what came before the block is kept');
  t.is(partial.json.items.length, 2);
  t.deepEqual(
    partial.json.sources.map((x: any) => x.status),
    ['ok', 'failed', 'failed'],
  );
  t.is((await usage('blocks')).used, 2);
});

test('silent truncation: a page repeating the previous one ends the search with a typed problem', async (t) => {
  const r = await scrape('trunc', { search_queries: ['pizza 60 places repeat'], max_places: 60 });
  t.is(r.json.status, 'partial');
  t.is(r.json.items.length, 20);
  t.is(r.json.sources[0].problem.code, 'silent_truncation');
  t.is(r.json.billing.billed_units, 20);
});

test("a search that ends past 100 places warns about Google's per-search cap", async (t) => {
  const r = await scrape('trunc', { search_queries: ['museum 130 places'], max_places: 200 });
  t.is(r.json.status, 'succeeded');
  t.is(r.json.items.length, 130);
  t.is(r.json.items.at(-1).rank, 130);
  t.true(r.json.warnings.some((w: string) => /stops near 120 per search/.test(w)));
});

test('retries: a 503 is retried; the item quota cuts a run and then refuses the next one', async (t) => {
  fake.fault(/^\/search.*retry/, { kind: 'status', status: 503 }, 1);
  const r = await scrape('retry', { search_queries: ['retry 3 places'] });
  t.is(r.json.status, 'succeeded');
  t.is(r.json.items.length, 3);
  t.is(searches('retry 3 places').length, 2);
  const q = await scrape('quota', { search_queries: ['quota 10 places'], max_places: 10 });
  t.is(q.json.items.length, 3);
  t.true(q.json.truncated_by_quota);
  const refused = await scrape('quota', { search_queries: ['quota 10 places'] });
  t.is(refused.status, 429);
  t.is(refused.json.error.code, 'quota_exceeded');
});

test('proxy: with proxy_url every request tunnels through the configured proxy', async (t) => {
  const tunnels: string[] = [];
  const proxy: Server = createServer((_req, res) => {
    res.statusCode = 405;
    res.end();
  });
  proxy.on('connect', (req, socket, head) => {
    tunnels.push(req.url!);
    const [host, port] = req.url!.split(':');
    const upstream = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  const pd = await startTestDaemon({ toml: fake.toml(`proxy_url = "${proxyUrl}"`) });
  try {
    await pd.runtime.workspaces.create({ id: 'px', name: 'px' });
    const token = (await pd.runtime.workspaces.createKey('px')).token;
    const r = await call(
      pd,
      'POST',
      '/workspaces/px/scrapers/places/scrape',
      { search_queries: ['proxied 2 places'] },
      bearer(token),
    );
    t.is(r.json.status, 'succeeded');
    t.is(r.json.items.length, 2);
    t.true(tunnels.length >= 1);
    t.true(tunnels.every((x) => x === new URL(fake.url).host));
  } finally {
    await pd.close();
    proxy.closeAllConnections();
    await new Promise((r) => proxy.close(() => r(null)));
  }
});
