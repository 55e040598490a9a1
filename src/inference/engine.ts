import { cpus } from 'node:os';
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
import sharp from 'sharp';
import { ApiError, Errors } from '../contract/errors.js';
import type { LivenessModelSpec } from '../models/catalog.js';
import type { InstalledPack } from '../models/installed.js';
import { DecodeStage, type DecodeStageOptions } from './decodeStage.js';
import { headerDimensions, sniffImageFormat } from './image.js';
import { ConcurrencyLimiter } from './limiter.js';
import type { AnalyzeRequest, AnalyzeResult, PixelSource } from './pipeline.js';
import type { WorkerClose, WorkerInit, WorkerJob, WorkerReply } from './protocol.js';
import { availableProviders, type OptimizationLevel, type ProviderName } from './sessions.js';
import { startWorkerThread } from './workerThread.js';
import { hostProviderReport } from './providers.js';

/** How long a closing worker may take to finish its job and release its models before it is terminated. */
const WORKER_CLOSE_GRACE_MS = 5000;

export interface EngineOptions {
  pack: InstalledPack;
  providers: ProviderName[];
  deviceId: number;
  /** Inference worker threads. */
  workers: number;
  /** Jobs a worker holds at once (default 1); see resolveThreading. The limiter admits workers x this many. */
  jobsPerWorker?: number;
  intraOpThreads: number;
  /** One worker also runs the models with this many threads for a job dispatched while no other job runs (resolveThreading). */
  aloneIntraOpThreads?: number | null;
  graphOptimization: OptimizationLevel | 'auto';
  warmupSizes: [number, number][];
  /** Verified liveness model files; absent when the addon is disabled. */
  liveness?: (LivenessModelSpec & { path: string })[];
  /** The decode stage in front of the workers ([server] image limits); defaults when absent (tests, benches). */
  decode?: DecodeStageOptions;
  /** Uploads whose header shows at most this many pixels are decoded in the inference worker; 0 = always in the decode stage. */
  workerDecodeMaxPixels?: number;
  /** ... and whose file has at most this many bytes (default WORKER_DECODE_MAX_BYTES). */
  workerDecodeMaxBytes?: number;
}

/** [server] defaults of the image shape and time limits. */
export const DEFAULT_DECODE: DecodeStageOptions = { timeoutMs: 10_000, maxSide: 16_384, maxAspectRatio: 20 };

/**
 * Up to Full HD (2.1 Mpx) an upload is decoded in the worker that runs its models. libvips decodes a
 * baseline JPEG at ~240 Mpx/s here and a progressive one with an ICC profile at ~32 Mpx/s, so that holds
 * a worker for 9-65 ms, at most about one pipeline run, while the event loop skips the pixel copy to the
 * worker and the garbage collections that 3-4 MB of pixels per photo cause: 2.0-2.5 instead of 3.9-4.4 ms
 * of main-thread CPU per photo with four clients (bench/inference.ts). Larger images, and headers only
 * sharp can read, go through the decode stage, so a slow image never holds an inference slot.
 */
export const WORKER_DECODE_MAX_PIXELS = 1920 * 1080;

/**
 * ... and up to 1 MiB (issue 36.1). A progressive JPEG's decode time grows with its entropy-coded bytes
 * (~70 ms per MB of scans here) besides its pixels and scans (MAX_JPEG_SCANS), so a 10 MB Full HD file held
 * an inference slot for ~0.7 s. Full HD photos are 0.2-0.8 MB; at 1 MiB a decode holds a worker for at most
 * ~150 ms on 2 cores (1920x1080 progressive with repeated data scans up to 1 MiB: 146-159 ms, the plain
 * file 117-141 ms), and every larger file is decoded in the decode stage, outside the inference limiter.
 */
export const WORKER_DECODE_MAX_BYTES = 1024 * 1024;

/** Told about every analysis (metrics): time waited for a worker, and the pipeline's stage timings when it succeeded. */
export interface EngineObserver {
  job(waitSeconds: number, timings: AnalyzeResult['timings'] | null): void;
}

interface Pending {
  resolve: (r: AnalyzeResult) => void;
  reject: (e: unknown) => void;
  /** Index of the slot's shared raw buffer this job's pixels are in, or -1. */ shared: number;
}

