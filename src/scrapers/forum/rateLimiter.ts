export interface RateLimitHeaders {
  remaining: number;
  used: number;
  reset: number;
}

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
