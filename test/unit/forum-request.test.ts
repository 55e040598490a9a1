import test from 'ava';
import { isApiError } from '../../src/contract/errors.js';
import { validate } from '../../src/contract/validation.js';
import { headerDelaySeconds, parseRateLimitHeaders } from '../../src/scrapers/forum/rateLimiter.js';
import { TokenBucket } from '../../src/scrapers/tokenBucket.js';
import { retryAfterSeconds } from '../../src/scrapers/forum/redditClient.js';
import { ForumScrapeRequest } from '../../src/scrapers/forum/request.js';
import { classifyRedditUrl, planSources } from '../../src/scrapers/forum/sources.js';
import { HEADERS } from '../helpers/fakeReddit.js';

const parse = (body: unknown) => validate(ForumScrapeRequest, body);
function rejects(t: any, fn: () => unknown, code: string, message: RegExp) {
  const e = t.throws(fn);
  t.true(isApiError(e), String(e));
  t.is(e.code, code);
  t.regex(e.message, message);
}

test('defaults and ranges of the request', (t) => {
  t.like(parse({ community: 'typescript' }), {
    sort: 'new',
    include_nsfw: false,
    skip_comments: false,
    max_items: 25,
    urls: [],
    search_queries: [],
    search_types: ['post'],
  });
  rejects(t, () => parse({}), 'invalid_request', /at least one source/);
  rejects(
    t,
    () =>
      parse({
        search_queries: Array.from({ length: 11 }, (_, i) => `q${i}`),
        urls: Array.from({ length: 10 }, (_, i) => `https://redd.it/a${i}`),
      }),
    'invalid_request',
    /at most 20 sources/,
  );
  rejects(t, () => parse({ community: 'xy', max_items: 101 }), 'invalid_request', /max_items/);
  rejects(t, () => parse({ community: 'xy', max_items: 0 }), 'invalid_request', /max_items/);
  rejects(t, () => parse({ community: 'typescript', max_comments: -1 }), 'invalid_request', /max_comments/);
  rejects(t, () => parse({ community: 'typescript', sort: 'best' }), 'invalid_request', /sort/);
  rejects(
    t,
    () => parse({ community: 'typescript', post_date_limit: '2026-01-01' }),
    'invalid_request',
    /post_date_limit/,
  );
  rejects(t, () => parse({ community: 'typescript', colour: 'red' }), 'invalid_request', /unknown field\(s\) colour/);
  rejects(t, () => parse({ community: 'a b' }), 'invalid_request', /community/);
  rejects(t, () => parse({ search_queries: [''] }), 'invalid_request', /search_queries/);
  rejects(t, () => parse({ urls: ['ftp://reddit.com/r/x'] }), 'invalid_request', /urls/);
});

test('URL classification', (t) => {
  t.deepEqual(classifyRedditUrl('https://www.reddit.com/r/typescript/comments/1Q2W3E4/title/'), {
    kind: 'post',
    postId: '1q2w3e4',
  });
  t.deepEqual(classifyRedditUrl('https://np.reddit.com/r/typescript/top/?t=week'), {
    kind: 'community',
    name: 'typescript',
    sort: 'top',
    t: 'week',
  });
  t.deepEqual(classifyRedditUrl('https://reddit.com/r/typescript/best'), {
    kind: 'community',
    name: 'typescript',
    sort: 'hot',
    t: null,
  });
  t.deepEqual(classifyRedditUrl('https://m.reddit.com/u/someone/overview'), {
    kind: 'user',
    name: 'someone',
    section: 'overview',
    sort: null,
    t: null,
  });
  t.like(classifyRedditUrl('https://www.reddit.com/search/?q=a%20b&type=sr,user'), {
    kind: 'search',
    q: 'a b',
    community: null,
    types: ['sr', 'user'],
  });
  t.like(classifyRedditUrl('https://www.reddit.com/r/ts/search?q=x&restrict_sr=0'), {
    kind: 'search',
    community: null,
  });
  rejects(t, () => classifyRedditUrl('https://www.reddit.com/r/typescript/s/AbCdEf'), 'unsupported_url', /share link/);
  rejects(t, () => classifyRedditUrl('https://example.com/r/typescript'), 'unsupported_url', /not a reddit.com URL/);
  rejects(
    t,
    () => classifyRedditUrl('https://www.reddit.com/r/typescript/wiki/index'),
    'unsupported_url',
    /community page/,
  );
  rejects(t, () => classifyRedditUrl('https://www.reddit.com/search?sort=new'), 'unsupported_url', /without q/);
});

