import { fork, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { VigilConfig } from '../config/schema.js';
import { ApiError, Errors } from '../contract/errors.js';
import type { ScrapeOutcome } from './scrapeResult.js';
import type { WorkerReply, WorkerRequest } from './workerProtocol.js';

interface Pending {
  resolve(o: ScrapeOutcome): void;
  reject(e: ApiError): void;
  onWait(resumeAt: Date | null): void;
}

/** One run as the worker gets it. */
export interface WorkerRun {
  id: string;
  kind: string;
  request: unknown;
  /** Quota-capped item and review limits. */
  limit: number;
  reviewLimit: number;
  /** Item keys the workspace was delivered before (only_new), else empty. */
  seen: string[];
  /** The run started (a date) or stopped (null) waiting for the upstream's rate limit. */
  onWait?: (resumeAt: Date | null) => void;
}

/**
 * The child process that runs scrapes, started on first use with a raised nice value so that the face
 * service keeps the CPU while a scrape runs. If it dies, its runs fail (nothing billed) and the next
 * run starts a new one.
 */
export class ScrapeWorker {
  private child: ChildProcess | null = null;
  private readonly pending = new Map<string, Pending>();
  private closed = false;

  constructor(
    private readonly config: VigilConfig,
    private readonly log: Logger,
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  run(r: WorkerRun): Promise<ScrapeOutcome> {
    if (this.closed) return Promise.reject(Errors.shuttingDown());
    const child = this.ensure();
    return new Promise<ScrapeOutcome>((resolve, reject) => {
      this.pending.set(r.id, { resolve, reject, onWait: r.onWait ?? (() => undefined) });
      this.post(child, {
        type: 'run',
        id: r.id,
        kind: r.kind,
        request: r.request,
        limit: r.limit,
        reviewLimit: r.reviewLimit,
        seen: r.seen,
      });
    });
  }

  /** Asks the worker to stop a run: it answers with what the run delivered so far. False when it is not running here. */
  cancel(id: string): boolean {
    if (!this.pending.has(id) || !this.child) return false;
    this.post(this.child, { type: 'cancel', id });
    return true;
  }

  /** Stops the child. Runs in flight stay "running" in SQLite and are re-queued at the next start. */
  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    this.child = null;
    this.pending.clear();
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(timer);
  }

  private post(child: ChildProcess, m: WorkerRequest): void {
    child.send(m);
  }

  private ensure(): ChildProcess {
    if (this.child) return this.child;
    // From source (tsx) the worker is worker.ts and inherits the tsx loader flags; built, worker.js.
    const entry = fileURLToPath(
      new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './worker.js', import.meta.url),
    );
    const child = fork(entry, [], {
      execArgv: process.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    try {
      setPriority(child.pid!, this.config.scrapers.worker_nice);
    } catch (e) {
      this.log.warn({ err: e }, 'could not lower the scrape worker priority');
    }
    child.on('message', (m: WorkerReply) => {
      if (m.type === 'ready') return;
      const p = this.pending.get(m.id);
      if (!p) return;
      if (m.type === 'waiting') return p.onWait(m.resumeAt === null ? null : new Date(m.resumeAt));
      this.pending.delete(m.id);
      if (m.type === 'done') p.resolve(m.outcome);
      else p.reject(ApiError.revive({ status: 502, ...m.error }));
    });
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = null;
      if (this.closed) return;
      this.log.error({ code, signal, runs: [...this.pending.keys()] }, 'scrape worker exited');
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.reject(Errors.workerCrashed(code, signal));
      }
    });
    this.post(child, { type: 'init', config: this.config });
    this.child = child;
    this.log.info({ pid: child.pid, nice: this.config.scrapers.worker_nice }, 'scrape worker started');
    return child;
  }
}
