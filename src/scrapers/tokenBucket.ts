import { setTimeout as sleep } from 'node:timers/promises';

/** A wait at least this long (a pause from the upstream, not the normal pacing) is reported to the run. */
export const VISIBLE_WAIT_MS = 5000;

/**
 * What an upstream request of a run carries: the run's abort signal (cancellation) and where to report
 * a long wait for the upstream's rate limit (`resumeAt`, then null when it ends), so the run can say
 * `waiting_for_rate_limit` instead of stalling silently.
 */
export interface RequestScope {
  signal?: AbortSignal | undefined;
  onWait?: ((resumeAt: Date | null) => void) | undefined;
}

/**
 * Sleeps `ms` for a run's request; a wait of VISIBLE_WAIT_MS or more is reported through the scope
 * before it starts and cleared when it ends (also when the run is cancelled during it).
 */
export async function waitFor(ms: number, scope?: RequestScope): Promise<void> {
  const visible = ms >= VISIBLE_WAIT_MS && scope?.onWait;
  if (visible) scope.onWait!(new Date(Date.now() + ms));
  try {
    await sleep(Math.ceil(ms), undefined, { signal: scope?.signal });
  } finally {
    if (visible) scope.onWait!(null);
  }
}

/**
 * One per upstream credential or egress: a token bucket at the configured rate with a small burst, plus
 * pauses from the upstream's own signals (rate-limit headers, retry-after), which can only slow it down.
 * A pause holds every caller at once, so each waits it out itself (and its run says so); only the tokens
 * are handed out in turn.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private notBefore = 0;
  /** Tokens are handed out one caller at a time, so callers waiting for one keep their order. */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly perMinute: number,
    private readonly burst: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  async acquire(scope?: RequestScope): Promise<void> {
    for (;;) {
      await this.untilResumed(scope);
      const turn = this.chain.then(() => this.take(scope));
      this.chain = turn.catch(() => undefined);
      // False: a pause began while this caller was in line; it waits that out on its own, then queues again.
      if (await turn) return;
    }
  }

  /** Postpones every request by `ms` from now (rate-limit headers, a 429's retry-after). */
  pause(ms: number): void {
    this.notBefore = Math.max(this.notBefore, this.now() + ms);
  }

  /** When the next request may leave because of an upstream pause (0 when none is pending). */
  get pausedUntil(): number {
    return this.notBefore > this.now() ? this.notBefore : 0;
  }

  private async untilResumed(scope?: RequestScope): Promise<void> {
    for (let ms = this.notBefore - this.now(); ms > 0; ms = this.notBefore - this.now()) await waitFor(ms, scope);
  }

  private async take(scope?: RequestScope): Promise<boolean> {
    for (;;) {
      scope?.signal?.throwIfAborted();
      const now = this.now();
      if (this.notBefore > now) return false;
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 60_000) * this.perMinute);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return true;
      }
      await waitFor(((1 - this.tokens) / this.perMinute) * 60_000, scope);
    }
  }
}
