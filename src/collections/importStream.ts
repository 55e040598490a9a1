import type { Worker } from 'node:worker_threads';
import { ApiError, Errors } from '../contract/errors.js';
import { startModuleWorker } from '../system/workerThread.js';
import type { ImportPerson } from './importLines.js';
import type { ParseWorkerError, ParseWorkerReply, ParseWorkerRequest } from './importParseWorker.js';

/** Chunks handed to the parse worker and not yet taken by it, at most (then reading the body waits). */
const MAX_CHUNKS_IN_FLIGHT = 16;
/**
 * Parsed batches waiting for their commit, at most (then reading the body waits): at most about four
 * batches are in memory (one committing, two parsed, one being parsed). 1 measured 14-15k faces/s vs
 * 22-23k with 2 at 100k (load 4-6): the parser then idles whenever a commit is slow.
 */
const MAX_BATCHES_READY = 2;

/** The parse worker every import shares (started by the first; it keeps the process alive only while an import runs). */
interface SharedParser {
  worker: Worker;
  sessions: Map<number, (m: ParseWorkerReply) => void>;
  next: number;
}
let shared: SharedParser | null = null;

function parseWorker(): SharedParser {
  if (shared) return shared;
  const worker = startModuleWorker(import.meta.url, 'importParseWorker', {});
  const w: SharedParser = { worker, sessions: new Map(), next: 1 };
  worker.on('message', (m: ParseWorkerReply) => w.sessions.get(m.s)?.(m));
  const lost = (message: string) => {
    if (shared === w) shared = null;
    for (const [s, handle] of w.sessions) handle({ s, error: { internal: true, message } });
  };
  worker.once('error', (e) => lost(e.message));
  worker.once('exit', () => lost('import parse worker exited'));
  shared = w;
  return w;
}

/**
 * The bulk import's input as batches of checked persons (ImportLineBatcher's rules and errors), parsed in
 * a worker thread (importParseWorker.ts) while the caller commits the previous batch. Reading the body
 * waits while MAX_BATCHES_READY batches wait or MAX_CHUNKS_IN_FLIGHT chunks are unparsed. Batches come in input order; an error (a bad line, an over-long line, the body
 * failing) is thrown after the batches completed before it. A person's embeddings are views into one
 * Float32Array per batch. The session ends with the generator (finished, thrown or returned early).
 */
export async function* parseImportStream(
  source: AsyncIterable<Buffer>,
  dim: number,
  batchSize: number,
): AsyncGenerator<ImportPerson[]> {
  const w = parseWorker();
  const s = w.next++;
  const post = (m: ParseWorkerRequest) => w.worker.postMessage(m);
  const replies: ParseWorkerReply[] = [];
  let inFlight = 0,
    batchesReady = 0,
    stopped = false;
  // The consumer below and the feeder both wait on the worker's replies: every reply wakes both.
  let waiting: (() => void)[] = [];
  const signal = () => {
    const ws = waiting;
    waiting = [];
    for (const f of ws) f();
  };
  const waitFor = async (ready: () => boolean) => {
    while (!ready()) await new Promise<void>((r) => waiting.push(r));
  };
  w.sessions.set(s, (m) => {
    if ('ack' in m) inFlight--;
    else {
      if ('batch' in m) batchesReady++;
      replies.push(m);
    }
    signal();
  });
  w.worker.ref();
  post({ s, open: { dim, batchSize } });
  // The feeder: body chunks to the worker, within the limits above.
  void (async () => {
    try {
      for await (const chunk of source) {
        if (stopped) return;
        post({ s, chunk });
        inFlight++;
        await waitFor(() => stopped || (inFlight < MAX_CHUNKS_IN_FLIGHT && batchesReady < MAX_BATCHES_READY));
      }
      if (!stopped) post({ s, end: true });
    } catch (e) {
      // The body failed (client gone): an error after what was parsed so far.
      replies.push({ s, error: { internal: true, message: e instanceof Error ? e.message : String(e) } });
      signal();
    }
  })();
  try {
    for (;;) {
      await waitFor(() => replies.length > 0);
      const m = replies.shift()!;
      if ('end' in m) return;
      if ('error' in m) throw revive(m.error);
      if ('batch' in m) {
        batchesReady--;
        signal();
        let k = 0;
        yield m.batch.map((p) => ({
          id: p.id,
          name: p.name,
          external_id: p.external_id,
          metadata: p.metadata,
          embeddings: Array.from({ length: p.faces }, () => m.vectors.subarray(k++ * dim, k * dim)),
          ...(p.crops ? { crops: p.crops } : {}),
        }));
      }
    }
  } finally {
    stopped = true;
    signal();
    w.sessions.delete(s);
    if (shared === w) {
      post({ s, close: true });
      if (w.sessions.size === 0) w.worker.unref();
    }
  }
}

/** The parse worker's error as it was made there (a bad line, an over-long line), or an internal one. */
function revive(e: ParseWorkerError): Error {
  return 'internal' in e ? Errors.internalError() : ApiError.revive(e);
}
