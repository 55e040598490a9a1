/**
 * Counts failed authentications per source address in a fixed window. Past `maxFailures` within
 * `windowMs` the address is refused (429) until its window ends, without checking the key it presents
 * against anything that costs more than a hash. The table is bounded: past `maxAddresses` the oldest
 * entries are dropped first, so spoofing many addresses cannot grow memory.
 */
export class FailureThrottle {
  private readonly entries = new Map<string, { count: number; windowEnds: number }>();

  constructor(
    private readonly opts: { maxFailures: number; windowMs: number; maxAddresses?: number; now?: () => number },
  ) {}

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  /** Seconds until `address` may try again, or 0 when it may try now. */
  blockedFor(address: string): number {
    const e = this.entries.get(address);
    if (!e) return 0;
    const left = e.windowEnds - this.now();
    if (left <= 0) {
      this.entries.delete(address);
      return 0;
    }
    return e.count >= this.opts.maxFailures ? Math.ceil(left / 1000) : 0;
  }

  failed(address: string): void {
    const now = this.now();
    let e = this.entries.get(address);
    if (!e || e.windowEnds <= now) {
      e = { count: 0, windowEnds: now + this.opts.windowMs };
      this.entries.delete(address);
      this.entries.set(address, e);
    }
    e.count++;
    const max = this.opts.maxAddresses ?? 10_000;
    while (this.entries.size > max) this.entries.delete(this.entries.keys().next().value!);
  }

  succeeded(address: string): void {
    this.entries.delete(address);
  }
}