test('sort and time_filter combinations the upstream does not serve are 400s naming the source', (t) => {
  rejects(
    t,
    () => planSources(parse({ urls: ['https://www.reddit.com/r/typescript'], sort: 'relevance' })),
    'unsupported_sort',
    /r\/typescript: sort "relevance" .*searches only/,
  );
  rejects(
    t,
    () => planSources(parse({ community: 'typescript', sort: 'comments' })),
    'unsupported_sort',
    /community:typescript/,
  );
  rejects(
    t,
    () => planSources(parse({ search_queries: ['x'], sort: 'rising' })),
    'unsupported_sort',
    /search:x: sort "rising" applies to listings only/,
  );
  rejects(
    t,
    () => planSources(parse({ urls: ['https://www.reddit.com/user/bob'], sort: 'rising' })),
    'unsupported_sort',
    /user\/bob/,
  );
  rejects(
    t,
    () => planSources(parse({ community: 'typescript', time_filter: 'week' })),
    'unsupported_sort',
    /time_filter applies to top/,
  );
  rejects(
    t,
    () => planSources(parse({ urls: ['https://www.reddit.com/r/typescript/top?t=decade'] })),
    'unsupported_sort',
    /time filter "decade"/,
  );
  const ok = planSources(
    parse({
      urls: ['https://www.reddit.com/r/typescript/top?t=week', 'https://redd.it/abc'],
      search_queries: ['q'],
      community: 'r/typescript',
      sort: 'relevance',
      time_filter: 'day',
    }),
  );
  t.deepEqual(
    ok.map((s) => s.kind),
    ['community', 'post', 'search'],
  );
  t.like(ok[0], { sort: 'top', t: 'week' });
  t.like(ok[2], { community: 'typescript', sort: 'relevance', t: 'day', types: ['link'] });
  t.like(planSources(parse({ community: 'typescript', sort: 'top', time_filter: 'all' }))[0], {
    kind: 'community',
    sort: 'top',
    t: 'all',
  });
});

test('rate limit headers: prawcore pacing, a spent window waits for the reset, retry-after in seconds or as a date', (t) => {
  const ok = parseRateLimitHeaders((n) => HEADERS.ok[n as keyof typeof HEADERS.ok]);
  t.deepEqual(ok, { remaining: 996, used: 4, reset: 412 });
  t.is(headerDelaySeconds(ok!), 0, 'behind the even pace: no wait');
  const spent = parseRateLimitHeaders((n) => HEADERS.exhausted_429[n as keyof typeof HEADERS.exhausted_429]);
  t.is(headerDelaySeconds(spent!), 37);
  t.is(headerDelaySeconds({ remaining: 10, used: 990, reset: 300 }), 10, 'ahead of pace: capped at 10 s');
  t.is(
    parseRateLimitHeaders(() => undefined),
    null,
  );
  t.is(retryAfterSeconds('37'), 37);
  t.is(retryAfterSeconds(new Date(Date.now() + 5000).toUTCString())! > 3, true);
  t.is(retryAfterSeconds('soon'), null);
});

test('the token bucket admits a burst, then paces at the configured rate', async (t) => {
  let now = 0;
  const limiter = new TokenBucket(60, 2, () => now);
  await limiter.acquire();
  await limiter.acquire();
  let third = false;
  const p = limiter.acquire().then(() => {
    third = true;
  });
  await new Promise((r) => setTimeout(r, 30));
  t.false(third, 'the third request waits for a token');
  now += 1000;
  await p;
  t.true(third);
});

test('37.9a an upstream pause is reported to every caller waiting for it, not only to the first in line', async (t) => {
  const limiter = new TokenBucket(60_000, 10);
  limiter.pause(30_000);
  const waits: Record<string, (Date | null)[]> = { a: [], b: [], c: [] };
  const runs = Object.keys(waits).map((name) => {
    const controller = new AbortController();
    const done = limiter.acquire({ signal: controller.signal, onWait: (at) => waits[name]!.push(at) });
    return {
      controller,
      done: done.then(
        () => 'admitted',
        () => 'cancelled',
      ),
    };
  });
  await new Promise((r) => setTimeout(r, 50));
  // Before: only "a" heard of the wait; "b" and "c" queued behind it without a word.
  for (const name of Object.keys(waits)) {
    t.is(waits[name]!.length, 1, name);
    t.true(Math.abs(waits[name]![0]!.getTime() - limiter.pausedUntil) < 50, name);
  }
  for (const r of runs) r.controller.abort();
  t.deepEqual(await Promise.all(runs.map((r) => r.done)), ['cancelled', 'cancelled', 'cancelled']);
  for (const name of Object.keys(waits)) t.is(waits[name]!.at(-1), null, `${name}: the wait is cleared`);
});
