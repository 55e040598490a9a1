import { setTimeout as sleep } from 'node:timers/promises';

export interface RateLimitHeaders { remaining: number; used: number; reset: number }

/** Reddit's accounting window (10 minutes). */
const WINDOW_SECONDS = 600;

/** x-ratelimit-remaining (a float string), -used and -reset; null when the response carries none. */
export function parseRateLimitHeaders(get: (name: string) => string | undefined): RateLimitHeaders | null {
  const remaining = Number.parseFloat(get('x-ratelimit-remaining') ?? '');
  const used = Number.parseInt(get('x-ratelimit-used') ?? '', 10);
  const reset = Number.parseInt(get('x-ratelimit-reset') ?? '', 10);
  if (!Number.isFinite(remaining) || !Number.isFinite(reset)) return null;
  return { remaining, used: Number.isFinite(used) ? used : 0, reset };
}

/**
 * Seconds to wait before the next request, as prawcore's RateLimiter computes it: nothing while the
 * client is behind the even pace of the window, up to 10 s when it runs ahead, the whole reset when
 * the window is spent.
 */
export function headerDelaySeconds(h: RateLimitHeaders, window = WINDOW_SECONDS): number {
  if (h.remaining <= 0) return Math.max(1, h.reset);
  const onPaceAt = window - (window / (h.remaining + h.used)) * h.used;
  return Math.min(h.reset, Math.max(h.reset - onPaceAt, 0), 10);
}

/**
 * One per credential (Reddit counts per OAuth client id): a token bucket at the configured rate with a
 * small burst, plus the upstream's own headers, which can only slow it down.
 */
export class RedditRateLimiter {
  private tokens: number;
  private last: number;
  private notBefore = 0;
  /** Requests admitted one at a time, so waiting callers keep their order. */
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly perMinute: number, private readonly burst: number, private readonly now: () => number = Date.now) {
    this.tokens = burst;
    this.last = now();
  }

  acquire(signal?: AbortSignal): Promise<void> {
    const turn = this.chain.then(() => this.take(signal));
    this.chain = turn.catch(() => undefined);
    return turn;
  }

  /** Feeds the headers of a response back; they can postpone the next request. */
  update(h: RateLimitHeaders | null): void {
    if (!h) return;
    const wait = headerDelaySeconds(h) * 1000;
    if (wait > 0) this.notBefore = Math.max(this.notBefore, this.now() + wait);
  }

  /** Postpones every request (a 429's retry-after). */
  pause(ms: number): void {
    this.notBefore = Math.max(this.notBefore, this.now() + ms);
  }

  private async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const now = this.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 60_000) * this.perMinute);
      this.last = now;
      const wait = Math.max(this.notBefore - now, this.tokens >= 1 ? 0 : ((1 - this.tokens) / this.perMinute) * 60_000);
      if (wait <= 0) {
        this.tokens -= 1;
        return;
      }
      await sleep(Math.ceil(wait), undefined, { signal });
    }
  }
}
