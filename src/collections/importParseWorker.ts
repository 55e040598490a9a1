/**
 * Worker thread entry of the bulk import's parser (importStream.ts): NDJSON bytes in, batches of checked,
 * normalised persons out, so JSON.parse, base64 decoding and the norm checks run beside the SQLite writes
 * instead of between them on the event loop. Messages in: {chunk: Uint8Array} | {end: true}; out, in
 * input order: {ack: true} per chunk taken, {batch: persons, vectors} (the batch's embeddings back to back
 * in one transferred Float32Array, persons carry their face count), {error: {code, details}}, {end: true}.
 */
import { StringDecoder } from 'node:string_decoder';
import { parentPort, workerData } from 'node:worker_threads';
import { isApiError } from '../contract/errors.js';
import { ImportLineBatcher, type ImportPerson } from './importLines.js';

export interface PackedPerson { id: string; name: string | null; external_id: string | null; metadata: Record<string, unknown>; faces: number }
export type ParseWorkerReply = { ack: true } | { batch: PackedPerson[]; vectors: Float32Array } | { error: { code: string; details: unknown; message: string } } | { end: true };

const { dim, batchSize } = workerData as { dim: number; batchSize: number };
const batcher = new ImportLineBatcher(dim, batchSize);
const decoder = new StringDecoder('utf8');
const port = parentPort!;
let failed = false;

function flush(): void {
  for (const batch of batcher.ready.splice(0)) port.postMessage(...pack(batch));
}

function pack(batch: ImportPerson[]): [ParseWorkerReply, ArrayBuffer[]] {
  const faces = batch.reduce((s, p) => s + p.embeddings.length, 0);
  const vectors = new Float32Array(faces * dim);
  let k = 0;
  const persons = batch.map((p) => {
    for (const v of p.embeddings) vectors.set(v, (k++) * dim);
    return { id: p.id, name: p.name, external_id: p.external_id, metadata: p.metadata, faces: p.embeddings.length };
  });
  return [{ batch: persons, vectors }, [vectors.buffer]];
}

function step(fn: () => void): void {
  if (failed) return;
  try {
    fn();
    flush();
  } catch (e) {
    failed = true;
    flush(); // the batches completed before the bad line are committed
    const error = isApiError(e) ? { code: e.code, details: e.details, message: e.message } : { code: 'internal_error', details: null, message: e instanceof Error ? e.message : String(e) };
    port.postMessage({ error } satisfies ParseWorkerReply);
  }
}

port.on('message', (m: { chunk: Uint8Array } | { end: true }) => {
  if ('chunk' in m) {
    step(() => batcher.push(decoder.write(Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength))));
    port.postMessage({ ack: true } satisfies ParseWorkerReply);
  } else {
    step(() => {
      batcher.push(decoder.end());
      batcher.end();
    });
    if (!failed) port.postMessage({ end: true } satisfies ParseWorkerReply);
  }
});
