import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startScraperDaemon, type ScraperDaemon } from '../helpers/scraperDaemon.js';
import { BLUE_FERN, FakeMaps, REAL_QUERY, SOURDOUGH } from '../helpers/fakeMaps.js';
import { FakeReddit, fixture } from '../helpers/fakeReddit.js';

/**
 * Replays of the failures of issue 19 in the real upstream formats (variants derived from the recorded
 * payloads): each gives a partial result with typed problems, and billing equals what was delivered.
 */
let reddit: FakeReddit;
let maps: FakeMaps;
let d: TestDaemon;
const keys: Record<string, string> = {};
const WORKSPACES = [
  'comments',
  'more',
  'about',
  'pseudo',
  'fair',
  'invalid',
  'fields',
  'empty',
  'drift',
  'places6',
  'filters',
  'reviews',
];

let fakes: ScraperDaemon;
test.before(async () => {
  fakes = await startScraperDaemon({ workspaces: WORKSPACES, scrapers: 'free_items_per_month = 1000' });
  ({ d, reddit, maps } = fakes);
  Object.assign(keys, fakes.keys);
});
test.after.always(async () => {
  await fakes?.close();
});

const auth = (ws: string) => ({ Authorization: `Bearer ${keys[ws]!}` });
const forum = async (ws: string, body: unknown) =>
  (await call(d, 'POST', `/workspaces/${ws}/scrapers/forum/scrape`, body, auth(ws))).json;
const places = async (ws: string, body: unknown) =>
  (await call(d, 'POST', `/workspaces/${ws}/scrapers/places/scrape`, body, auth(ws))).json;
const usage = async (ws: string) => (await call(d, 'GET', `/workspaces/${ws}/usage`, undefined, auth(ws))).json;
const ids = (items: any[]) => items.map((i) => i.id);

/** Billing equals the delivered items, in the run and in the workspace's usage. */
async function billedAsDelivered(t: any, ws: string, run: any) {
  t.is(run.billing.billed_units, run.items.length);
  t.is(run.item_count, run.items.length);
  t.is((await usage(ws)).used, run.items.length);
}

test.serial(
  '1. a failed /comments keeps the post and the rest of the listing: comments_unavailable, partial, billed as delivered',
  async (t) => {
    // Before: the 404 failed the whole community source ("nothing at this address") and 2 items came back.
    reddit.fault(/^\/comments\/1q2w3e4$/, { kind: 'status', status: 404, body: fixture('error_notfound.json') });
    const run = await forum('comments', { community: 'typescript', max_items: 100 });
    t.is(run.status, 'partial');
    t.deepEqual(ids(run.items), ['t5_2rj4w', 't3_1q2w3e4', 't3_1q2w3e5', 't3_1q2w3e6', 't3_1q2w3e7']);
    const [source] = run.sources;
    t.like(source, { status: 'ok', items: 5, stop_reason: 'exhausted' });
    t.deepEqual(
      source.problems.map((p: any) => [p.code, p.details.item_id, p.details.cause]),
      [['comments_unavailable', 't3_1q2w3e4', 'not_found']],
    );
    await billedAsDelivered(t, 'comments', run);
  },
);

test.serial(
  '1. a failed morechildren keeps every comment already read; numberOfReplies keeps the declared count',
  async (t) => {
    // Before: the comments read before the expansion were all dropped with it.
    reddit.fault(/^\/api\/morechildren$/, { kind: 'status', status: 500 }, 3);
    const run = await forum('more', { urls: ['https://redd.it/1q2w3e4'] });
    t.is(run.status, 'partial');
    t.deepEqual(ids(run.items), ['t3_1q2w3e4', 't1_kq1a', 't1_kq2b', 't1_kq3c']);
    t.is(
      run.items.find((i: any) => i.id === 't1_kq1a').numberOfReplies,
      3,
      'kq2b plus the 2 comments of the stub that failed',
    );
    t.deepEqual(
      run.sources[0].problems.map((p: any) => [p.code, p.details.item_id, p.details.cause]),
      [['comments_incomplete', 't3_1q2w3e4', 'upstream_unavailable']],
    );
    await billedAsDelivered(t, 'more', run);
  },
);

