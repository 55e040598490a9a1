import { Errors } from '../../contract/errors.js';
import type { VigilConfig } from '../../config/schema.js';
import { registerScraperKind, type ScraperKind } from '../registry.js';
import { PlaceItem, placeItemKey, type PlaceItemT } from './items.js';
import type { MapsClientOptions } from './mapsClient.js';
import { planPlacesSources } from './placesSources.js';
import { PlacesScrapeRequest, type PlacesScrapeRequestT } from './request.js';

export function mapsClientOptions(config: VigilConfig): MapsClientOptions {
  const p = config.scrapers.places;
  return {
    baseUrl: p.base_url,
    userAgent: p.user_agent,
    cookie: p.cookie,
    proxyUrl: p.proxy_url,
    requestsPerMinute: p.requests_per_minute,
    burst: p.burst,
    jitterMs: p.jitter_ms,
    requestTimeoutMs: p.request_timeout_seconds * 1000,
    maxRetries: p.max_retries,
    retryBackoffMs: p.retry_backoff_ms,
    blockedCooldownMs: p.blocked_cooldown_seconds * 1000,
  };
}

export const placesKind: ScraperKind = {
  kind: 'places',
  toolName: 'places.scrape',
  title: 'Scrape map listings (Google Maps places)',
  description:
    'Find places by search queries (scoped by location), Maps URLs or place ids, with optional details, reviews and images. ' +
    'Each returned place is billed as one unit; each delivered review as one review unit (metered apart). reviewsStatus on every place says why reviews are missing.',
  request: PlacesScrapeRequest,
  item: PlaceItem,
  maxItems: (r) => (r as PlacesScrapeRequestT).max_places,
  itemKey: placeItemKey,
  maxReviews: (r) => (r as PlacesScrapeRequestT).max_places * (r as PlacesScrapeRequestT).max_reviews,
  reviewCount: (item) => (item as PlaceItemT).reviews.length,
  preflight: (r) => {
    planPlacesSources(r as PlacesScrapeRequestT);
  },
  checkConfigured(config) {
    if (!config.scrapers.places.enabled) throw Errors.scraperDisabled('places');
  },
  async createRunner(config) {
    const [{ MapsClient }, { PlacesScraper }, { HttpPlaceMediaProvider }] = await Promise.all([
      import('./mapsClient.js'),
      import('./placesScraper.js'),
      import('./placeMedia.js'),
    ]);
    // One client per egress: its rate limit and block cool-down are shared by concurrent runs.
    let client: InstanceType<typeof MapsClient> | null = null;
    return {
      run: async (request, ctx) => {
        client ??= new MapsClient(mapsClientOptions(config));
        return new PlacesScraper(
          client,
          new HttpPlaceMediaProvider(client),
          request as PlacesScrapeRequestT,
          { places: ctx.limit, reviews: ctx.reviewLimit },
          {
            signal: ctx.signal,
            onWait: ctx.onWait,
            seen: ctx.seen,
            saveSample: ctx.saveSample,
            maxSearchPages: config.scrapers.places.max_search_pages,
          },
        ).run();
      },
      close: async () => {
        await client?.close();
      },
    };
  },
};

registerScraperKind(placesKind);
