import test from 'ava';
import { ConfigSchema } from '../../src/config/schema.js';
import { redditClientOptions } from '../../src/scrapers/forum/forumKind.js';
import { ForumScraper } from '../../src/scrapers/forum/forumScraper.js';
import { RedditClient } from '../../src/scrapers/forum/redditClient.js';
import { ForumScrapeRequest } from '../../src/scrapers/forum/request.js';
import { CLIENT_ID, CLIENT_SECRET, FakeReddit, fixture, HEADERS } from '../helpers/fakeReddit.js';

let fake: FakeReddit;
test.before(async () => {
  fake = await FakeReddit.start();
});
test.after.always(async () => {
  await fake?.close();
});

function client(forum: Record<string, unknown> = {}): RedditClient {
  const config = ConfigSchema.parse({
    scrapers: {
      forum: {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        api_base_url: fake.url,
        token_url: `${fake.url}/api/v1/access_token`,
        requests_per_minute: 60000,
        burst: 1000,
        retry_backoff_ms: 5,
        ...forum,
      },
    },
  });
  return new RedditClient(redditClientOptions(config));
}

async function scrape(
  body: Record<string, unknown>,
  opts: { limit?: number; forum?: Record<string, unknown>; c?: RedditClient } = {},
) {
  const c = opts.c ?? client(opts.forum);
  const from = fake.requests.length;
  const out = await new ForumScraper(c, ForumScrapeRequest.parse(body), opts.limit ?? 1000).run();
  return {
    out,
    c,
    requests: fake.requests.slice(from).filter((r) => r.path !== '/api/v1/access_token'),
    tokenRequests: fake.requests.slice(from).filter((r) => r.path === '/api/v1/access_token'),
  };
}
const ids = (items: unknown[]) => (items as { id: string }[]).map((i) => i.id);
const byId = (items: unknown[], id: string) => (items as any[]).find((i) => i.id === id);