test.serial(
  '1. a missing about page keeps the listing: community_info_unavailable; r/all and r/popular ask for none',
  async (t) => {
    // Before: the 404 on /about killed the whole listing.
    reddit.fault(/^\/r\/typescript\/about$/, { kind: 'status', status: 404, body: fixture('error_notfound.json') });
    const run = await forum('about', { community: 'typescript', skip_comments: true });
    t.is(run.status, 'partial');
    t.deepEqual(ids(run.items), ['t3_1q2w3e4', 't3_1q2w3e5', 't3_1q2w3e6', 't3_1q2w3e7']);
    t.deepEqual(
      run.sources[0].problems.map((p: any) => [p.code, p.details.community]),
      [['community_info_unavailable', 'typescript']],
    );
    await billedAsDelivered(t, 'about', run);
    const before = reddit.requests.length;
    const all = await forum('pseudo', {
      urls: ['https://www.reddit.com/r/all/new', 'https://www.reddit.com/r/popular'],
      skip_comments: true,
      max_items: 8,
    });
    t.is(all.status, 'succeeded');
    t.false(
      reddit.requests.slice(before).some((r) => r.path.endsWith('/about')),
      'no about page is asked for r/all or r/popular',
    );
    t.deepEqual(
      all.sources.map((s: any) => [s.status, s.items, s.problems.length]),
      [
        ['ok', 4, 0],
        ['ok', 0, 0],
      ],
    );
    t.is(all.sources[1].filtered.duplicate, 4);
  },
);

test.serial('3. the item budget is shared across sources; each says what it got and why it stopped', async (t) => {
  // Before: the first source ate max_items, the second said not_started and the run said succeeded.
  const run = await forum('fair', {
    urls: ['https://www.reddit.com/r/typescript/new', 'https://www.reddit.com/user/ts_dev_42'],
    max_items: 4,
    skip_comments: true,
  });
  t.is(run.status, 'succeeded');
  t.true(run.truncated_by_max_items);
  // Shares of 2: the user source has one new item (its post is a duplicate), so its unused share goes back.
  t.deepEqual(
    run.sources.map((s: any) => [s.status, s.items, s.stop_reason]),
    [
      ['ok', 3, 'max_items'],
      ['ok', 1, 'exhausted'],
    ],
  );
  t.deepEqual(ids(run.items), ['t5_2rj4w', 't3_1q2w3e4', 't2_8abcd12', 't3_1q2w3e5']);
  t.is(run.sources[1].filtered.duplicate, 1);
  // A source that ends early leaves its share to the others.
  const uneven = await forum('fair', {
    urls: ['https://redd.it/1q2w3e6', 'https://www.reddit.com/r/typescript/new'],
    max_items: 5,
    skip_comments: true,
  });
  t.deepEqual(
    uneven.sources.map((s: any) => [s.items, s.stop_reason]),
    [
      [1, 'exhausted'],
      [4, 'max_items'],
    ],
  );
  t.is(uneven.items.length, 5);
});

test.serial('5. a post without an id is dropped and reported, never t3_undefined, never billed', async (t) => {
  reddit.transform = (path, _q, doc) => {
    if (path !== '/r/typescript/new' || doc.kind !== 'Listing') return doc;
    const children = doc.data.children.map((c: any) => {
      if (c.data.id !== '1q2w3e5') return c;
      const { id: _id, name: _name, ...rest } = c.data;
      return { ...c, data: { ...rest, permalink: undefined } };
    });
    return { ...doc, data: { ...doc.data, children } };
  };
  try {
    const run = await forum('invalid', { community: 'typescript', skip_comments: true });
    t.is(run.status, 'partial');
    t.false(JSON.stringify(run.items).includes('undefined'));
    t.deepEqual(ids(run.items), ['t5_2rj4w', 't3_1q2w3e4', 't3_1q2w3e6', 't3_1q2w3e7']);
    t.is(run.sources[0].filtered.invalid, 1);
    const [problem] = run.sources[0].problems;
    t.is(problem.code, 'invalid_item');
    t.regex(problem.message, /id/);
    await billedAsDelivered(t, 'invalid', run);
  } finally {
    reddit.transform = (_p, _q, doc) => doc;
  }
});

