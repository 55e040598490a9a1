import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../system/workerThread.js';

export type CheckpointMode = 'PASSIVE' | 'TRUNCATE';

/**
 * WAL checkpoints of a database file in a worker thread (checkpointWorker.ts), for writers that turn the
 * connection's automatic checkpoint off (the bulk import), and TRUNCATE ones that shrink the WAL file to
 * nothing after space was reclaimed (SpaceReclaimer). request() starts one, or queues one more behind
 * the running one; idle() resolves once none runs or is queued (a writer that waits for it before its next
 * transaction lets SQLite start the WAL over from its beginning, so the file stays at about one batch).
 * A checkpoint that fails leaves the pages in the WAL, where the next automatic checkpoint takes them.
 * The worker is started on the first request and keeps the process alive only while a checkpoint runs.
 */
export class WalCheckpointer {
  private worker: Worker | null = null;
  private done: (() => void) | null = null;
  private running: Promise<void> | null = null;
  private queued: CheckpointMode | null = null;
  /** Checkpoints run and the last result (for tests and diagnostics). */
  runs = 0;
  last: { busy: number; log: number; checkpointed: number } | { error: string } | null = null;

  constructor(private readonly path: string) {}

  request(mode: CheckpointMode = 'PASSIVE'): void {
    if (this.running) {
      if (this.queued !== 'TRUNCATE') this.queued = mode;
      return;
    }
    this.running = new Promise<void>((resolve) => {
      this.done = resolve;
    });
    const w = this.start();
    w.ref(); // a running checkpoint keeps the process alive; an idle worker does not
    w.postMessage(mode);
  }

  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  close(): void {
    void this.worker?.terminate();
    this.worker = null;
    this.finish();
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = startModuleWorker(import.meta.url, 'checkpointWorker', { path: this.path });
    w.on('message', (m: WalCheckpointer['last']) => {
      this.runs++;
      this.last = m;
      if (this.queued) {
        w.postMessage(this.queued);
        this.queued = null;
      } else {
        this.finish();
      }
    });
    const lost = (e?: Error) => {
      if (this.worker !== w) return;
      this.worker = null;
      this.last = { error: e?.message ?? 'checkpoint worker exited' };
      this.finish();
    };
    w.once('error', lost);
    w.once('exit', () => lost());
    w.unref(); // after the listeners (adding a message listener refs the worker again)
    this.worker = w;
    return w;
  }

  private finish(): void {
    this.worker?.unref();
    const done = this.done;
    this.running = null;
    this.done = null;
    this.queued = null;
    done?.();
  }
}
