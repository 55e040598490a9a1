/** A run of changes: when it began and when the last one came. */
export interface Settling {
  since: number;
  lastChange: number;
}

/**
 * Milliseconds before work that waits for changes to settle may start (<= 0: now): `quietMs` after the
 * last change, but at the latest `maxDeferMs` after the first, so a change that never stops still gets it.
 */
export function settleWait(s: Settling, now: number, quietMs: number, maxDeferMs: number): number {
  return Math.min(s.lastChange + quietMs, s.since + maxDeferMs) - now;
}

const BUSY_POLL_MS = 500;

export interface SettleOptions {
  quietMs: number;
  maxDeferMs: number;
  /** The work; called once per run of changes. */
  start: () => void;
  /** False drops the pending start (the thing it was for is gone). */
  live: () => boolean;
  /** While true the start waits (e.g. the previous run's work is still going). */
  busy?: () => boolean;
  /** The clock and the timer (tests drive both). */
  now?: () => number;
  after?: (ms: number, fn: () => void) => void;
}

/**
 * Starts background work once the changes it follows have settled (settleWait). A bulk import commits a
 * batch every few hundred milliseconds: work started at each batch (a 2 GiB snapshot write, an HNSW graph
 * build) is out of date by the next one, so it waits for the import to go quiet. touch() records a change.
 */
export class SettleTimer {
  private due: Settling | null = null;
  private readonly now: () => number;
  private readonly after: (ms: number, fn: () => void) => void;

  constructor(private readonly opts: SettleOptions) {
    this.now = opts.now ?? (() => performance.now());
    this.after = opts.after ?? ((ms, fn) => void setTimeout(fn, ms).unref());
  }

  get pending(): boolean {
    return this.due !== null;
  }

  touch(): void {
    const now = this.now();
    if (this.due) {
      this.due.lastChange = now;
      return;
    }
    const due: Settling = (this.due = { since: now, lastChange: now });
    const tick = () => {
      if (this.due !== due) return;
      if (!this.opts.live()) {
        this.due = null;
        return;
      }
      const wait = this.opts.busy?.()
        ? BUSY_POLL_MS
        : settleWait(due, this.now(), this.opts.quietMs, this.opts.maxDeferMs);
      if (wait > 0) {
        this.after(wait, tick);
        return;
      }
      this.due = null;
      this.opts.start();
    };
    this.after(this.opts.quietMs, tick);
  }

  cancel(): void {
    this.due = null;
  }
}
