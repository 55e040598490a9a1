import { Agent, request, type Dispatcher } from 'undici';
import { type ApiError, Errors } from '../../contract/errors.js';
import { TokenBucket, waitFor, type RequestScope } from '../tokenBucket.js';
import { BlockCooldown, backoff, headerOf, isRetryableTransportError, transportError } from '../upstreamHttp.js';
import { headerDelaySeconds, parseRateLimitHeaders } from './rateLimiter.js';

export interface RedditClientOptions {
  authMode: 'oauth' | 'anonymous';
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  apiBaseUrl: string;
  tokenUrl: string;
  anonymousBaseUrl: string;
  userAgent: string;
  requestsPerMinute: number;
  burst: number;
  requestTimeoutMs: number;
  maxRetries: number;
  retryBackoffMs: number;
  maxRetryWaitMs: number;
  blockedCooldownMs: number;
}

export interface RedditClientStats {
  requests: number;
  retries: number;
  tokenFetches: number;
  rateLimitWaits: number;
}

/** Statuses worth another try (prawcore's set); 429 is handled on its own, honouring retry-after. */
const RETRY_STATUSES = new Set([408, 500, 502, 503, 504, 520, 522]);

const blocked = (message: string, details: Record<string, unknown> = {}) => Errors.upstreamBlocked(message, details);

/** Seconds from Retry-After (delta seconds or an HTTP date). */
export function retryAfterSeconds(value: string | undefined, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, (at - now) / 1000);
}

/**
 * Reddit's read API for one credential: app-only OAuth (client credentials; the token is cached and
 * fetched again on a 401), rate limited per credential, bounded retries, typed errors. Anonymous mode
 * (www.reddit.com + .json) exists for operators without an app; Reddit blocks it from most networks.
 */