test.serial(
  'community listing: OAuth, raw_json, paging with after, comment tree with more + continue expansion, every field mapped',
  async (t) => {
    const { out, requests, tokenRequests } = await scrape({ community: 'typescript', max_items: 100 });
    t.is(tokenRequests.length, 1);
    t.is(
      tokenRequests[0]!.headers.authorization,
      `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
    );
    t.is(tokenRequests[0]!.body, 'grant_type=client_credentials');
    t.true(
      requests.every(
        (r) =>
          r.query.get('raw_json') === '1' &&
          r.headers.authorization === `bearer ${fake.token}` &&
          /^server:vigil:/.test(String(r.headers['user-agent'])),
      ),
    );
    const listings = requests.filter((r) => r.path === '/r/typescript/new');
    t.deepEqual(
      listings.map((r) => r.query.get('after')),
      [null, 't3_1q2w3e5'],
    );
    const more = requests.filter((r) => r.path === '/api/morechildren');
    t.is(more.length, 1);
    t.is(more[0]!.query.get('link_id'), 't3_1q2w3e4');
    t.is(more[0]!.query.get('children'), 'kq9z,kq9y');
    t.is(more[0]!.query.get('api_type'), 'json');
    t.true(
      requests.some((r) => r.path === '/comments/1q2w3e4/_/kq2b'),
      'continue this thread expanded',
    );
    t.deepEqual(ids(out.items), [
      't5_2rj4w',
      't3_1q2w3e4',
      't1_kq1a',
      't1_kq2b',
      't1_kq3c',
      't1_kq9z',
      't1_kq9y',
      't3_1q2w3e5',
      't3_1q2w3e6',
      't3_1q2w3e7',
    ]);
    t.false(
      requests.some((r) => r.path === '/comments/1q2w3e5'),
      'no comment request for a post with num_comments 0',
    );
    t.deepEqual(out.sources, [
      { source: 'community:typescript', status: 'ok', items: 10, filtered: {}, problems: [], stop_reason: 'exhausted' },
    ]);
    t.false(out.hitLimit);

    const community = byId(out.items, 't5_2rj4w');
    t.like(community, {
      dataType: 'community',
      url: 'https://www.reddit.com/r/typescript/',
      name: 'typescript',
      title: 'TypeScript',
      communityName: 'r/typescript',
      numberOfMembers: 164210,
      over18: false,
      thumbnailUrl: 'https://styles.redditmedia.com/t5_2rj4w/styles/communityIcon_x.png',
      createdAt: new Date(1349394474000).toISOString(),
    });
    const self = byId(out.items, 't3_1q2w3e4');
    t.like(self, {
      dataType: 'post',
      url: 'https://www.reddit.com/r/typescript/comments/1q2w3e4/strict_mode_caught_a_real_bug_today/',
      username: 'ts_dev_42',
      userId: 't2_8abcd12',
      title: 'Strict mode caught a real bug today',
      body: 'Turned on exactOptionalPropertyTypes & it found 3 bugs. Worth it?',
      communityName: 'r/typescript',
      upVotes: 128,
      upVoteRatio: 0.97,
      numberOfComments: 4,
      flair: 'Discussion',
      over18: false,
      isVideo: false,
      link: null,
      thumbnailUrl: null,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    t.deepEqual(self.imageUrls, []);
    const image = byId(out.items, 't3_1q2w3e5');
    t.deepEqual(image.imageUrls, [
      'https://preview.redd.it/x7k2m9q1ab3f1.png?width=1080&format=png&auto=webp&s=1a2b3c',
    ]);
    t.is(image.body, null, 'link posts have no body, not ""');
    t.is(image.link, 'https://i.redd.it/x7k2m9q1ab3f1.png');
    t.is(image.thumbnailUrl, 'https://b.thumbs.redditmedia.com/abc123.jpg');
    const video = byId(out.items, 't3_1q2w3e6');
    t.true(video.isVideo);
    t.deepEqual(video.videoUrls, [
      'https://v.redd.it/o4m3p54mps97/DASH_720.mp4?source=fallback',
      'https://v.redd.it/o4m3p54mps97/HLSPlaylist.m3u8?a=1&v=1&f=sd',
    ]);
    t.is(video.flair, null);
    const gallery = byId(out.items, 't3_1q2w3e7');
    t.deepEqual(gallery.imageUrls, [
      'https://preview.redd.it/aa11bb22.png?width=1600&format=png&auto=webp&s=aaa',
      'https://preview.redd.it/cc33dd44.jpg?width=1600&format=pjpg&auto=webp&s=bbb',
    ]);
    const top = byId(out.items, 't1_kq1a');
    t.like(top, {
      dataType: 'comment',
      username: 'commenter1',
      body: 'Yes. It is noisy for a day, then it pays off.',
      upVotes: 31,
      numberOfReplies: 3,
      postId: 't3_1q2w3e4',
      parentId: 't3_1q2w3e4',
      over18: false,
      postTitle: 'Strict mode caught a real bug today',
      url: 'https://www.reddit.com/r/typescript/comments/1q2w3e4/strict_mode_caught_a_real_bug_today/kq1a/',
    });
    t.like(byId(out.items, 't1_kq2b'), { parentId: 't1_kq1a', numberOfReplies: 0 });
    t.like(byId(out.items, 't1_kq9z'), {
      parentId: 't1_kq1a',
      username: 'dev_b',
      body: 'Also enable strictNullChecks obviously.',
    });
    t.like(
      byId(out.items, 't1_kq3c'),
      { username: null, body: null, userId: null },
      'deleted author and body are null, not "[deleted]"',
    );
  },
);

test.serial('37.9d the branch behind "continue this thread" is delivered and counted in numberOfReplies', async (t) => {
  // As Reddit answers /comments/<post>/_/<comment>: the comment at depth 0 with its replies nested (derived
  // from the fixture's continue document and its comment records).
  fake.transform = (path, _q, doc) => {
    if (path !== '/comments/1q2w3e4/_/kq2b') return doc;
    const focal = doc[1].data.children[0];
    const reply = (id: string, parent: string, depth: number, replies: unknown = '') => ({
      kind: 't1',
      data: {
        ...focal.data,
        id,
        name: `t1_${id}`,
        parent_id: parent,
        depth,
        body: `Reply ${id}.`,
        permalink: focal.data.permalink.replace('kq2b', id),
        replies,
      },
    });
    const nested = (children: unknown[]) => ({ kind: 'Listing', data: { after: null, children } });
    focal.data.replies = nested([
      reply('kq4d', 't1_kq2b', 1, nested([reply('kq6f', 't1_kq4d', 2)])),
      reply('kq5e', 't1_kq2b', 1),
    ]);
    return doc;
  };
  try {
    const { out } = await scrape({ urls: ['https://redd.it/1q2w3e4'] });
    // Before: kq2b was already read, so its replies in the continue document were skipped: 0 replies, and
    // kq4d, kq5e and kq6f were never delivered.
    t.like(byId(out.items, 't1_kq2b'), { numberOfReplies: 2 });
    t.like(byId(out.items, 't1_kq4d'), { parentId: 't1_kq2b', numberOfReplies: 1 });
    t.like(byId(out.items, 't1_kq6f'), { parentId: 't1_kq4d', numberOfReplies: 0 });
    t.like(byId(out.items, 't1_kq5e'), { parentId: 't1_kq2b', numberOfReplies: 0 });
    t.is(ids(out.items).length, 9, 'the post, the 5 comments of the fixture thread and the 3 of the branch');
  } finally {
    fake.transform = (_p, _q, d) => d;
  }
});

test.serial(
  'post URLs (www, old, redd.it) give the post and its comments; max_comments caps per post; skip_comments fetches none',
  async (t) => {
    for (const url of [
      'https://www.reddit.com/r/typescript/comments/1q2w3e4/strict_mode/',
      'https://old.reddit.com/comments/1q2w3e4',
      'https://redd.it/1q2w3e4',
    ]) {
      const { out, requests } = await scrape({ urls: [url], max_comments: 2, sort: 'top' });
      t.deepEqual(ids(out.items), ['t3_1q2w3e4', 't1_kq1a', 't1_kq2b'], url);
      t.is(requests[0]!.path, '/comments/1q2w3e4');
      t.is(requests[0]!.query.get('sort'), 'top');
    }
    const skip = await scrape({ urls: ['https://www.reddit.com/r/typescript/new/'], skip_comments: true });
    t.false(skip.requests.some((r) => r.path.startsWith('/comments') || r.path === '/api/morechildren'));
    t.deepEqual(
      ids(skip.out.items).filter((i) => i.startsWith('t1_')),
      [],
    );
    const zero = await scrape({ urls: ['https://redd.it/1q2w3e4'], max_comments: 0 });
    t.deepEqual(ids(zero.out.items), ['t3_1q2w3e4']);
  },
);

test.serial('max_items is global after dedupe and shared fairly across sources; max_posts stops paging', async (t) => {
  const { out } = await scrape(
    { community: 'typescript', search_queries: ['strict'], max_items: 3, skip_comments: true },
    {},
  );
  // community + search: community alone is only a listing when there is no search; here it scopes the search.
  t.deepEqual(ids(out.items), ['t3_1q2w3e5', 't3_1q2w3e4', 't3_1q2w3e6']);
  t.true(out.hitLimit);
  // Before: the first source took both items and the second said not_started. Now each gets its share.
  const two = await scrape({
    urls: ['https://www.reddit.com/r/typescript/new', 'https://www.reddit.com/user/ts_dev_42'],
    max_items: 2,
    skip_comments: true,
  });
  t.deepEqual(
    two.out.sources.map((s) => [s.status, s.items, s.stop_reason]),
    [
      ['ok', 1, 'max_items'],
      ['ok', 1, 'max_items'],
    ],
  );
  t.deepEqual(ids(two.out.items), ['t5_2rj4w', 't2_8abcd12']);
  const capped = await scrape({ community: 'typescript', max_posts: 1, skip_comments: true });
  t.deepEqual(ids(capped.out.items), ['t5_2rj4w', 't3_1q2w3e4']);
  t.is(
    capped.requests.filter((r) => r.path === '/r/typescript/new').length,
    1,
    'no second page once max_posts is reached',
  );
  const limited = await scrape({ community: 'typescript', skip_comments: true }, { limit: 2 });
  t.is(limited.out.items.length, 2, 'the quota cap is a limit too');
});

test.serial('duplicates across sources are returned and counted once', async (t) => {
  const { out } = await scrape({
    urls: ['https://www.reddit.com/r/typescript/new', 'https://www.reddit.com/search?q=strict&sort=new'],
    skip_comments: true,
  });
  t.is(new Set(ids(out.items)).size, out.items.length);
  t.deepEqual(
    out.sources.map((s) => [s.items, s.filtered.duplicate ?? 0]),
    [
      [5, 0],
      [0, 4],
    ],
  );
});

test.serial(
  'post_date_limit stops paging on time-ordered sorts and only filters on others; comment_date_limit filters comments',
  async (t) => {
    // Between the first page's two posts (2026-01-01T00:00 and 2025-12-31T23:00).
    const newest = await scrape({
      community: 'typescript',
      post_date_limit: '2025-12-31T23:30:00Z',
      skip_comments: true,
    });
    t.deepEqual(ids(newest.out.items), ['t5_2rj4w', 't3_1q2w3e4']);
    t.is(
      newest.requests.filter((r) => r.path === '/r/typescript/new').length,
      1,
      'stopped early: page 2 never requested',
    );
    t.deepEqual(newest.out.sources[0]!.filtered, { post_date_limit: 1 });
    const hot = await scrape({
      community: 'typescript',
      sort: 'hot',
      post_date_limit: '2025-12-31T23:30:00Z',
      skip_comments: true,
    });
    t.deepEqual(ids(hot.out.items), ['t5_2rj4w', 't3_1q2w3e4']);
    t.is(
      hot.requests.filter((r) => r.path === '/r/typescript/hot').length,
      2,
      'hot is not time-ordered: every page is read',
    );
    t.is(hot.out.sources[0]!.filtered.post_date_limit, 3);
    t.true(hot.out.warnings.some((w) => w.includes('only filters')));
    // Comments at 00:10, 00:15, 00:20, 00:25, 00:26:40 of 2026-01-01.
    const comments = await scrape({ urls: ['https://redd.it/1q2w3e4'], comment_date_limit: '2026-01-01T00:18:00Z' });
    t.deepEqual(ids(comments.out.items), ['t3_1q2w3e4', 't1_kq3c', 't1_kq9z', 't1_kq9y']);
    t.is(comments.out.sources[0]!.filtered.comment_date_limit, 2);
  },
);

test.serial(
  'NSFW posts and communities are dropped unless include_nsfw (and searches then ask for over_18)',
  async (t) => {
    fake.transform = (path, _q, doc) => {
      if (path === '/r/typescript/new' && doc.kind === 'Listing') {
        return {
          ...doc,
          data: {
            ...doc.data,
            children: doc.data.children.map((c: any) =>
              c.data.id === '1q2w3e5' ? { ...c, data: { ...c.data, over_18: true } } : c,
            ),
          },
        };
      }
      return doc;
    };
    try {
      const off = await scrape({ community: 'typescript', skip_comments: true });
      t.false(ids(off.out.items).includes('t3_1q2w3e5'));
      t.deepEqual(off.out.sources[0]!.filtered, { nsfw: 1 });
      const on = await scrape({ community: 'typescript', skip_comments: true, include_nsfw: true });
      t.true(byId(on.out.items, 't3_1q2w3e5').over18);
      const search = await scrape({ search_queries: ['x'], include_nsfw: true, skip_comments: true });
      t.is(search.requests[0]!.query.get('include_over_18'), 'on');
      const searchOff = await scrape({ search_queries: ['x'], skip_comments: true });
      t.is(searchOff.requests[0]!.query.get('include_over_18'), null);
    } finally {
      fake.transform = (_p, _q, d) => d;
    }
  },
);

test.serial(
  'searches: queries, search types, community scope, sort and time filter, paging; search URLs read q/sort/t/type',
  async (t) => {
    const { out, requests } = await scrape({
      search_queries: ['strict mode'],
      search_types: ['post', 'community', 'user'],
      sort: 'top',
      time_filter: 'week',
      skip_comments: true,
    });
    t.deepEqual(
      requests.map((r) => [r.path, r.query.get('type'), r.query.get('after')]),
      [
        ['/search', 'link', null],
        ['/search', 'link', 't3_1q2w3e4'],
        ['/search', 'sr', null],
        ['/search', 'user', null],
      ],
    );
    t.true(
      requests.every(
        (r) => r.query.get('q') === 'strict mode' && r.query.get('sort') === 'top' && r.query.get('t') === 'week',
      ),
    );
    t.deepEqual(
      out.items.map((i: any) => i.dataType),
      ['post', 'post', 'post', 'post', 'community', 'user'],
    );
    t.like(byId(out.items, 't2_8abcd12'), {
      dataType: 'user',
      username: 'ts_dev_42',
      url: 'https://www.reddit.com/user/ts_dev_42/',
      over18: false,
      postKarma: 1520,
      commentKarma: 8040,
      thumbnailUrl: null,
      createdAt: '2020-01-01T00:00:00.000Z',
    });
    const scoped = await scrape({
      search_queries: ['strict'],
      community: 'r/typescript',
      sort: 'relevance',
      max_posts: 1,
      skip_comments: true,
    });
    t.is(scoped.requests[0]!.path, '/r/typescript/search');
    t.is(scoped.requests[0]!.query.get('restrict_sr'), 'on');
    t.is(scoped.requests[0]!.query.get('sort'), 'relevance');
    const url = await scrape({
      urls: ['https://www.reddit.com/r/typescript/search/?q=parser&sort=comments&t=month&restrict_sr=1'],
      skip_comments: true,
      max_posts: 1,
    });
    t.like(Object.fromEntries(url.requests[0]!.query), {
      q: 'parser',
      sort: 'comments',
      t: 'month',
      restrict_sr: 'on',
      type: 'link',
    });
    t.is(url.requests[0]!.path, '/r/typescript/search');
  },
);

test.serial(
  'user URLs: the account and its posts, or its comments; listing sorts and time filters map to the upstream',
  async (t) => {
    const posts = await scrape({
      urls: ['https://www.reddit.com/user/ts_dev_42/'],
      skip_comments: true,
      sort: 'top',
      time_filter: 'year',
    });
    t.deepEqual(ids(posts.out.items), ['t2_8abcd12', 't3_1q2w3e4']);
    t.like(byId(posts.out.items, 't2_8abcd12'), {
      thumbnailUrl: 'https://www.redditstatic.com/avatars/defaults/v2/avatar_default_3.png',
      body: null,
    });
    t.like(Object.fromEntries(posts.requests[1]!.query), { sort: 'top', t: 'year' });
    const comments = await scrape({ urls: ['https://www.reddit.com/u/ts_dev_42/comments?sort=new'] });
    t.is(comments.requests[1]!.path, '/user/ts_dev_42/comments');
    t.deepEqual(ids(comments.out.items), ['t2_8abcd12', 't1_kq1a', 't1_kq2b', 't1_kq3c']);
    t.is(byId(comments.out.items, 't1_kq2b').postTitle, 'Strict mode caught a real bug today');
    const rising = await scrape({
      urls: ['https://www.reddit.com/r/typescript/rising'],
      skip_comments: true,
      max_posts: 1,
    });
    t.is(rising.requests[1]!.path, '/r/typescript/rising');
    const top = await scrape({
      urls: ['https://www.reddit.com/r/typescript/top/?t=all'],
      skip_comments: true,
      max_posts: 1,
    });
    t.is(top.requests[1]!.query.get('t'), 'all');
  },
);

test.serial(
  'private, banned and missing communities fail their own source with a reason; the others still run',
  async (t) => {
    const { out } = await scrape({
      urls: [
        'https://www.reddit.com/r/private_sub',
        'https://www.reddit.com/r/banned_sub',
        'https://www.reddit.com/r/missing_sub',
        'https://redd.it/1q2w3e5',
      ],
    });
    t.deepEqual(
      out.sources.map((s) => [s.status, s.problem?.code]),
      [
        ['failed', 'community_private'],
        ['failed', 'community_banned'],
        ['failed', 'not_found'],
        ['ok', undefined],
      ],
    );
    t.deepEqual(ids(out.items), ['t3_1q2w3e5']);
  },
);

test.serial('an expired token is refreshed once on 401 and the request retried', async (t) => {
  const c = client();
  await scrape({ urls: ['https://redd.it/1q2w3e5'] }, { c });
  fake.expireToken();
  const { out, tokenRequests, requests } = await scrape(
    { urls: ['https://redd.it/1q2w3e4'], skip_comments: true },
    { c },
  );
  t.is(tokenRequests.length, 1);
  t.is(requests.length, 2, 'the 401 and its retry');
  t.deepEqual(ids(out.items), ['t3_1q2w3e4']);
  t.is(c.stats.tokenFetches, 2);
});

test.serial(
  '429 waits for retry-after and retries; a wait longer than allowed fails the source with upstream_rate_limited',
  async (t) => {
    // Derived from the exhausted_429 headers with a short window, so the test waits one second.
    fake.fault(/^\/comments\/1q2w3e5$/, {
      kind: 'status',
      status: 429,
      body: fixture('error_429.json'),
      headers: { ...HEADERS.exhausted_429, 'retry-after': '1', 'x-ratelimit-reset': '1' },
    });
    const c = client();
    const started = Date.now();
    const { out, requests } = await scrape({ urls: ['https://redd.it/1q2w3e5'] }, { c });
    t.true(Date.now() - started >= 950, 'waited for retry-after');
    t.is(requests.length, 2);
    t.deepEqual(ids(out.items), ['t3_1q2w3e5']);
    t.is(c.stats.rateLimitWaits, 1);
    fake.fault(/^\/comments\/1q2w3e5$/, {
      kind: 'status',
      status: 429,
      body: fixture('error_429.json'),
      headers: HEADERS.exhausted_429,
    });
    const long = await scrape({ urls: ['https://redd.it/1q2w3e5'] }, { forum: { max_retry_wait_seconds: 5 } });
    t.like(long.out.sources[0], {
      status: 'failed',
      problem: { code: 'upstream_rate_limited', details: { retry_after_seconds: 37, path: '/comments/1q2w3e5' } },
    });
  },
);

test.serial(
  'an HTML 403 block page is a typed upstream_blocked failure for this and every later source, and stops requests',
  async (t) => {
    fake.fault(/^\/r\/typescript\/about$/, { kind: 'blocked' });
    const { out, requests } = await scrape(
      { urls: ['https://www.reddit.com/r/typescript', 'https://redd.it/1q2w3e4'] },
      { forum: { blocked_cooldown_seconds: 60 } },
    );
    t.deepEqual(
      out.sources.map((s) => [s.status, s.problem?.code]),
      [
        ['failed', 'upstream_blocked'],
        ['failed', 'upstream_blocked'],
      ],
    );
    t.regex(out.sources[0]!.problem!.message, /blocked due to a network policy/);
    t.is(requests.length, 1, 'no request after the block (circuit open)');
    t.deepEqual(out.items, []);
  },
);

test.serial(
  "37.9e a run during the block cool-down says the credential rests until when, not the earlier run's error and path",
  async (t) => {
    fake.fault(/^\/r\/typescript\/about$/, { kind: 'blocked' });
    const c = client({ blocked_cooldown_seconds: 60 });
    const blockedAt = Date.now();
    const first = await scrape({ urls: ['https://www.reddit.com/r/typescript'] }, { c });
    t.like(first.out.sources[0]!.problem, { code: 'upstream_blocked', details: { path: '/r/typescript/about' } });
    const later = await scrape({ urls: ['https://redd.it/1q2w3e5'] }, { c });
    t.is(later.requests.length, 0, 'nothing was sent during the cool-down');
    const problem = later.out.sources[0]!.problem!;
    // Before: the first run's problem verbatim ("Reddit blocked the request (HTTP 403…)", path /r/typescript/about).
    t.is(problem.code, 'upstream_blocked');
    t.is(problem.details!.path, undefined, 'no path of another run');
    const resumeAt = Date.parse(problem.details!.resume_at as string);
    t.true(resumeAt >= blockedAt + 60_000 && resumeAt <= Date.now() + 60_000, String(problem.details!.resume_at));
    t.like(problem.details, { blocked_status: 403, cooldown_seconds: 60 });
    t.true(Date.parse(problem.details!.blocked_at as string) >= blockedAt - 1000);
    t.regex(problem.message, new RegExp(`rests until ${problem.details!.resume_at as string}`));
  },
);

test.serial(
  '5xx and timeouts are retried with backoff; a source that keeps timing out fails with upstream_timeout',
  async (t) => {
    fake.fault(/^\/comments\/1q2w3e5$/, { kind: 'status', status: 503 });
    const retried = await scrape({ urls: ['https://redd.it/1q2w3e5'] });
    t.deepEqual(ids(retried.out.items), ['t3_1q2w3e5']);
    t.is(retried.requests.length, 2);
    fake.fault(/^\/comments\/1q2w3e6$/, { kind: 'hang' });
    const slow = await scrape(
      { urls: ['https://redd.it/1q2w3e6'], skip_comments: true },
      { forum: { request_timeout_seconds: 0.3 } },
    );
    t.deepEqual(ids(slow.out.items), ['t3_1q2w3e6'], 'the retry after a timeout succeeded');
    fake.fault(/^\/comments\/1q2w3e7$/, { kind: 'hang' }, 2);
    const dead = await scrape(
      { urls: ['https://redd.it/1q2w3e7'] },
      { forum: { request_timeout_seconds: 0.3, max_retries: 1 } },
    );
    t.like(dead.out.sources[0], { status: 'failed', problem: { code: 'upstream_timeout' } });
  },
);

test.serial('/api/morechildren is never called concurrently, even by parallel runs sharing a credential', async (t) => {
  const c = client();
  fake.maxMoreInFlight = 0;
  await Promise.all([1, 2, 3].map(() => scrape({ urls: ['https://redd.it/1q2w3e4'] }, { c })));
  t.is(fake.maxMoreInFlight, 1);
});