interface Slot {
  worker: Worker;
  /** Has the aloneIntraOpThreads sessions. */ alone: boolean;
  /** The jobs this worker holds (at most jobsPerWorker), by id. */
  jobs: Map<number, Pending>;
  /** Buffers shared with the worker for raw pixels up to REUSED_RAW_MAX_BYTES, one per job it may hold; one is written only while no held job uses it. */
  raw: SharedArrayBuffer[];
}

/**
 * Raw images up to Full HD RGB go to a worker through one of its slot's shared buffers, allocated once: a new
 * 2.7 MB buffer per monitor frame is V8 external memory, and at 8 streams x 5 fps that made the main
 * thread run a full garbage collection several times a second. Larger images get a buffer of their own.
 */
const REUSED_RAW_MAX_BYTES = 1920 * 1080 * 3;

/**
 * "auto" sizing for this host, chosen by measurement on 2 cores (bench/inference.ts, bench/monitor.ts,
 * docs/development/decisions.md, "Inference"). CPU provider: one single-threaded worker per core, each holding two jobs, so one
 * job's decode and resizes (libvips, on libuv's pool) run while the other's models hold the worker's
 * thread; with four clients this gave 0.89-0.92x the raw pipeline in two processes where three workers
 * of one job each gave 0.86-0.87x (three isolates collect garbage more, and three model threads share
 * two cores). One worker also loads the models with min(2, cores) ORT threads for a job that runs alone
 * (`aloneIntraOpThreads`), so a lone request still gets two cores. Other providers keep one job per
 * worker and a worker more than there are cores: their models do not run on these threads, and a second
 * set of sessions would only take device memory. An explicit `intra_op_threads` is used as it is, for
 * every job; an explicit `max_concurrency` is the number of workers, one job each unless
 * `jobs_per_worker` says otherwise.
 */
export function resolveThreading(
  maxConcurrency: number | 'auto',
  intraOp: number | 'auto',
  cores = cpus().length,
  cpuOnly = true,
  jobsPerWorker: number | 'auto' = 'auto',
): { workers: number; intraOpThreads: number; aloneIntraOpThreads: number | null; jobsPerWorker: number } {
  const perJob = intraOp === 'auto' ? 1 : intraOp;
  const overlap = cpuOnly && cores >= 2 && maxConcurrency === 'auto';
  const depth = jobsPerWorker !== 'auto' ? jobsPerWorker : overlap ? 2 : 1;
  const workers =
    maxConcurrency !== 'auto'
      ? maxConcurrency
      : cores <= 1
        ? 1
        : overlap
          ? Math.ceil(cores / perJob)
          : Math.ceil(cores / perJob) + 1;
  // A single worker never shares the cores with another job: it gets them all.
  if (intraOp === 'auto' && workers === 1 && depth === 1)
    return { workers, intraOpThreads: Math.min(2, cores), aloneIntraOpThreads: null, jobsPerWorker: depth };
  const alone = intraOp === 'auto' && cpuOnly && cores >= 2 ? Math.min(2, cores) : null;
  return { workers, intraOpThreads: perJob, aloneIntraOpThreads: alone, jobsPerWorker: depth };
}

/** A copy of `data` in an ArrayBuffer of its own (not from Buffer's pool, not zero-filled first), which postMessage can transfer. */
function movableBuffer(bytes: number): Uint8Array {
  const own = Buffer.allocUnsafeSlow(bytes);
  return new Uint8Array(own.buffer, own.byteOffset, own.byteLength);
}

function movableCopy(data: Uint8Array): Uint8Array {
  const copy = movableBuffer(data.byteLength);
  copy.set(data);
  return copy;
}

/**
 * `raw` copied into the slot's shared buffer (see REUSED_RAW_MAX_BYTES), or into a buffer of its own that
 * postMessage moves (`transfer`).
 */
function rawForSlot(
  slot: Slot,
  raw: Uint8Array | PixelSource,
): { data: Uint8Array; transfer: ArrayBuffer | null; shared: number } {
  let shared = -1;
  if (raw.byteLength <= REUSED_RAW_MAX_BYTES) {
    // The lowest index no held job uses (a slot holds at most jobsPerWorker jobs).
    shared = 0;
    while (heldBuffer(slot, shared)) shared++;
    slot.raw[shared] ??= new SharedArrayBuffer(REUSED_RAW_MAX_BYTES);
  }
  const data = shared < 0 ? movableBuffer(raw.byteLength) : new Uint8Array(slot.raw[shared]!, 0, raw.byteLength);
  if (raw instanceof Uint8Array) data.set(raw);
  else raw.copyInto(data);
  return { data, transfer: shared < 0 ? (data.buffer as ArrayBuffer) : null, shared };
}