export class RedditClient {
  readonly stats: RedditClientStats = { requests: 0, retries: 0, tokenFetches: 0, rateLimitWaits: 0 };
  private readonly limiter: TokenBucket;
  private readonly dispatcher: Dispatcher;
  private token: { value: string; expiresAt: number } | null = null;
  private tokenFetch: Promise<string> | null = null;
  private readonly cooldown: BlockCooldown;
  /**
   * /api/morechildren must not run concurrently per credential (Reddit's rule): its requests take turns
   * here, after the rate limiter, so a run waiting for its turn never waits behind another run's rate-limit
   * pause without saying so (each waits out a pause in the limiter, visibly).
   */
  private moreTurn: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: RedditClientOptions) {
    if (o.authMode === 'oauth' && (!o.clientId || !o.clientSecret)) {
      throw Errors.scraperNotConfigured();
    }
    this.limiter = new TokenBucket(o.requestsPerMinute, o.burst);
    this.cooldown = new BlockCooldown("Reddit blocked this app's credential", o.blockedCooldownMs);
    this.dispatcher = new Agent({
      connections: 4,
      headersTimeout: o.requestTimeoutMs,
      bodyTimeout: o.requestTimeoutMs,
      connectTimeout: o.requestTimeoutMs,
    });
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }

  /** GET a JSON document. `path` starts with "/"; raw_json=1 is always added (no HTML-escaped text). */
  get(path: string, params: Record<string, string | number | undefined>, scope?: RequestScope): Promise<unknown> {
    return this.call('GET', path, params, scope);
  }

  /** /api/morechildren, one request at a time per credential. */
  moreChildren(linkId: string, children: string[], sort: string, scope?: RequestScope): Promise<unknown> {
    return this.call(
      'GET',
      '/api/morechildren',
      { api_type: 'json', link_id: linkId, children: children.join(','), sort, limit_children: 'false' },
      scope,
      true,
    );
  }

  /** Runs `send` when the previous one-at-a-time request has ended. */
  private inTurn<T>(send: () => Promise<T>): Promise<T> {
    const turn = this.moreTurn.then(send);
    this.moreTurn = turn.catch(() => undefined);
    return turn;
  }

  private url(path: string, params: Record<string, string | number | undefined>): string {
    const anonymous = this.o.authMode === 'anonymous';
    const base = (anonymous ? this.o.anonymousBaseUrl : this.o.apiBaseUrl).replace(/\/+$/, '');
    const u = new URL(base + (anonymous ? `${path.replace(/\/+$/, '')}.json` : path));
    for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, String(v));
    u.searchParams.set('raw_json', '1');
    return u.toString();
  }

  /** `oneAtATime`: the request (not its rate-limit wait) takes turns with the other such requests. */
  private async call(
    method: 'GET',
    path: string,
    params: Record<string, string | number | undefined>,
    scope?: RequestScope,
    oneAtATime = false,
  ): Promise<unknown> {
    const signal = scope?.signal;
    const url = this.url(path, params);
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      this.cooldown.check();
      const headers: Record<string, string> = { 'user-agent': this.o.userAgent, accept: 'application/json' };
      if (this.o.authMode === 'oauth') headers.authorization = `bearer ${await this.accessToken(signal)}`;
      await this.limiter.acquire(scope);
      this.stats.requests++;
      const send = async () => {
        const res = await request(url, { method, headers, dispatcher: this.dispatcher, signal });
        return { statusCode: res.statusCode, headers: res.headers, body: await res.body.text() };
      };
      let res: { statusCode: number; headers: Dispatcher.ResponseData['headers']; body: string };
      try {
        res = await (oneAtATime ? this.inTurn(send) : send());
      } catch (e) {
        if (signal?.aborted) throw signal.reason;
        if (isRetryableTransportError(e) && attempt < this.o.maxRetries) {
          await this.backoff(attempt, signal);
          continue;
        }
        throw transportError(e, {
          upstream: 'Reddit',
          timeoutMs: this.o.requestTimeoutMs,
          attempts: attempt + 1,
          path,
        });
      }
      const h = (name: string) => headerOf(res.headers, name);
      const rateLimit = parseRateLimitHeaders(h);
      if (rateLimit) this.limiter.pause(headerDelaySeconds(rateLimit) * 1000);
      const type = h('content-type') ?? '';
      const status = res.statusCode;
      const body = res.body;
      if (status === 200 && type.includes('json')) {
        try {
          return JSON.parse(body) as unknown;
        } catch {
          throw Errors.upstreamError('Reddit answered with invalid JSON.', { path });
        }
      }
      if (status === 401 && this.o.authMode === 'oauth' && !refreshed) {
        // An expired or revoked token: fetch a new one once, then retry without spending an attempt.
        refreshed = true;
        this.token = null;
        attempt--;
        continue;
      }
      if (status === 429) {
        const rl = parseRateLimitHeaders(h);
        const waitS = Math.max(retryAfterSeconds(h('retry-after')) ?? 0, rl?.reset ?? 0, 1);
        this.limiter.pause(waitS * 1000);
        if (attempt < this.o.maxRetries && waitS * 1000 <= this.o.maxRetryWaitMs) {
          this.stats.rateLimitWaits++;
          this.stats.retries++;
          await waitFor(waitS * 1000, scope);
          continue;
        }
        throw Errors.upstreamRateLimited(Math.ceil(waitS), path);
      }
      if (RETRY_STATUSES.has(status) && attempt < this.o.maxRetries) {
        await this.backoff(attempt, signal);
        continue;
      }
      throw this.classify(status, type, body, h('location'), path);
    }
  }

  private async backoff(attempt: number, signal?: AbortSignal): Promise<void> {
    this.stats.retries++;
    await backoff(attempt, this.o.retryBackoffMs, signal);
  }

  private classify(status: number, type: string, body: string, location: string | undefined, path: string): ApiError {
    const json = type.includes('json') ? safeJson(body) : null;
    const reason = typeof json?.reason === 'string' ? json.reason : null;
    if (
      (status === 403 && !json) ||
      (status === 200 && !type.includes('json')) ||
      (status >= 300 && status < 400 && /login/.test(location ?? ''))
    ) {
      // HTML where JSON was asked for: Reddit's network-policy block page or a login wall. Stop using
      // this credential for a while instead of hammering (and never report it as an empty success).
      const e = blocked(
        `Reddit blocked the request (HTTP ${status}${/whoa there|blocked/i.test(body) ? ', "blocked due to a network policy"' : ''}).`,
        { status, path, cooldown_seconds: this.o.blockedCooldownMs / 1000 },
      );
      this.cooldown.trip(e, blocked);
      return e;
    }
    if (status === 403 && reason === 'private') return Errors.communityPrivate(path);
    if (status === 403 && reason === 'quarantined') return Errors.communityQuarantined(path);
    if (status === 403) return Errors.upstreamForbidden(reason ?? undefined, path);
    if (status === 404 && reason === 'banned') return Errors.communityBanned(path);
    if (status === 404 || (status >= 300 && status < 400))
      return Errors.notFound('Reddit has nothing at this address.', { path });
    if (status >= 500 || RETRY_STATUSES.has(status))
      return Errors.upstreamUnavailable(`Reddit answered HTTP ${status} after ${this.o.maxRetries + 1} attempts.`, {
        status,
        path,
      });
    if (status === 401) return Errors.upstreamAuthFailed('Reddit rejected the access token twice.', { path });
    return Errors.upstreamError(
      `Reddit answered HTTP ${status}${typeof json?.message === 'string' ? ` (${json.message})` : ''}.`,
      { status, path },
    );
  }

  private accessToken(signal?: AbortSignal): Promise<string> {
    if (this.token && Date.now() < this.token.expiresAt) return Promise.resolve(this.token.value);
    this.tokenFetch ??= this.fetchToken(signal).finally(() => {
      this.tokenFetch = null;
    });
    return this.tokenFetch;
  }

  private async fetchToken(signal?: AbortSignal): Promise<string> {
    this.stats.tokenFetches++;
    const basic = Buffer.from(`${this.o.clientId}:${this.o.clientSecret}`).toString('base64');
    let res: Dispatcher.ResponseData;
    try {
      res = await request(this.o.tokenUrl, {
        method: 'POST',
        dispatcher: this.dispatcher,
        signal,
        headers: {
          authorization: `Basic ${basic}`,
          'content-type': 'application/x-www-form-urlencoded',
          'user-agent': this.o.userAgent,
        },
        body: 'grant_type=client_credentials',
      });
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      throw Errors.upstreamUnreachable(
        `The Reddit token endpoint could not be reached: ${(e as { code?: string }).code ?? (e as Error).message}.`,
      );
    }
    const text = await res.body.text();
    const json = safeJson(text);
    if (res.statusCode !== 200 || typeof json?.access_token !== 'string') {
      if (res.statusCode === 403 && !json)
        throw blocked('Reddit blocked the token request (HTML 403).', { status: 403 });
      throw Errors.upstreamAuthFailed(
        `Reddit refused the app credentials (HTTP ${res.statusCode}${typeof json?.error === 'string' ? `: ${json.error}` : ''}).`,
        { status: res.statusCode },
      );
    }
    const ttl = typeof json.expires_in === 'number' ? json.expires_in : 3600;
    // Renew a minute early so a request never leaves with a token about to expire.
    this.token = { value: json.access_token, expiresAt: Date.now() + Math.max(10, ttl - 60) * 1000 };
    return json.access_token;
  }
}

function safeJson(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
