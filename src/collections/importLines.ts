import { isValidPersonId, metadataProblem } from '../contract/collections.js';
import { Errors } from '../contract/errors.js';
import { checkEmbedding } from './embeddingRule.js';

/**
 * The bulk import's NDJSON input, line by line: one person per line, cut into batches. Pure and
 * synchronous (no service, no I/O): the import's parse worker runs it off the event loop
 * (importParseWorker.ts), and its errors are the import's errors (invalid_import_line, request_too_large).
 */
export interface ImportPerson {
  id: string;
  name: string | null;
  external_id: string | null;
  metadata: Record<string, unknown>;
  embeddings: Float32Array[];
  /** A gallery export's face crops (JPEG), crops[i] of embeddings[i]; null or absent: that face has none. */
  crops?: (Uint8Array | null)[];
}

/** A face crop in an import line at most (Vigil's crops are 112 px JPEGs of a few KB). */
export const MAX_CROP_BYTES = 1 << 20;

const MAX_NAME = 200;

/** Lines longer than this are refused (a 512-d vector as JSON numbers is ~6 KB; 1000 faces per person fit). */
export const MAX_LINE_BYTES = 16 * 2 ** 20;

/** The first line of a gallery export (`GET /v1/collections/{id}/export`); the import skips it. */
export const EXPORT_HEADER_TYPE = 'vigil_gallery_export';

/** Whether an NDJSON line is an export header (checked cheaply before parsing a person). */
export function isExportHeader(line: string): boolean {
  return line.startsWith('{"type":"vigil_gallery_export"');
}

/** Parses one NDJSON person line: {id, name?, external_id?, metadata?, embeddings: [number[] | base64 float32-LE string]}. */
export function parseImportPerson(line: string, lineNo: number, dim: number): ImportPerson {
  const bad = (problem: string) => Errors.invalidImportLine(lineNo, problem);
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    throw bad('not valid JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('a person must be a JSON object');
  const o = v as Record<string, unknown>;
  // crops: a gallery export's face crops, kept with their faces (and used by a re-embedding import on another model).
  const known = new Set(['id', 'name', 'external_id', 'metadata', 'embeddings', 'crops']);
  const extra = Object.keys(o).find((k) => !known.has(k));
  if (extra) throw bad(`unknown field ${JSON.stringify(extra)}`);
  if (typeof o.id !== 'string' || !isValidPersonId(o.id)) throw bad('id must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$');
  const optText = (k: 'name' | 'external_id') => {
    const x = o[k];
    if (x === undefined || x === null) return null;
    if (typeof x !== 'string' || x.length > MAX_NAME)
      throw bad(`${k} must be a string of at most ${MAX_NAME} characters`);
    return x;
  };
  const metadata = o.metadata ?? {};
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
    throw bad('metadata must be an object');
  const problem = metadataProblem(metadata);
  if (problem) throw bad(Errors.invalidMetadata(problem).message);
  if (!Array.isArray(o.embeddings) || o.embeddings.length === 0) throw bad('embeddings must be a non-empty array');
  const embeddings = o.embeddings.map((e: unknown, i: number) => {
    let vec: Float32Array;
    if (typeof e === 'string') {
      const f = new Float32Array(dim);
      // Decoded straight into the vector's bytes; a wrong length shows in the count.
      const written = Buffer.from(f.buffer).write(e, 'base64');
      if (written !== dim * 4 || Buffer.byteLength(e, 'base64') !== dim * 4)
        throw bad(`embeddings[${i}]: base64 must hold ${dim} float32 values (${dim * 4} bytes)`);
      vec = f;
    } else if (Array.isArray(e) && e.every((x) => typeof x === 'number')) {
      vec = new Float32Array(e as number[]);
    } else {
      throw bad(`embeddings[${i}] must be an array of numbers or a base64 string of float32 values`);
    }
    const norm = checkEmbedding(vec, dim);
    if (typeof norm === 'string') throw bad(`embeddings[${i}]: ${norm}`);
    // Renormalised in place (vec is this parser's own copy), with the same norm and so the same values as l2Normalize.
    for (let j = 0; j < dim; j++) vec[j] = vec[j]! / norm;
    return vec;
  });
  const crops = parseCrops(o.crops, embeddings.length, bad);
  return {
    id: o.id,
    name: optText('name'),
    external_id: optText('external_id'),
    metadata: metadata as Record<string, unknown>,
    embeddings,
    ...(crops.length ? { crops } : {}),
  };
}

/**
 * An export line's `crops`: crops[i] is the JPEG of embeddings[i] (base64), null for a face without one.
 * A format-1 export listed only the crops that existed, in another order: they are taken in file order, so
 * a crop shows the same person but may sit on another of that person's faces.
 */
function parseCrops(v: unknown, faces: number, bad: (problem: string) => Error): (Uint8Array | null)[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > faces) throw bad('crops must be an array of at most one crop per embedding');
  return v.map((c: unknown, i: number) => {
    if (c === null) return null;
    const jpeg = typeof c === 'string' ? Buffer.from(c, 'base64') : null;
    if (!jpeg || jpeg.length < 4 || jpeg[0] !== 0xff || jpeg[1] !== 0xd8 || jpeg[2] !== 0xff)
      throw bad(`crops[${i}] must be a base64 JPEG or null`);
    if (jpeg.length > MAX_CROP_BYTES) throw bad(`crops[${i}] is larger than ${MAX_CROP_BYTES} bytes`);
    return jpeg;
  });
}

/**
 * Splits NDJSON text into person lines and batches of `batchSize` persons (line numbers count every line,
 * blank ones too; a gallery export's header on line 1 is skipped). push() takes the next piece of text,
 * end() the end of the input; completed batches wait in `ready` for the caller to take, in order. A line
 * longer than MAX_LINE_BYTES throws request_too_large and a bad line invalid_import_line: the batches
 * completed before it are still in `ready` (they are committed, the failed one is not).
 */
export class ImportLineBatcher {
  readonly ready: ImportPerson[][] = [];
  private rest = '';
  private lineNo = 0;
  private batch: ImportPerson[] = [];

  constructor(
    private readonly dim: number,
    private readonly batchSize: number,
  ) {}

  push(text: string): void {
    const parts = (this.rest + text).split('\n');
    this.rest = parts.pop()!;
    for (const line of parts) this.line(line);
    if (Buffer.byteLength(this.rest) > MAX_LINE_BYTES) throw Errors.requestTooLarge(MAX_LINE_BYTES);
  }

  end(): void {
    const rest = this.rest;
    this.rest = '';
    if (rest.length) this.line(rest);
    if (this.batch.length) this.ready.push(this.batch);
    this.batch = [];
  }

  private line(line: string): void {
    this.lineNo++;
    if (line.trim() === '') return;
    // A gallery export's header line (GET /v1/collections/{id}/export) is skipped: its persons import as they are.
    if (this.lineNo === 1 && isExportHeader(line)) return;
    this.batch.push(parseImportPerson(line, this.lineNo, this.dim));
    if (this.batch.length >= this.batchSize) {
      this.ready.push(this.batch);
      this.batch = [];
    }
  }
}
