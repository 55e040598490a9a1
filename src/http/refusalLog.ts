/**
 * The request log of refused requests (429), aggregated per client address: a flood of wrong keys wrote
 * one line per 429, 66 MB of log in 2 minutes (issue 36.1). The first refusal of an address in an
 * interval is logged as every request is; the others are only counted, and one line per address reports
 * their count when the interval ends. Bounded: past `maxAddresses` addresses in one interval the rest are
 * counted under OTHER_ADDRESSES.
 */
export const OTHER_ADDRESSES = 'other';

export class RefusalLog {
  /** Refusals of each address in this interval after its first (which was logged). */
  private counts = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly report: (address: string, refused: number, intervalSeconds: number) => void,
    private readonly intervalMs = 60_000,
    private readonly maxAddresses = 1000,
  ) {}

  /** Whether this refusal gets its own log line (the first of its address in the interval); else it is counted. */
  note(address: string): boolean {
    const key = this.counts.has(address) || this.counts.size < this.maxAddresses ? address : OTHER_ADDRESSES;
    const n = this.counts.get(key);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.intervalMs);
      this.timer.unref();
    }
    this.counts.set(key, n === undefined ? (key === OTHER_ADDRESSES ? 1 : 0) : n + 1);
    return n === undefined && key !== OTHER_ADDRESSES;
  }

  /** Reports the counted refusals and starts a new interval (the timer calls it; close() too). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const counts = this.counts;
    this.counts = new Map();
    for (const [address, refused] of counts) if (refused > 0) this.report(address, refused, this.intervalMs / 1000);
  }
}
