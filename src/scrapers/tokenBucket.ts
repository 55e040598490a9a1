import { setTimeout as sleep } from 'node:timers/promises';

/**
 * One per upstream credential or egress: a token bucket at the configured rate with a small burst, plus
 * pauses from the upstream's own signals (rate-limit headers, retry-after), which can only slow it down.
 */
export class TokenBucket {
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

  /** Postpones every request by `ms` from now (rate-limit headers, a 429's retry-after). */
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
