/**
 * Places scraper benchmark against the fake maps server (a separate nice-19 process with emulated network
 * latency, replaying the real-format payloads): places/s for search only, with include_details (one
 * preview per place) and with reviews (two listugcposts pages per place), unthrottled so that the scraper,
 * not the politeness limits, is measured; and the parse time per place page / preview / search place.
 * Usage: npx tsx bench/places.ts [--latency 20] [--places 200]   -> prints JSON, writes bench/results/places.json
 */
import { fork } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, setPriority } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mapPlace } from '../src/scrapers/places/items.js';
import { MapsClient } from '../src/scrapers/places/mapsClient.js';
import { detailJsonFromPage, detailPlace, parseGoogleJson, searchPlaces } from '../src/scrapers/places/placeArray.js';
import { HttpPlaceMediaProvider } from '../src/scrapers/places/placeMedia.js';
import { PlacesScraper } from '../src/scrapers/places/placesScraper.js';
import { PlacesScrapeRequest } from '../src/scrapers/places/request.js';

const { values } = parseArgs({
  options: { latency: { type: 'string', default: '20' }, places: { type: 'string', default: '200' } },
});
const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const SHARED = process.env.VIGIL_SHARED_DIR ?? resolve(REPO, '../shared');
const GMAPS = join(SHARED, 'fixtures/scrapers/gmaps');
const r2 = (v: number) => Math.round(v * 100) / 100;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const ctx = {
  scrapedAt: new Date().toISOString(),
  language: 'en',
  searchString: null,
  rank: null,
  includeDetails: true,
};

/** Microseconds per call of `fn`, after a warm-up. */
function time(fn: () => void, n = 5000): { p50_us: number; p95_us: number; mean_us: number } {
  for (let i = 0; i < 500; i++) fn();
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    fn();
    xs.push((performance.now() - t) * 1000);
  }
  return { p50_us: r2(pct(xs, 50)), p95_us: r2(pct(xs, 95)), mean_us: r2(xs.reduce((a, b) => a + b, 0) / n) };
}

const page = readFileSync(join(GMAPS, 'place_page.html'), 'utf8');
const preview = readFileSync(join(GMAPS, 'place_preview.txt'), 'utf8');
const search = readFileSync(join(GMAPS, 'search_tbm_map.txt'), 'utf8');
const parse = {
  place_page_html: time(() => {
    mapPlace(detailPlace(parseGoogleJson(detailJsonFromPage(page)!))!.place, ctx);
  }),
  preview_json: time(() => {
    mapPlace(detailPlace(parseGoogleJson(preview))!.place, ctx);
  }),
  search_payload_2_places: time(() => {
    for (const p of searchPlaces(parseGoogleJson(search))) mapPlace(p, { ...ctx, includeDetails: false });
  }),
};

const latency = Number(values.latency);
const child = fork(fileURLToPath(new URL('./fakeMapsServer.ts', import.meta.url)), [], {
  execArgv: process.execArgv,
  env: { ...process.env, FAKE_MAPS_LATENCY_MS: String(latency) },
});
const { url } = await new Promise<{ url: string }>((r) => child.once('message', (m) => r(m as never)));
setPriority(child.pid!, 19);
const client = new MapsClient({
  baseUrl: url,
  userAgent: 'bench',
  requestsPerMinute: 1e6,
  burst: 1e6,
  jitterMs: 0,
  requestTimeoutMs: 20_000,
  maxRetries: 0,
  retryBackoffMs: 0,
  blockedCooldownMs: 0,
});

async function scenario(name: string, body: Record<string, unknown>) {
  const req = PlacesScrapeRequest.parse(body);
  const before = client.stats.requests;
  const t = performance.now();
  const out = await new PlacesScraper(
    client,
    new HttpPlaceMediaProvider(client),
    req,
    { places: req.max_places, reviews: req.max_places * req.max_reviews },
    { maxSearchPages: 50 },
  ).run();
  const seconds = (performance.now() - t) / 1000;
  if (out.sources.some((s) => s.status !== 'ok')) throw new Error(`${name}: ${JSON.stringify(out.sources)}`);
  const reviews = out.items.reduce((s: number, i) => s + (i as { reviews: unknown[] }).reviews.length, 0);
  return {
    places: out.items.length,
    reviews,
    upstream_requests: client.stats.requests - before,
    seconds: r2(seconds),
    places_per_second: r2(out.items.length / seconds),
  };
}

const n = Number(values.places);
const scrape = {
  search_only: await scenario('search', { search_queries: [`bench ${n} places`], max_places: n }),
  include_details: await scenario('details', {
    search_queries: [`details ${n} places`],
    max_places: n,
    include_details: true,
  }),
  reviews_10_per_place: await scenario('reviews', {
    search_queries: [`reviews ${Math.min(n, 100)} places`],
    max_places: Math.min(n, 100),
    max_reviews: 10,
  }),
};
await client.close();
child.disconnect();

const result = {
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    node: process.version,
    note: 'shared 2-core dev box with other agents running: indicative numbers',
  },
  fake_upstream: {
    latency_ms: latency,
    separate_process: true,
    nice: 19,
    note: 'unthrottled client (no rate limit, no jitter), sequential requests as in production',
  },
  parse_per_call: parse,
  scrape,
  at_default_politeness: {
    note: 'requests_per_minute = 30 (+ up to 1 s jitter) bounds production: search ≈ 20 places per request, details and reviews add requests per place',
    search_only_places_per_second: r2((30 / 60) * 20),
    include_details_places_per_second: r2(30 / 60 / (1 + 1 / 20)),
  },
};
console.log(JSON.stringify(result, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/places.json'), `${JSON.stringify(result, null, 2)}\n`);
process.exit(0);