test.serial(
  '6. forum fields: multi-community URLs, declared reply counts, every field of every dataType present (null when not applicable)',
  async (t) => {
    const before = reddit.requests.length;
    const multi = await forum('fields', {
      urls: ['https://www.reddit.com/r/typescript+private_sub/new'],
      skip_comments: true,
    });
    t.is(multi.sources[0].status, 'ok');
    t.deepEqual(
      reddit.requests
        .slice(before)
        .map((r) => r.path)
        .filter((p) => p.endsWith('/about')),
      ['/r/typescript/about', '/r/private_sub/about'],
    );
    t.deepEqual(ids(multi.items), ['t5_2rj4w', 't3_1q2w3e4', 't3_1q2w3e5', 't3_1q2w3e6', 't3_1q2w3e7']);
    t.deepEqual(
      multi.sources[0].problems.map((p: any) => [p.code, p.details.community, p.details.cause]),
      [['community_info_unavailable', 'private_sub', 'community_private']],
    );
    const thread = await forum('fields', {
      urls: ['https://redd.it/1q2w3e4'],
      search_queries: ['strict'],
      search_types: ['community', 'user'],
    });
    const byType = Object.fromEntries(thread.items.map((i: any) => [i.dataType, i]));
    const fields = Object.keys(byType.post).sort();
    for (const type of ['comment', 'community', 'user'])
      t.deepEqual(Object.keys(byType[type]).sort(), fields, `${type} has every field`);
    t.like(byType.comment, {
      title: null,
      numberOfComments: null,
      imageUrls: null,
      numberOfMembers: null,
      postKarma: null,
    });
    t.like(byType.post, { numberOfReplies: null, postId: null, name: null, postKarma: null });
    t.like(byType.user, { title: null, upVotes: null, numberOfReplies: null });
  },
);

test.serial('6. numberOfReplies uses the declared count when "more" stubs are not expanded', async (t) => {
  // Before: only replies actually read were counted (1 for kq1a when its stub of 2 stayed unexpanded).
  const dd = await startTestDaemon({ toml: reddit.toml('max_more_requests_per_post = 0') });
  try {
    await dd.runtime.workspaces.create({ id: 'x', name: 'x' });
    const token = (await dd.runtime.workspaces.createKey('x')).token;
    const run = (
      await call(
        dd,
        'POST',
        '/workspaces/x/scrapers/forum/scrape',
        { urls: ['https://redd.it/1q2w3e4'] },
        { Authorization: `Bearer ${token}` },
      )
    ).json;
    t.deepEqual(ids(run.items), ['t3_1q2w3e4', 't1_kq1a', 't1_kq2b', 't1_kq3c']);
    t.is(run.items[1].numberOfReplies, 3);
  } finally {
    await dd.close();
  }
});

