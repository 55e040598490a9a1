/**
 * Inference worker thread. onnxruntime-node runs `session.run` synchronously on the calling thread, so
 * model work lives here, off the event loop that serves HTTP and (later) RTSP frames.
 */
import { availableParallelism } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { Errors, isApiError } from '../contract/errors.js';
import { FacePipeline, type AnalyzeRequest, type PackSessions } from './pipeline.js';
import { loadLivenessModels, type LivenessModel } from './livenessModel.js';
import { ort, tunedSession, type OptimizationLevel, type SessionSettings } from './sessions.js';
import type { WorkerInit, WorkerReply, WorkerJob, WorkerClose } from './protocol.js';

const init = workerData as WorkerInit;
const port = parentPort!;

interface LoadedSessions {
  detector: ort.InferenceSession;
  recognizer: ort.InferenceSession;
  optimization: { detector: OptimizationLevel; recognizer: OptimizationLevel };
}

/** The detector and recognizer at `threads` ORT threads, warmed up at every configured size so the first job does not pay for shape planning. */
async function loadSessions(
  settings: SessionSettings,
  optimization: WorkerInit['optimization'],
): Promise<LoadedSessions & { loadMs: number; warmupMs: number }> {
  const t0 = performance.now();
  const [rw, rh] = init.recognizer.input_size;
  const largest = [...init.warmupSizes].sort((a, b) => b[0] * b[1] - a[0] * a[1])[0] ?? [640, 640];
  const det = await tunedSession(
    init.detector.path,
    { ...settings, ...(optimization ? { graphOptimization: optimization.detector } : {}) },
    [1, 3, largest[1], largest[0]],
  );
  const rec = await tunedSession(
    init.recognizer.path,
    { ...settings, ...(optimization ? { graphOptimization: optimization.recognizer } : {}) },
    [1, 3, rh, rw],
  );
  const detector = det.session,
    recognizer = rec.session;
  const loadMs = performance.now() - t0;
  const t1 = performance.now();
  for (const [w, h] of init.warmupSizes) {
    await detector.run({
      [detector.inputNames[0]!]: new ort.Tensor('float32', new Float32Array(3 * w * h), [1, 3, h, w]),
    });
  }
  const probe = await recognizer.run({
    [recognizer.inputNames[0]!]: new ort.Tensor('float32', new Float32Array(3 * rw * rh), [1, 3, rh, rw]),
  });
  const dim = (probe[recognizer.outputNames[0]!]!.data as Float32Array).length;
  if (dim !== init.recognizer.embedding_dimension) {
    throw new Error(`recognizer output has ${dim} values but the pack declares ${init.recognizer.embedding_dimension}`);
  }
  return {
    detector,
    recognizer,
    optimization: { detector: det.level, recognizer: rec.level },
    loadMs,
    warmupMs: performance.now() - t1,
  };
}

/**
 * The worker's pipelines: `shared` runs jobs while other jobs are in flight; `alone` (only when the engine
 * asks for it: aloneIntraOpThreads) runs the same models with more ORT threads for a job the engine
 * dispatches while nothing else runs. Both use the levels the first set chose, so results are identical.
 */
interface WorkerPipelines {
  shared: FacePipeline;
  alone: { pipeline: FacePipeline; sessions: LoadedSessions } | null;
}

async function start(): Promise<WorkerPipelines> {
  const settings: SessionSettings = {
    providers: init.providers,
    deviceId: init.deviceId,
    intraOpThreads: init.intraOpThreads,
    graphOptimization: init.graphOptimization,
  };
  const main = await loadSessions(settings, init.optimization);
  let loadMs = main.loadMs,
    warmupMs = main.warmupMs;
  let alone: WorkerPipelines['alone'] = null;
  if (init.aloneIntraOpThreads) {
    const sessions = await loadSessions({ ...settings, intraOpThreads: init.aloneIntraOpThreads }, main.optimization);
    loadMs += sessions.loadMs;
    warmupMs += sessions.warmupMs;
    alone = {
      sessions,
      pipeline: new FacePipeline({
        detector: { spec: init.detector, session: sessions.detector },
        recognizer: { spec: init.recognizer, session: sessions.recognizer },
      }),
    };
  }
  const shared = new FacePipeline({
    detector: { spec: init.detector, session: main.detector },
    recognizer: { spec: init.recognizer, session: main.recognizer },
  });
  const liveness = await loadLiveness(settings);
  if (liveness) {
    shared.useLiveness(liveness);
    alone?.pipeline.useLiveness(liveness);
  }
  port.postMessage({ type: 'ready', loadMs, warmupMs, optimization: main.optimization } satisfies WorkerReply);
  return { shared, alone };
}

