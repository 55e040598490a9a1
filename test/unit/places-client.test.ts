import test from 'ava';
import { isApiError } from '../../src/contract/errors.js';
import { MapsClient, type MapsClientOptions } from '../../src/scrapers/places/mapsClient.js';
import { searchPath, WORLD } from '../../src/scrapers/places/mapsRequests.js';
import { HttpPlaceMediaProvider } from '../../src/scrapers/places/placeMedia.js';
import { PlacesScraper } from '../../src/scrapers/places/placesScraper.js';
import { PlacesScrapeRequest } from '../../src/scrapers/places/request.js';
import { FakeMaps, REAL_QUERY } from '../helpers/fakeMaps.js';

let fake: FakeMaps;
test.before(async () => {
  fake = await FakeMaps.start();
});
test.after.always(async () => {
  await fake?.close();
});

const options = (over: Partial<MapsClientOptions> = {}): MapsClientOptions => ({
  baseUrl: fake.url,
  userAgent: 'vigil-test',
  requestsPerMinute: 60_000,
  burst: 1000,
  jitterMs: 0,
  requestTimeoutMs: 5000,
  maxRetries: 2,
  retryBackoffMs: 5,
  blockedCooldownMs: 0,
  ...over,
});
const run = (client: MapsClient, body: Record<string, unknown>) => {
  const req = PlacesScrapeRequest.parse(body);
  return new PlacesScraper(client, new HttpPlaceMediaProvider(client), req, {
    places: req.max_places,
    reviews: req.max_places * req.max_reviews,
  }).run();
};

test.serial('the cookie and user agent go out on every request', async (t) => {
  const client = new MapsClient(options({ cookie: 'SOCS=CAISNQ' }));
  try {
    const out = await run(client, { search_queries: [REAL_QUERY], max_reviews: 1 });
    t.is(out.items.length, 2);
    const mine = fake.requests;
    t.deepEqual(
      mine.map((r) => r.path),
      ['/search', '/maps/rpc/listugcposts', '/maps/rpc/listugcposts'],
      'one search page, one review page per place',
    );
    t.true(mine.every((r) => r.headers.cookie === 'SOCS=CAISNQ' && r.headers['user-agent'] === 'vigil-test'));
  } finally {
    await client.close();
  }
});

test.serial('a request that hangs times out after its retries with upstream_timeout', async (t) => {
  fake.fault(/hang-me/, { kind: 'hang' }, 2);
  const client = new MapsClient(options({ requestTimeoutMs: 300, maxRetries: 1 }));
  try {
    const e = await t.throwsAsync(client.get(searchPath('hang-me', 'en', WORLD, 0)));
    t.true(isApiError(e));
    t.is((e as any).code, 'upstream_timeout');
    t.is(client.stats.retries, 1);
    t.is(fake.requests.filter((r) => r.query.get('q') === 'hang-me').length, 2);
  } finally {
    await client.close();
  }
});

test.serial(
  'circuit breaker: after a sorry page the client fails fast for the cool-down, without asking Google',
  async (t) => {
    const client = new MapsClient(options({ blockedCooldownMs: 60_000 }));
    try {
      const first = await run(client, { search_queries: ['sorry'] });
      t.is(first.sources[0]!.problem!.code, 'unusual_traffic');
      const before = fake.requests.length;
      const second = await run(client, { search_queries: [REAL_QUERY] });
      // 37.9e: before, a later run got the first run's problem verbatim (its message, status and path).
      const problem = second.sources[0]!.problem!;
      t.is(problem.code, 'unusual_traffic', 'a later run is told why the egress rests');
      t.is(problem.details!.path, undefined, 'no path of another run');
      t.like(problem.details, { blocked_status: 429, cooldown_seconds: 60 });
      t.true(Date.parse(problem.details!.resume_at as string) > Date.now() + 55_000);
      t.regex(problem.message, /rests until \d{4}-\d\d-\d\dT/);
      t.is(second.items.length, 0);
      t.is(fake.requests.length, before, 'nothing was sent during the cool-down');
      t.is(client.stats.blocked, 1);
    } finally {
      await client.close();
    }
  },
);

test.serial("5xx is retried with backoff, then reported as upstream_unavailable; 404 is the caller's", async (t) => {
  fake.fault(/always-503/, { kind: 'status', status: 503 }, 10);
  const client = new MapsClient(options({ maxRetries: 2 }));
  try {
    const e = await t.throwsAsync(client.get(searchPath('always-503', 'en', WORLD, 0)));
    t.is((e as any).code, 'upstream_unavailable');
    t.is(fake.requests.filter((r) => r.query.get('q') === 'always-503').length, 3);
    const missing = await client.get('/maps/preview/place?pb=!1m2!1snothing');
    t.is(missing.status, 404);
  } finally {
    await client.close();
  }
});

test.serial('an unreachable upstream is upstream_unreachable', async (t) => {
  const client = new MapsClient(options({ baseUrl: 'http://127.0.0.1:1', maxRetries: 0 }));
  try {
    const e = await t.throwsAsync(client.get('/search?tbm=map&q=x'));
    t.is((e as any).code, 'upstream_unreachable');
  } finally {
    await client.close();
  }
});