test.serial(
  '2. a genuinely empty place list (its marker) is an empty success with a note; [] and a moved structure are unexpected_document with a sample',
  async (t) => {
    const empty = await places('empty', { search_queries: ['nothing here'] });
    t.is(empty.status, 'succeeded');
    t.deepEqual(empty.items, []);
    t.true(empty.warnings.some((w: string) => /found no places/.test(w)));
    maps.searchTransform = (q, doc) => {
      if (q.includes('bare array')) return [];
      if (q.includes('moved'))
        return [
          [
            doc[0][0],
            [
              doc[0][1][0],
              ...doc[0][1].slice(1).map((row: any[]) => {
                const r = [...row];
                r[15] = r[14];
                r[14] = null;
                return r;
              }),
            ],
          ],
        ];
      if (q.includes('no list')) return [[doc[0][0]]];
      return doc;
    };
    try {
      // Before: each of these came back succeeded with 0 items and no warning.
      for (const q of [`${REAL_QUERY} bare array`, `${REAL_QUERY} moved`, `${REAL_QUERY} no list`]) {
        const run = await places('drift', { search_queries: [q] });
        t.is(run.status, 'failed', q);
        t.is(run.error.code, 'unexpected_document');
        const problem = run.sources[0].problem;
        t.is(problem.code, 'unexpected_document');
        t.regex(problem.details.sample, /^[\w.-]+\.txt$/);
        const sample = readFileSync(
          join(d.runtime.loaded.config.server.data_dir, 'scrape-samples', problem.details.sample),
          'utf8',
        );
        t.true(sample.includes(")]}'"), 'the raw document is kept');
        t.is(run.billing.billed_units, 0);
      }
      // Items already delivered by the page before stay when a later page drifts.
      maps.searchTransform = (q, doc) =>
        q.includes('drift later') && doc[0][1].length > 1 && doc[0][1][1][14][11].includes('#21') ? [] : doc;
      const later = await places('drift', { search_queries: ['drift later 30 places'], max_places: 30 });
      t.is(later.status, 'partial');
      t.is(later.items.length, 20);
      t.like(later.sources[0], { status: 'failed', items: 20, problem: { code: 'unexpected_document' } });
      t.is(later.billing.billed_units, 20);
    } finally {
      maps.searchTransform = (_q, doc) => doc;
    }
    const trailing = await places('empty', { search_queries: ['xhr trailing'] });
    t.is(trailing.status, 'succeeded');
    t.deepEqual(
      trailing.items.map((i: any) => i.title),
      ['Blue Fern Coffee', 'Sourdough Lab'],
      'the XHR wrapper with its trailing /*""*/',
    );
    // 37.9b: before, only a leading mark made the body an XHR wrapper; a trailing one alone was unexpected_document.
    const trailingOnly = await places('empty', { search_queries: ['xhr trailing only'] });
    t.is(trailingOnly.status, 'succeeded');
    t.deepEqual(
      trailingOnly.items.map((i: any) => i.title),
      ['Blue Fern Coffee', 'Sourdough Lab'],
      'the XHR wrapper with only its trailing /*""*/',
    );
  },
);

test.serial(
  '6. places fields: borough as neighborhood, alternate hours block, temporarily closed, sponsored places kept and flagged, review likes and reviewer counts',
  async (t) => {
    maps.searchTransform = (q, doc) => {
      if (!q.includes('variant')) return doc;
      const [fern, lab] = [doc[0][1][1][14], doc[0][1][2][14]];
      fern[183][1][0] = 'Mission District';
      // Two status lines that disagree: the block Google updates for closures says so.
      lab[88] = [null, 'SearchResult.TYPE_CAFE'];
      lab[203][1][4][0] = 'Open ⋅ Closes 6 pm';
      lab[34][4][4] = 'Temporarily closed';
      // A sponsored place where Apify's crawler reads ads (data[2][1][0][i][15]).
      const ad = maps.derived(90);
      doc[2] = [null, [[Object.assign(new Array(16).fill(null), { 15: ad })]]];
      return doc;
    };
    try {
      const run = await places('places6', {
        search_queries: [`${REAL_QUERY} variant`],
        include_details: false,
        max_reviews: 1,
      });
      t.is(run.status, 'succeeded');
      const [fern, lab, ad] = run.items;
      t.like(fern, { neighborhood: 'Mission District', street: '1200 Fake St', isAdvertisement: false, rank: 1 });
      t.like(lab, { temporarilyClosed: true, permanentlyClosed: false, openingStatus: 'Temporarily closed' });
      t.like(ad, { isAdvertisement: true, rank: null, title: 'Blue Fern Coffee #91' });
      t.like(fern.reviews[0], { likesCount: 2, reviewer: { name: 'Ana P.', numberOfReviews: 12 } });
    } finally {
      maps.searchTransform = (_q, doc) => doc;
    }
    // A place whose hours are only in the alternate layout ([day, [text]]), inside the 2025 block.
    const alt = maps.derived(95);
    alt[203][0] = alt[34][1];
    alt[34][1] = null;
    const details = await places('places6', { place_ids: [alt[78]], include_details: true });
    t.deepEqual(details.items[0].openingHours, [
      { day: 'Monday', hours: '7 am–6 pm' },
      { day: 'Tuesday', hours: '7 am–6 pm' },
      { day: 'Sunday', hours: 'Closed' },
    ]);
  },
);

