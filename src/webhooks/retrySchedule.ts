/** How retries of one webhook message are spaced ([webhooks] first_retry_seconds, max_retry_delay_seconds, jitter). */
export interface RetryPolicy {
  firstRetryMs: number;
  maxDelayMs: number;
  jitter: number;
}

/**
 * The delay before attempt `attempt + 1` after `attempt` failed attempts (1 = the first attempt failed):
 * first_retry doubling per failure, capped at max_retry_delay, then scaled by a uniform factor in
 * [1 - jitter, 1 + jitter] so endpoints that failed together do not retry together.
 */
export function retryDelayMs(failedAttempts: number, p: RetryPolicy, random: () => number = Math.random): number {
  const exp = Math.min(Math.max(failedAttempts - 1, 0), 40);
  const base = Math.min(p.firstRetryMs * 2 ** exp, p.maxDelayMs);
  return Math.max(0, Math.round(base * (1 + p.jitter * (2 * random() - 1))));
}

/** The nominal (jitter-free) delays of the first `n` retries, for the docs and the API. */
export function nominalSchedule(p: RetryPolicy, n: number): number[] {
  return Array.from({ length: n }, (_, i) => retryDelayMs(i + 1, { ...p, jitter: 0 }));
}
