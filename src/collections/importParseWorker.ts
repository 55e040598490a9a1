/**
 * Worker thread entry of the bulk import's parser (importStream.ts): NDJSON bytes in, batches of checked,
 * normalised persons out, so JSON.parse, base64 decoding and the norm checks run beside the SQLite writes
 * instead of between them on the event loop. One worker serves every import of the process (it stays warm
 * between requests), each import a session `s`. Messages in: {s, open: {dim, batchSize}} | {s, chunk} |
 * {s, end: true} | {s, close: true}; out, per session in input order: {s, ack: true} per chunk taken,
 * {s, batch: persons, vectors} (the batch's embeddings back to back in one transferred Float32Array;
 * persons carry their face count), {s, error: {code, details, message}}, {s, end: true}.
 */
import { StringDecoder } from 'node:string_decoder';
import { parentPort } from 'node:worker_threads';
import { isApiError } from '../contract/errors.js';
import { ImportLineBatcher, type ImportPerson } from './importLines.js';

export interface PackedPerson {
  id: string;
  name: string | null;
  external_id: string | null;
  metadata: Record<string, unknown>;
  faces: number;
  crops?: (Uint8Array | null)[];
}
/** A failure: a catalogue error as it was made (revived by ApiError.revive), or anything else as internal. */
export type ParseWorkerError =
  | { status: number; code: string; message: string; details: Record<string, unknown> }
  | { internal: true; message: string };
export type ParseWorkerReply = { s: number } & (
  { ack: true } | { batch: PackedPerson[]; vectors: Float32Array } | { error: ParseWorkerError } | { end: true }
);
export type ParseWorkerRequest = { s: number } & (
  { open: { dim: number; batchSize: number } } | { chunk: Uint8Array } | { end: true } | { close: true }
);

interface Session {
  dim: number;
  batcher: ImportLineBatcher;
  decoder: StringDecoder;
  failed: boolean;
}
const sessions = new Map<number, Session>();
const port = parentPort!;

function pack(s: number, dim: number, batch: ImportPerson[]): [ParseWorkerReply, ArrayBuffer[]] {
  const faces = batch.reduce((n, p) => n + p.embeddings.length, 0);
  const vectors = new Float32Array(faces * dim);
  let k = 0;
  const persons = batch.map((p) => {
    for (const v of p.embeddings) vectors.set(v, k++ * dim);
    const person: PackedPerson = {
      id: p.id,
      name: p.name,
      external_id: p.external_id,
      metadata: p.metadata,
      faces: p.embeddings.length,
    };
    if (p.crops) person.crops = p.crops;
    return person;
  });
  return [{ s, batch: persons, vectors }, [vectors.buffer]];
}

function step(s: number, x: Session, fn: () => void): void {
  if (x.failed) return;
  try {
    fn();
  } catch (e) {
    x.failed = true;
    const error: ParseWorkerError = isApiError(e)
      ? { status: e.status, code: e.code, message: e.message, details: e.details }
      : { internal: true, message: e instanceof Error ? e.message : String(e) };
    // The batches completed before the bad line go first (they are committed, the failed one is not).
    for (const batch of x.batcher.ready.splice(0)) port.postMessage(...pack(s, x.dim, batch));
    port.postMessage({ s, error } satisfies ParseWorkerReply);
    return;
  }
  for (const batch of x.batcher.ready.splice(0)) port.postMessage(...pack(s, x.dim, batch));
}

port.on('message', (m: ParseWorkerRequest) => {
  if ('open' in m) {
    sessions.set(m.s, {
      dim: m.open.dim,
      batcher: new ImportLineBatcher(m.open.dim, m.open.batchSize),
      decoder: new StringDecoder('utf8'),
      failed: false,
    });
    return;
  }
  if ('close' in m) {
    sessions.delete(m.s);
    return;
  }
  const x = sessions.get(m.s);
  if (!x) return;
  if ('chunk' in m) {
    step(m.s, x, () =>
      x.batcher.push(x.decoder.write(Buffer.from(m.chunk.buffer, m.chunk.byteOffset, m.chunk.byteLength))),
    );
    port.postMessage({ s: m.s, ack: true } satisfies ParseWorkerReply);
  } else {
    step(m.s, x, () => {
      x.batcher.push(x.decoder.end());
      x.batcher.end();
    });
    if (!x.failed) port.postMessage({ s: m.s, end: true } satisfies ParseWorkerReply);
  }
});