class AddonInvalid extends Error {}

/**
 * The liveness ensemble, checked once on a blank crop: it must load, run at its input size and give at
 * least live_class + 1 outputs. Values are not judged here (a blank crop is no face); real inputs are
 * checked on every run and a bad output is a 503, never a verdict.
 */
async function loadLiveness(settings: SessionSettings): Promise<PackSessions['liveness']> {
  if (!init.liveness) return undefined;
  let models: LivenessModel[];
  try {
    models = await loadLivenessModels(init.liveness, settings, availableParallelism());
  } catch (e) {
    throw new AddonInvalid(e instanceof Error ? e.message : String(e));
  }
  for (const model of models) {
    const { spec } = model;
    try {
      const [w, h] = spec.input_size;
      const n = (await model.run(new Float32Array(3 * w * h))).length;
      if (n <= spec.live_class) throw new Error(`output has ${n} values, class ${spec.live_class} expected`);
    } catch (e) {
      throw new AddonInvalid(`${spec.file}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return models;
}

function serializeError(e: unknown): Extract<WorkerReply, { type: 'result' }>['error'] {
  if (isApiError(e)) return { status: e.status, code: e.code, message: e.message, details: e.details };
  return {
    status: 500,
    code: Errors.internalError.code,
    message: e instanceof Error ? e.message : String(e),
    details: {},
    internal: true,
  };
}

start().then(
  ({ shared, alone }) => {
    // Jobs held at once (the engine's jobsPerWorker): one's decode and resizes run on libuv's pool while
    // another's models hold this thread.
    const inFlight = new Set<Promise<unknown>>();
    port.on('message', (msg: WorkerJob | WorkerClose) => {
      if ('type' in msg) {
        // Terminating a thread while a native run or a liveness peer is mid-call can abort the whole process
        // (a Napi::Error thrown during teardown), so the engine asks first: finish, close the peers, exit.
        // The liveness models are shared by both pipelines: `shared` closes them, `alone` only its sessions.
        void Promise.allSettled(inFlight)
          .then(() =>
            Promise.allSettled([
              shared.close(),
              alone?.sessions.detector.release(),
              alone?.sessions.recognizer.release(),
            ]),
          )
          .finally(() => process.exit(0));
        return;
      }
      const job = msg;
      const onAlone = job.alone === true && alone !== null;
      const pipeline = onAlone ? alone.pipeline : shared;
      const run = pipeline.analyze(job.request as AnalyzeRequest).then(
        (result) => {
          const transfer = result.faces.flatMap((f) => (f.embedding ? [f.embedding.buffer as ArrayBuffer] : []));
          port.postMessage(
            { type: 'result', id: job.id, result, ...(onAlone ? { alone: true } : {}) } satisfies WorkerReply,
            transfer,
          );
        },
        (e: unknown) =>
          port.postMessage({
            type: 'result',
            id: job.id,
            error: serializeError(e),
            ...(onAlone ? { alone: true } : {}),
          } satisfies WorkerReply),
      );
      inFlight.add(run);
      void run.finally(() => inFlight.delete(run));
    });
  },
  (e: unknown) =>
    port.postMessage({
      type: 'failed',
      message: e instanceof Error ? e.message : String(e),
      ...(e instanceof AddonInvalid ? { addonInvalid: true } : {}),
    } satisfies WorkerReply),
);
