import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, ProxyAgent, request, type Dispatcher } from 'undici';
import { Errors } from '../../contract/errors.js';
import { TokenBucket, type RequestScope } from '../tokenBucket.js';
import { BlockCooldown, backoff, headerOf, isRetryableTransportError, transportError } from '../upstreamHttp.js';
import { detectBlock } from './upstreamProblems.js';

export interface MapsClientOptions {
  baseUrl: string;
  userAgent: string;
  /** Sent as Cookie on every request (a SOCS consent cookie, or an operator's signed-in session for reviews). */
  cookie?: string | undefined;
  /** HTTP(S) proxy (user:pass@host:port allowed); requests tunnel through it with CONNECT. */
  proxyUrl?: string | undefined;
  requestsPerMinute: number;
  burst: number;
  /** Random extra pause before each request, 0..jitterMs (Google-facing politeness). */
  jitterMs: number;
  requestTimeoutMs: number;
  maxRetries: number;
  retryBackoffMs: number;
  blockedCooldownMs: number;
}

export interface MapsClientStats {
  requests: number;
  retries: number;
  blocked: number;
}
export interface MapsResponse {
  status: number;
  body: string;
  contentType: string;
}

const RETRY_STATUSES = new Set([408, 500, 502, 503, 504]);

/**
 * Google Maps over plain HTTP for one egress (the direct connection or the configured proxy): one token
 * bucket with jitter, bounded retries of transient failures, and a circuit breaker: after a consent wall
 * or an "unusual traffic" page every request fails fast with that problem for the cool-down, instead of
 * hammering (and instead of an empty success).
 */
export class MapsClient {
  readonly stats: MapsClientStats = { requests: 0, retries: 0, blocked: 0 };
  private readonly limiter: TokenBucket;
  private readonly dispatcher: Dispatcher;
  private readonly cooldown: BlockCooldown;

  constructor(private readonly o: MapsClientOptions) {
    this.limiter = new TokenBucket(o.requestsPerMinute, o.burst);
    this.cooldown = new BlockCooldown('Google refused this egress (IP or proxy)', o.blockedCooldownMs);
    const timeouts = {
      headersTimeout: o.requestTimeoutMs,
      bodyTimeout: o.requestTimeoutMs,
      connectTimeout: o.requestTimeoutMs,
    };
    this.dispatcher = o.proxyUrl
      ? new ProxyAgent({ uri: o.proxyUrl, connections: 4, ...timeouts })
      : new Agent({ connections: 4, ...timeouts });
  }

  async close(): Promise<void> {
    await this.dispatcher.close();
  }

  /**
   * GET `path` (relative to the base URL). Resolves with 2xx/3xx/4xx answers that are not blocks (the
   * caller decides what a 403 or 404 means for it); rejects with a typed ApiError otherwise.
   */
  async get(path: string, scope?: RequestScope): Promise<MapsResponse> {
    const signal = scope?.signal;
    const url = this.o.baseUrl.replace(/\/+$/, '') + path;
    const label = path.split('?')[0]!;
    for (let attempt = 0; ; attempt++) {
      this.cooldown.check();
      await this.limiter.acquire(scope);
      if (this.o.jitterMs > 0) await sleep(Math.round(Math.random() * this.o.jitterMs), undefined, { signal });
      this.stats.requests++;
      const headers: Record<string, string> = {
        'user-agent': this.o.userAgent,
        accept: '*/*',
        'accept-language': 'en',
      };
      if (this.o.cookie) headers.cookie = this.o.cookie;
      let res: Dispatcher.ResponseData;
      try {
        res = await request(url, { method: 'GET', headers, dispatcher: this.dispatcher, signal });
      } catch (e) {
        if (signal?.aborted) throw signal.reason;
        if (isRetryableTransportError(e) && attempt < this.o.maxRetries) {
          await this.backoff(attempt, signal);
          continue;
        }
        throw transportError(e, {
          upstream: 'Google',
          timeoutMs: this.o.requestTimeoutMs,
          attempts: attempt + 1,
          path: label,
          viaProxy: Boolean(this.o.proxyUrl),
        });
      }
      const h = (name: string) => headerOf(res.headers, name);
      const body = await res.body.text().catch((e: unknown) => {
        if (signal?.aborted) throw signal.reason;
        throw e;
      });
      const status = res.statusCode;
      const contentType = h('content-type') ?? '';
      const block = detectBlock({ status, location: h('location'), contentType, body });
      if (block) {
        this.stats.blocked++;
        const err = block.error(block.message, {
          status,
          path: label,
          cooldown_seconds: this.o.blockedCooldownMs / 1000,
        });
        this.cooldown.trip(err, block.error);
        throw err;
      }
      if (RETRY_STATUSES.has(status) && attempt < this.o.maxRetries) {
        await this.backoff(attempt, signal);
        continue;
      }
      if (status >= 500 || RETRY_STATUSES.has(status))
        throw Errors.upstreamUnavailable(`Google answered HTTP ${status} after ${attempt + 1} attempts.`, {
          status,
          path: label,
        });
      return { status, body, contentType };
    }
  }

  private async backoff(attempt: number, signal?: AbortSignal): Promise<void> {
    this.stats.retries++;
    await backoff(attempt, this.o.retryBackoffMs, signal);
  }
}
