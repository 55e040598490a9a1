import type { Worker } from 'node:worker_threads';
import type { LivenessModelSpec } from '../models/catalog.js';
import { createSession, ort, type SessionSettings } from './sessions.js';
import { startWorkerThread } from './workerThread.js';

/** One model of the liveness ensemble: runs a [1, 3, h, w] crop and gives its logits. */
export interface LivenessModel {
  readonly spec: LivenessModelSpec;
  run(input: Float32Array): Promise<Float32Array>;
  close(): Promise<void>;
}

// On these 80x80 models extra intra-op threads cost more in hand-offs than they save (measured: one
// thread 3.0 ms, two 3.9 ms per run, interleaved on the 2-core dev box).
const ONE_THREAD = 1;

/** Runs on the calling thread (onnxruntime-node's `run` is synchronous there). */
export class LocalLivenessModel implements LivenessModel {
  private constructor(
    readonly spec: LivenessModelSpec,
    private readonly session: ort.InferenceSession,
  ) {}

  static async load(
    spec: LivenessModelSpec & { path: string },
    settings: SessionSettings,
  ): Promise<LocalLivenessModel> {
    return new LocalLivenessModel(spec, await createSession(spec.path, { ...settings, intraOpThreads: ONE_THREAD }));
  }

  async run(input: Float32Array): Promise<Float32Array> {
    const [w, h] = this.spec.input_size;
    const out = await this.session.run({
      [this.session.inputNames[0]!]: new ort.Tensor('float32', input, [1, 3, h, w]),
    });
    return out[this.session.outputNames[0]!]!.data as Float32Array;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

export interface LivenessPeerInit {
  spec: LivenessModelSpec & { path: string };
  settings: SessionSettings;
}
export type LivenessPeerReply =
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  | { type: 'result'; id: number; logits?: Float32Array; error?: string };

/**
 * Runs its model in a thread of its own, so the ensemble's models run at the same time on two cores
 * instead of one after the other: a face's liveness then costs about one model run, not two. A peer
 * that dies fails every pending and later run (the caller answers 503 liveness_unavailable).
 */
export class PeerLivenessModel implements LivenessModel {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: Float32Array) => void; reject: (e: Error) => void }>();
  private dead: Error | null = null;

  private constructor(
    readonly spec: LivenessModelSpec,
    private readonly worker: Worker,
  ) {
    worker.on('message', (m: LivenessPeerReply) => {
      if (m.type !== 'result') return;
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.logits) p?.resolve(m.logits);
      else p?.reject(new Error(m.error ?? 'no output'));
    });
    const die = (e: Error) => {
      this.dead ??= e;
      for (const p of this.pending.values()) p.reject(this.dead);
      this.pending.clear();
    };
    worker.on('error', die);
    worker.on('exit', (code) => die(new Error(`the liveness thread exited (${code})`)));
  }

  static async load(spec: LivenessModelSpec & { path: string }, settings: SessionSettings): Promise<PeerLivenessModel> {
    const worker = startWorkerThread('livenessPeer', {
      spec,
      settings: { ...settings, intraOpThreads: ONE_THREAD },
    } satisfies LivenessPeerInit);
    await new Promise<void>((resolve, reject) => {
      const onMessage = (m: LivenessPeerReply) => {
        if (m.type === 'ready') resolve();
        else if (m.type === 'failed') reject(new Error(m.message));
        else return;
        worker.off('message', onMessage);
      };
      worker.on('message', onMessage);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the liveness thread exited (${code}) while loading`)));
    }).catch(async (e: unknown) => {
      await worker.terminate();
      throw e;
    });
    worker.removeAllListeners('error').removeAllListeners('exit');
    return new PeerLivenessModel(spec, worker);
  }

  run(input: Float32Array): Promise<Float32Array> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, input }, [input.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

/**
 * Loads the ensemble. With two or more cores every model after the first runs in a peer thread, so
 * the models of one face overlap; with one core they all run inline.
 */
export async function loadLivenessModels(
  specs: (LivenessModelSpec & { path: string })[],
  settings: SessionSettings,
  cores: number,
): Promise<LivenessModel[]> {
  const models: LivenessModel[] = [];
  try {
    for (const [i, spec] of specs.entries()) {
      try {
        models.push(
          i > 0 && cores >= 2
            ? await PeerLivenessModel.load(spec, settings)
            : await LocalLivenessModel.load(spec, settings),
        );
      } catch (e) {
        throw new Error(`${spec.file}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  } catch (e) {
    await Promise.all(models.map((m) => m.close()));
    throw e;
  }
  return models;
}
