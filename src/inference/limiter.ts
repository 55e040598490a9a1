import { Errors } from '../contract/errors.js';

/** A waiter's place in the queue: `priority` ones (camera frames) go before every ordinary one (uploads). */
export interface AcquireOptions {
  priority?: boolean;
}

/**
 * FIFO limiter shared by every caller of model work (HTTP requests and RTSP monitors). A waiter whose
 * AbortSignal fires (request deadline, client gone) leaves the queue without taking a slot. Priority waiters
 * are granted first (FIFO among themselves), so a queue of uploads never delays a camera frame by more
 * than one job (issue 36.1); monitors are paced by their inference_fps and hold one frame each.
 */
export class ConcurrencyLimiter {
  private active = 0;
  private peak = 0;
  private readonly queue: {
    grant: () => void;
    reject: (e: unknown) => void;
    signal?: AbortSignal;
    onAbort?: () => void;
    priority: boolean;
  }[] = [];

  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new Error('limiter capacity must be at least 1');
  }

  async acquire(signal?: AbortSignal, options: AcquireOptions = {}): Promise<() => void> {
    if (signal?.aborted) throw abortReason(signal);
    if (this.active < this.capacity && this.queue.length === 0) return this.take();
    const priority = options.priority === true;
    return new Promise((resolve, reject) => {
      const entry: (typeof this.queue)[number] = { grant: () => resolve(this.take()), reject, signal, priority };
      if (signal) {
        entry.onAbort = () => {
          const i = this.queue.indexOf(entry);
          if (i >= 0) this.queue.splice(i, 1);
          reject(abortReason(signal));
        };
        signal.addEventListener('abort', entry.onAbort, { once: true });
      }
      // Behind the last priority waiter when this is one, else at the end.
      const at = priority ? this.queue.findIndex((w) => !w.priority) : -1;
      if (at < 0) this.queue.push(entry);
      else this.queue.splice(at, 0, entry);
    });
  }

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal, options: AcquireOptions = {}): Promise<T> {
    const release = await this.acquire(signal, options);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  stats(): { max_concurrency: number; active: number; waiting: number; peak_active: number } {
    return { max_concurrency: this.capacity, active: this.active, waiting: this.queue.length, peak_active: this.peak };
  }

  private take(): () => void {
    this.active++;
    this.peak = Math.max(this.peak, this.active);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      const next = this.queue.shift();
      if (next) {
        if (next.signal && next.onAbort) next.signal.removeEventListener('abort', next.onAbort);
        next.grant();
      }
    };
  }
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason instanceof Error ? signal.reason : Errors.requestTimeout();
}
