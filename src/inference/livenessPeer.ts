/**
 * A liveness model in a thread of its own (see PeerLivenessModel): it answers run requests from the
 * inference worker that started it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { LivenessPeerInit, LivenessPeerReply } from './livenessModel.js';
import { LocalLivenessModel } from './livenessModel.js';

const init = workerData as LivenessPeerInit;
const port = parentPort!;

LocalLivenessModel.load(init.spec, init.settings).then(
  (model) => {
    port.on('message', ({ id, input }: { id: number; input: Float32Array }) => {
      model.run(input).then(
        (logits) =>
          port.postMessage({ type: 'result', id, logits: Float32Array.from(logits) } satisfies LivenessPeerReply),
        (e: unknown) =>
          port.postMessage({
            type: 'result',
            id,
            error: e instanceof Error ? e.message.split('\n')[0]! : String(e),
          } satisfies LivenessPeerReply),
      );
    });
    port.postMessage({ type: 'ready' } satisfies LivenessPeerReply);
  },
  (e: unknown) =>
    port.postMessage({
      type: 'failed',
      message: e instanceof Error ? e.message : String(e),
    } satisfies LivenessPeerReply),
);
