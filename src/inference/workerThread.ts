import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../system/workerThread.js';

/** Starts one of this folder's worker entry modules (see startModuleWorker). */
export function startWorkerThread(name: 'worker' | 'livenessPeer', workerData: unknown): Worker {
  return startModuleWorker(import.meta.url, name, workerData);
}
