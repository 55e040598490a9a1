/**
 * Background work run one at a time: request() starts a run, or, while one runs, asks for exactly one more
 * after it (any number of requests meanwhile share it). Its promise resolves once a run that began after the
 * request has ended, so the caller sees what it asked for done. A failed run is kept in `lastError` (the
 * next request tries again), never thrown at a caller that did not wait.
 */
export class CoalescingRun {
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  lastError: unknown = null;

  constructor(private readonly work: () => Promise<void>) {}

  request(): Promise<void> {
    if (!this.running) return this.start();
    return (this.queued ??= this.running.then(() => {
      this.queued = null;
      return this.start();
    }));
  }

  /** Resolves when nothing runs or is queued. */
  idle(): Promise<void> {
    return this.queued ?? this.running ?? Promise.resolve();
  }

  private start(): Promise<void> {
    const run: Promise<void> = (this.running = this.work()
      .then(
        () => {
          this.lastError = null;
        },
        (e: unknown) => {
          this.lastError = e;
        },
      )
      .finally(() => {
        if (this.running === run) this.running = null;
      }));
    return run;
  }
}