function heldBuffer(slot: Slot, index: number): boolean {
  for (const j of slot.jobs.values()) if (j.shared === index) return true;
  return false;
}

/**
 * Old-generation size (MB) below which a worker isolate skips full garbage collections. A worker's heap
 * holds ~8 MB of objects while every photo passes 5-8 MB of ArrayBuffers through it (decoded pixels,
 * resizes, model outputs); V8 counts the buffers not yet collected against the old generation's limit,
 * which for so small a heap is ~19 MB, so each worker ran a full mark-compact about once a second under
 * load: 6-8 per worker in a 3-round bench/inference.ts paired run, 13-20 ms of CPU each. At 64 MB: one.
 * A worker's heap may then hold up to that much before it is collected.
 */
export const WORKER_MIN_OLD_GENERATION_MB = 64;

/**
 * Sets V8's initial old-generation size for isolates created from now on: the inference workers (the main
 * isolate exists already and has its own, DAEMON_NODE_FLAGS). Node has no per-worker option for it.
 */
function configureWorkerHeaps(): void {
  v8.setFlagsFromString(`--initial-old-space-size=${WORKER_MIN_OLD_GENERATION_MB}`);
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
  private readonly decoder: DecodeStage;
  private nextId = 1;
  private aloneJobs = 0;
  private workerDecodes = 0;
  private closed = false;
  /** Set once by the daemon (metrics); null = nobody listens. */
  observer: EngineObserver | null = null;
  readonly startup: { loadMs: number; warmupMs: number; optimization: Record<string, OptimizationLevel> } = {
    loadMs: 0,
    warmupMs: 0,
    optimization: {},
  };

  /** Jobs one worker holds at once (options.jobsPerWorker). */
  private readonly depth: number;

  private constructor(readonly options: EngineOptions) {
    this.depth = Math.max(1, options.jobsPerWorker ?? 1);
    this.limiter = new ConcurrencyLimiter(options.workers * this.depth);
    this.decoder = new DecodeStage(options.decode ?? DEFAULT_DECODE);
  }

  static async start(options: EngineOptions): Promise<InferenceEngine> {
    const missing = options.providers.filter((p) => !availableProviders().includes(p));
    if (missing.length > 0) {
      const reasons = Object.fromEntries(
        hostProviderReport()
          .filter((r) => missing.includes(r.name as ProviderName))
          .map((r) => [r.name, r.reason]),
      );
      throw Errors.executionProviderUnavailable(missing, availableProviders(), reasons);
    }
    // libvips keeps the results of recent operations (up to 50 MB and 100 operations) in case the same
    // input comes again; here every decoded upload and every monitor frame is new, so the cache would
    // only hold memory. Process-wide: the workers share it.
    sharp.cache(false);
    // One libvips thread per operation: the workers and their jobs are the parallelism (Layout in
    // docs/development/architecture.md). sharp's own default is 1 under glibc's malloc but the core count under jemalloc
    // (src/system/allocator.ts), which would put more threads than cores on the decodes.
    sharp.concurrency(1);
    configureWorkerHeaps();
    const engine = new InferenceEngine(options);
    try {
      // The first worker times the graph optimisation levels ('auto'); the others reuse its choice, so a
      // request gives the same numbers whichever worker runs it.
      // The second set of sessions for lone jobs goes to a later worker, so it loads beside the others.
      const aloneAt = options.aloneIntraOpThreads ? Math.min(1, options.workers - 1) : -1;
      await engine.spawn(aloneAt === 0);
      await Promise.all(Array.from({ length: options.workers - 1 }, (_, i) => engine.spawn(aloneAt === i + 1)));
    } catch (e) {
      await engine.close();
      throw e;
    }
    return engine;
  }

  private workerInit(alone: boolean): WorkerInit {
    const { pack } = this.options;
    return {
      detector: { ...pack.detector },
      recognizer: { ...pack.recognizer },
      providers: this.options.providers,
      deviceId: this.options.deviceId,
      intraOpThreads: this.options.intraOpThreads,
      ...(alone && this.options.aloneIntraOpThreads ? { aloneIntraOpThreads: this.options.aloneIntraOpThreads } : {}),
      graphOptimization: this.options.graphOptimization,
      warmupSizes: this.options.warmupSizes,
      ...(this.slots.length > 0 && this.startup.optimization.detector
        ? { optimization: this.startup.optimization as { detector: OptimizationLevel; recognizer: OptimizationLevel } }
        : {}),
      ...(this.options.liveness ? { liveness: this.options.liveness } : {}),
    };
  }

  private spawn(alone: boolean): Promise<void> {
    const worker = createWorker(this.workerInit(alone));
    const slot: Slot = { worker, alone, jobs: new Map(), raw: [] };
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
          reject(
            msg.addonInvalid
              ? Errors.addonModelInvalid(`The liveness addon's models could not be loaded: ${msg.message}`)
              : Errors.modelLoadFailed(msg.message),
          );
        } else {
          const pending = slot.jobs.get(msg.id);
          slot.jobs.delete(msg.id);
          if (msg.alone) this.aloneJobs++;
          if (!pending) return;
          if (msg.error) {
            const err = msg.error.internal ? new Error(msg.error.message) : ApiError.revive(msg.error);
            pending.reject(err);
          } else pending.resolve(msg.result!);
        }
      });
      worker.on('error', (e) => {
        if (!ready) reject(e);
        for (const p of slot.jobs.values()) p.reject(e);
        slot.jobs.clear();
      });
      worker.on('exit', (code) => {
        const i = this.slots.indexOf(slot);
        if (i >= 0) this.slots.splice(i, 1);
        for (const p of slot.jobs.values()) p.reject(new Error(`inference worker exited with code ${code}`));
        slot.jobs.clear();
        if (!ready) reject(new Error(`inference worker exited with code ${code} during startup`));
        // A worker that died under load is replaced so capacity does not shrink for the life of the process.
        else if (!this.closed) this.spawn(slot.alone).catch(() => undefined);
      });
    });
  }

  /**
   * Runs one analysis. An encoded image of at most `workerDecodeMaxBytes` whose header shows at most
   * `workerDecodeMaxPixels` goes to the worker as it is and is decoded there, with the same shape, pixel,
   * scan and time limits (a decode there is bounded before it starts); any other is decoded
   * first, in the decode stage (libuv's pool, bounded by shape and time) and outside the inference
   * limiter. Then the job waits (FIFO) for a free worker. Both waits are left if `signal` aborts first.
   *
   * `request` may be a function (raw images only): it is called when a worker is free, so a live source
   * (a monitor) hands over its newest frame then, not the one it had when it started waiting.
   */
  async analyze(request: AnalyzeRequest | (() => AnalyzeRequest), signal?: AbortSignal): Promise<AnalyzeResult> {
    if (this.closed) throw Errors.engineStopped();
    const observer = this.observer;
    const queued = performance.now();
    let waited = 0;
    let timings: AnalyzeResult['timings'] | null = null;
    try {
      if (typeof request === 'function' || !('encoded' in request.image)) {
        // Raw frames are the monitors': they go before queued uploads (see ConcurrencyLimiter).
        const result = await this.limiter.run(
          () => {
            waited = (performance.now() - queued) / 1000;
            const r = typeof request === 'function' ? request() : request;
            if ('encoded' in r.image) throw new Error('a deferred analysis request must carry a raw image');
            return this.dispatch(r);
          },
          signal,
          { priority: true },
        );
        timings = result.timings;
        return result;
      }
      const { encoded } = request.image;
      const inWorker = this.decodesInWorker(encoded);
      let job: AnalyzeRequest;
      let stageDecodeMs: number | null = null;
      if (inWorker) {
        // The bytes in a buffer of their own (moved to the worker), with the limits the stage would apply.
        job = { ...request, image: { encoded: movableCopy(encoded) }, limits: this.decoder.limits(request.limits) };
      } else {
        const t0 = performance.now();
        const img = await this.decoder.decode(encoded, request.limits, signal);
        stageDecodeMs = performance.now() - t0;
        job = { ...request, image: { raw: img.data, width: img.width, height: img.height } };
      }
      const waitFrom = performance.now();
      const result = await this.limiter
        .run(() => {
          waited = (performance.now() - waitFrom) / 1000;
          if (inWorker) this.workerDecodes++;
          return this.dispatch(job);
        }, signal)
        .catch((e: unknown) => {
          if (inWorker) this.decoder.noteFailure(e);
          throw e;
        });
      if (stageDecodeMs !== null) result.timings.decode_ms = stageDecodeMs;
      timings = result.timings;
      return result;
    } finally {
      observer?.job(waited, timings);
    }
  }

  /** A small file whose header this code reads (JPEG, PNG, WebP) and shows few enough pixels; its limits are checked in the worker. */
  private decodesInWorker(encoded: Uint8Array): boolean {
    const max = this.options.workerDecodeMaxPixels ?? WORKER_DECODE_MAX_PIXELS;
    if (max <= 0 || encoded.byteLength > (this.options.workerDecodeMaxBytes ?? WORKER_DECODE_MAX_BYTES)) return false;
    const format = sniffImageFormat(encoded);
    const dims = format ? headerDimensions(encoded, format) : null;
    return dims !== null && dims.width > 0 && dims.height > 0 && dims.width * dims.height <= max;
  }

  private dispatch(request: AnalyzeRequest): Promise<AnalyzeResult> {
    // Alone: this is the only job holding the limiter, so its worker may use aloneIntraOpThreads. A job
    // that starts beside it later runs single-threaded; a third core's worth of threads for a moment is
    // cheaper than a lone request on one thread.
    const aloneSlot =
      this.limiter.stats().active === 1 ? this.slots.find((s) => s.alone && s.jobs.size === 0) : undefined;
    const slot = aloneSlot ?? this.leastHeld();
    const alone = aloneSlot !== undefined;
    if (!slot) return Promise.reject(Errors.inferenceUnavailable());
    const id = this.nextId++;
    // A raw image (a decoded upload: sharp's buffer; a monitor frame: still the session's) cannot be moved
    // as it is. One copy, made now that a worker has room, into one of the slot's shared buffers (or, when larger,
    // into a buffer of its own that is moved) costs about half the structured clone's serialise +
    // deserialise of these 3-4 MB (0.7-0.9 vs 1.4-1.5 ms of CPU for a 2.7 MB frame).
    const image = request.image;
    let job: WorkerJob;
    let transfer: ArrayBuffer | null;
    let shared = -1;
    if ('encoded' in image) {
      // Copied into a buffer of its own by analyze(): moved, not cloned.
      job = { id, request };
      transfer = image.encoded.buffer as ArrayBuffer;
    } else {
      let raw: ReturnType<typeof rawForSlot>;
      try {
        raw = rawForSlot(slot, 'raw' in image ? image.raw : image.pixels);
      } catch (e) {
        // A pixel source can fail (a frame released by a stopping reader): nothing was taken yet.
        return Promise.reject(e);
      }
      job = { id, request: { ...request, image: { raw: raw.data, width: image.width, height: image.height } } };
      transfer = raw.transfer;
      shared = raw.shared;
    }
    if (alone) job.alone = true;
    return new Promise((resolve, reject) => {
      slot.jobs.set(id, { resolve, reject, shared });
      slot.worker.postMessage(job, transfer ? [transfer] : []);
    });
  }

  /** The worker holding the fewest jobs, below the depth; a non-alone one first on a tie. */
  private leastHeld(): Slot | undefined {
    let best: Slot | undefined;
    for (const s of this.slots) {
      if (s.jobs.size >= this.depth) continue;
      if (!best || s.jobs.size < best.jobs.size || (s.jobs.size === best.jobs.size && best.alone && !s.alone)) best = s;
    }
    return best;
  }

  stats(): ReturnType<ConcurrencyLimiter['stats']> &
    ReturnType<DecodeStage['stats']> & {
      workers: number;
      jobs_per_worker: number;
      intra_op_threads: number;
      alone_intra_op_threads: number | null;
      alone_jobs: number;
      worker_decodes: number;
    } {
    return {
      ...this.limiter.stats(),
      workers: this.slots.length,
      jobs_per_worker: this.depth,
      intra_op_threads: this.options.intraOpThreads,
      alone_intra_op_threads: this.options.aloneIntraOpThreads ?? null,
      alone_jobs: this.aloneJobs,
      ...this.decoder.stats(),
      worker_decodes: this.workerDecodes,
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    // Each worker finishes its job and releases its models first (see worker.ts); terminate only a worker
    // that has not exited after a grace period.
    await Promise.all(
      this.slots.map(async (s) => {
        const exited = new Promise<void>((resolve) => s.worker.once('exit', () => resolve()));
        s.worker.postMessage({ type: 'close' } satisfies WorkerClose);
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), WORKER_CLOSE_GRACE_MS);
        });
        if ((await Promise.race([exited, late])) === 'late') await s.worker.terminate();
        clearTimeout(timer);
      }),
    );
    this.slots.length = 0;
  }
}
