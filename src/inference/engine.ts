import { cpus } from 'node:os';
import { Worker } from 'node:worker_threads';
import { ApiError, Errors } from '../contract/errors.js';
import type { LivenessModelSpec } from '../models/catalog.js';
import type { InstalledPack } from '../models/installed.js';
import { ConcurrencyLimiter } from './limiter.js';
import type { AnalyzeRequest, AnalyzeResult } from './pipeline.js';
import type { WorkerInit, WorkerJob, WorkerReply } from './protocol.js';
import { availableProviders, type OptimizationLevel, type ProviderName } from './sessions.js';
import { startWorkerThread } from './workerThread.js';
import { hostProviderReport } from './providers.js';

export interface EngineOptions {
  pack: InstalledPack;
  providers: ProviderName[];
  deviceId: number;
  /** Inference worker threads; each runs one job at a time. */
  workers: number;
  intraOpThreads: number;
  graphOptimization: OptimizationLevel | 'auto';
  warmupSizes: [number, number][];
  /** Verified liveness model files; absent when the addon is disabled. */
  liveness?: (LivenessModelSpec & { path: string })[];
}

/** Told about every analysis (metrics): time waited for a worker, and the pipeline's stage timings when it succeeded. */
export interface EngineObserver {
  job(waitSeconds: number, timings: AnalyzeResult['timings'] | null): void;
}

interface Slot { worker: Worker; busy: boolean; pending?: { resolve: (r: AnalyzeResult) => void; reject: (e: unknown) => void } }

/** "auto" sizing for this host: one worker per two cores, and the cores split between the workers. */
export function resolveThreading(maxConcurrency: number | 'auto', intraOp: number | 'auto', cores = cpus().length): { workers: number; intraOpThreads: number } {
  const workers = maxConcurrency === 'auto' ? Math.max(1, Math.floor(cores / 2)) : maxConcurrency;
  const intraOpThreads = intraOp === 'auto' ? Math.max(1, Math.floor(cores / workers)) : intraOp;
  return { workers, intraOpThreads };
}

function createWorker(workerData: WorkerInit): Worker {
  return startWorkerThread('worker', workerData);
}

/**
 * Owns the inference worker threads and the one concurrency limiter every caller goes through. A job
 * holds its slot until its worker is done, even if the caller gave up, because that compute is real.
 */
export class InferenceEngine {
  private readonly slots: Slot[] = [];
  private readonly limiter: ConcurrencyLimiter;
  private nextId = 1;
  private closed = false;
  /** Set once by the daemon (metrics); null = nobody listens. */
  observer: EngineObserver | null = null;
  readonly startup: { loadMs: number; warmupMs: number; optimization: Record<string, OptimizationLevel> } = { loadMs: 0, warmupMs: 0, optimization: {} };

  private constructor(readonly options: EngineOptions) {
    this.limiter = new ConcurrencyLimiter(options.workers);
  }

  static async start(options: EngineOptions): Promise<InferenceEngine> {
    const missing = options.providers.filter((p) => !availableProviders().includes(p));
    if (missing.length > 0) {
      const reasons = Object.fromEntries(hostProviderReport().filter((r) => missing.includes(r.name as ProviderName)).map((r) => [r.name, r.reason]));
      throw Errors.executionProviderUnavailable(missing, availableProviders(), reasons);
    }
    const engine = new InferenceEngine(options);
    try {
      await Promise.all(Array.from({ length: options.workers }, () => engine.spawn()));
    } catch (e) {
      await engine.close();
      throw e;
    }
    return engine;
  }

  private workerInit(): WorkerInit {
    const { pack } = this.options;
    return {
      detector: { ...pack.detector }, recognizer: { ...pack.recognizer }, providers: this.options.providers,
      deviceId: this.options.deviceId, intraOpThreads: this.options.intraOpThreads, graphOptimization: this.options.graphOptimization, warmupSizes: this.options.warmupSizes,
      ...(this.options.liveness ? { liveness: this.options.liveness } : {}),
    };
  }

  private spawn(): Promise<void> {
    const worker = createWorker(this.workerInit());
    const slot: Slot = { worker, busy: false };
    return new Promise((resolve, reject) => {
      let ready = false;
      worker.on('message', (msg: WorkerReply) => {
        if (msg.type === 'ready') {
          ready = true;
          this.startup.loadMs = Math.max(this.startup.loadMs, msg.loadMs);
          this.startup.warmupMs = Math.max(this.startup.warmupMs, msg.warmupMs);
          this.startup.optimization = msg.optimization;
          this.slots.push(slot);
          resolve();
        } else if (msg.type === 'failed') {
          reject(msg.addonInvalid
            ? Errors.addonModelInvalid(`The liveness addon's models could not be loaded: ${msg.message}`)
            : Errors.modelLoadFailed(msg.message));
        } else {
          const pending = slot.pending;
          slot.pending = undefined;
          slot.busy = false;
          if (!pending) return;
          if (msg.error) {
            const err = msg.error.internal ? new Error(msg.error.message) : ApiError.revive(msg.error);
            pending.reject(err);
          } else pending.resolve(msg.result!);
        }
      });
      worker.on('error', (e) => {
        if (!ready) reject(e);
        slot.pending?.reject(e);
        slot.pending = undefined;
      });
      worker.on('exit', (code) => {
        const i = this.slots.indexOf(slot);
        if (i >= 0) this.slots.splice(i, 1);
        slot.pending?.reject(new Error(`inference worker exited with code ${code}`));
        slot.pending = undefined;
        if (!ready) reject(new Error(`inference worker exited with code ${code} during startup`));
        // A worker that died under load is replaced so capacity does not shrink for the life of the process.
        else if (!this.closed) this.spawn().catch(() => undefined);
      });
    });
  }

  /** Runs one analysis; waits (FIFO) for a free worker, leaving the queue if `signal` aborts first. */
  async analyze(request: AnalyzeRequest, signal?: AbortSignal): Promise<AnalyzeResult> {
    if (this.closed) throw Errors.engineStopped();
    const observer = this.observer;
    if (!observer) return this.limiter.run(() => this.dispatch(request), signal);
    const queued = performance.now();
    let waited = 0;
    let timings: AnalyzeResult['timings'] | null = null;
    try {
      const result = await this.limiter.run(() => {
        waited = (performance.now() - queued) / 1000;
        return this.dispatch(request);
      }, signal);
      timings = result.timings;
      return result;
    } finally {
      observer.job(waited, timings);
    }
  }

  private dispatch(request: AnalyzeRequest): Promise<AnalyzeResult> {
    const slot = this.slots.find((s) => !s.busy);
    if (!slot) return Promise.reject(Errors.inferenceUnavailable());
    slot.busy = true;
    const job: WorkerJob = { id: this.nextId++, request };
    return new Promise((resolve, reject) => {
      slot.pending = { resolve, reject };
      slot.worker.postMessage(job);
    });
  }

  stats(): ReturnType<ConcurrencyLimiter['stats']> & { workers: number; intra_op_threads: number } {
    return { ...this.limiter.stats(), workers: this.slots.length, intra_op_threads: this.options.intraOpThreads };
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
    this.slots.length = 0;
  }
}
