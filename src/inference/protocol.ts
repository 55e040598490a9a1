import type { DetectorSpec, LivenessModelSpec, RecognizerSpec } from '../models/catalog.js';
import type { AnalyzeRequest, AnalyzeResult } from './pipeline.js';
import type { OptimizationLevel, ProviderName } from './sessions.js';

/** Messages between the engine and its worker threads. */
export interface WorkerInit {
  detector: DetectorSpec & { path: string };
  recognizer: RecognizerSpec & { path: string };
  providers: ProviderName[];
  deviceId: number;
  intraOpThreads: number;
  /**
   * When set, the worker also loads the models with this many ORT threads, for jobs the engine marks
   * `alone` (dispatched while no other job runs): a lone request gets the cores, a busy box one thread per job.
   */
  aloneIntraOpThreads?: number;
  graphOptimization: OptimizationLevel | 'auto';
  /** Levels the first worker chose under 'auto': every later worker uses them, so all workers give identical results. */
  optimization?: { detector: OptimizationLevel; recognizer: OptimizationLevel };
  warmupSizes: [number, number][];
  /** The liveness ensemble, when the addon is enabled. */
  liveness?: (LivenessModelSpec & { path: string })[];
}

export interface WorkerJob {
  id: number;
  request: AnalyzeRequest;
  /** Run on the aloneIntraOpThreads sessions. */ alone?: boolean;
}

/** Asks a worker to finish its job, release its models (liveness peers included) and exit by itself. */
export interface WorkerClose {
  type: 'close';
}

export type WorkerReply =
  | {
      type: 'ready';
      loadMs: number;
      warmupMs: number;
      optimization: { detector: OptimizationLevel; recognizer: OptimizationLevel };
    }
  | { type: 'failed'; message: string; addonInvalid?: boolean }
  | {
      type: 'result';
      id: number;
      /** The job ran on the aloneIntraOpThreads sessions. */
      alone?: boolean;
      result?: AnalyzeResult;
      error?: { status: number; code: string; message: string; details: Record<string, unknown>; internal?: boolean };
    };