test.serial(
  '10. filters apply before billing; reviews follow reviews_sort and stop at reviews_start_date',
  async (t) => {
    // Derived places alternate Blue Fern (website, 4.6, coffee) and Sourdough Lab (no website, 4.3, bakery, closed).
    const all = await places('filters', { search_queries: ['filters 10 places'], max_places: 10 });
    t.is(all.items.length, 10);
    for (const [filter, reason, kept] of [
      [{ skip_without_website: true }, 'no_website', 'Blue Fern'],
      [{ min_rating: 4.5 }, 'below_min_rating', 'Blue Fern'],
      [{ categories: ['bakery'] }, 'category', 'Sourdough'],
      [{ skip_closed: true }, 'closed', 'Blue Fern'],
    ] as const) {
      const run = await places('filters', { search_queries: ['filters 10 places'], max_places: 10, ...filter });
      t.is(run.items.length, 5, JSON.stringify(filter));
      t.true(run.items.every((i: any) => i.title.startsWith(kept)));
      t.is(run.sources[0].filtered[reason], 5);
      t.is(run.billing.billed_units, 5, 'filtered places are not billed');
    }
    const none = await places('filters', {
      search_queries: ['filters 4 places'],
      skip_without_phone: true,
      skip_without_reviews: true,
    });
    t.is(none.items.length, 4, 'every derived place has a phone and reviews');

    const sorts: Record<string, string> = { newest: '2', most_relevant: '1', highest_rating: '3', lowest_rating: '4' };
    for (const [sort, n] of Object.entries(sorts)) {
      const from = maps.requests.length;
      await places('reviews', { place_ids: [BLUE_FERN.placeId], max_reviews: 1, reviews_sort: sort });
      const pb = maps.requests
        .slice(from)
        .find((r) => r.path === '/maps/rpc/listugcposts')!
        .query.get('pb')!;
      t.true(pb.endsWith(`!13m1!1e${n}`), `${sort} → ${pb.slice(-12)}`);
    }
    // Reviews at 2026-02-13, 2026-02-02 (page 1) and 2026-01-21 (page 2).
    const from = maps.requests.length;
    const newest = await places('reviews', {
      place_ids: [BLUE_FERN.placeId],
      max_reviews: 10,
      reviews_start_date: '2026-02-01T00:00:00Z',
    });
    t.deepEqual(
      newest.items[0].reviews.map((r: any) => r.reviewer.name),
      ['Ana P.', 'Marco R.'],
    );
    t.is(newest.items[0].reviewsStatus, 'limited_by_start_date');
    t.is(maps.requests.slice(from).filter((r) => r.path === '/maps/rpc/listugcposts').length, 2);
    t.is(newest.billing.billed_reviews, 2);
    const relevant = await places('reviews', {
      place_ids: [SOURDOUGH.placeId],
      max_reviews: 10,
      reviews_sort: 'most_relevant',
      reviews_start_date: '2026-02-01T00:00:00Z',
    });
    t.is(relevant.items[0].reviews.length, 2, 'other sorts only filter');
  },
);
