import { Errors } from '../../contract/errors.js';
import type { VigilConfig } from '../../config/schema.js';
import { registerScraperKind, type ScraperKind } from '../registry.js';
import { forumItemKey, ForumItem } from './items.js';
import { ForumScrapeRequest, type ForumScrapeRequestT } from './request.js';
import { planSources } from './sources.js';
import type { RedditClientOptions } from './redditClient.js';

export function redditClientOptions(config: VigilConfig): RedditClientOptions {
  const f = config.scrapers.forum;
  return {
    authMode: f.auth_mode,
    clientId: f.client_id,
    clientSecret: f.client_secret,
    apiBaseUrl: f.api_base_url,
    tokenUrl: f.token_url,
    anonymousBaseUrl: f.anonymous_base_url,
    userAgent: f.user_agent,
    requestsPerMinute: f.requests_per_minute,
    burst: f.burst,
    requestTimeoutMs: f.request_timeout_seconds * 1000,
    maxRetries: f.max_retries,
    retryBackoffMs: f.retry_backoff_ms,
    maxRetryWaitMs: f.max_retry_wait_seconds * 1000,
    blockedCooldownMs: f.blocked_cooldown_seconds * 1000,
  };
}

export const forumKind: ScraperKind = {
  kind: 'forum',
  toolName: 'forum.scrape',
  title: 'Scrape discussion forum (Reddit)',
  description:
    'Fetch posts, comments, communities or users from Reddit URLs, searches or a community. Returns flat items with dataType post|comment|community|user; each returned item is billed as one unit.',
  request: ForumScrapeRequest,
  item: ForumItem,
  maxItems: (r) => (r as ForumScrapeRequestT).max_items,
  itemKey: forumItemKey,
  preflight: (r) => {
    planSources(r as ForumScrapeRequestT);
  },
  checkConfigured(config) {
    const f = config.scrapers.forum;
    if (!f.enabled) throw Errors.scraperDisabled('forum');
    if (f.auth_mode === 'oauth' && (!f.client_id || !f.client_secret)) {
      throw Errors.scraperNotConfigured();
    }
  },
  async createRunner(config) {
    const [{ RedditClient }, { ForumScraper }] = await Promise.all([
      import('./redditClient.js'),
      import('./forumScraper.js'),
    ]);
    // One client per deployment credential: its rate limiter and token are shared by concurrent runs.
    let client: InstanceType<typeof RedditClient> | null = null;
    return {
      run: async (request, ctx) => {
        client ??= new RedditClient(redditClientOptions(config));
        return new ForumScraper(client, request as ForumScrapeRequestT, ctx.limit, {
          signal: ctx.signal,
          onWait: ctx.onWait,
          seen: ctx.seen,
          saveSample: ctx.saveSample,
          maxMoreRequests: config.scrapers.forum.max_more_requests_per_post,
        }).run();
      },
      close: async () => {
        await client?.close();
      },
    };
  },
};

registerScraperKind(forumKind);
