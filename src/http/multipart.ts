import multer from '@koa/multer';
import type { z } from 'zod';
import { type ApiError, Errors } from '../contract/errors.js';
import { invalid, validate } from '../contract/validation.js';
import { assertBodyComplete } from './middleware.js';
import type { AppContext } from './route.js';

export interface UploadedFile {
  field: string;
  filename: string;
  bytes: Buffer;
}

export interface MultipartSpec<S extends z.ZodType> {
  /** Validates the text fields (multipart values are strings; schemas coerce). */
  fields: S;
  /** File fields that must be present exactly once. */
  requiredFiles: string[];
  maxFileBytes: number;
  maxFiles: number;
  /** The error for more than `maxFiles` files (default: invalid_request). */
  tooManyFiles?: () => ApiError;
}

/**
 * Parses multipart/form-data in memory with hard limits (per-file bytes, part counts, field sizes), so
 * a chunked upload without Content-Length is bounded too. Files keep their original multipart order.
 */
export async function parseMultipart<S extends z.ZodType>(
  ctx: AppContext,
  spec: MultipartSpec<S>,
): Promise<{ fields: z.infer<S>; files: UploadedFile[] }> {
  if (!ctx.is('multipart/form-data')) throw invalid('expected a multipart/form-data body');
  const upload = multer({
    storage: multer.memoryStorage(),
    limits: {
      fileSize: spec.maxFileBytes,
      files: spec.maxFiles,
      fields: 50,
      fieldSize: 1024 * 1024,
      parts: spec.maxFiles + 50,
      headerPairs: 200,
    },
  }).any();
  try {
    await upload(ctx as never, async () => undefined);
  } catch (e) {
    // A body cut at [server] max_request_bytes ends mid-part: that is a 413, not a malformed form.
    assertBodyComplete(ctx);
    throw multerError(e as { code?: string; message?: string }, spec);
  }
  assertBodyComplete(ctx);
  const raw = (ctx.files as multer.File[] | undefined) ?? [];
  const files = raw.map((f) => ({ field: f.fieldname, filename: f.originalname, bytes: f.buffer }));
  for (const name of spec.requiredFiles) {
    const n = files.filter((f) => f.field === name).length;
    if (n === 0) throw invalid(`${name}: Field required`);
    if (n > 1) throw invalid(`${name}: expected exactly one file`);
  }
  const body = { ...((ctx.request as { body?: Record<string, unknown> }).body ?? {}) };
  for (const [k, v] of Object.entries(body)) if (Array.isArray(v)) body[k] = v[v.length - 1];
  return { fields: validate(spec.fields, body), files };
}

function multerError(e: { code?: string; message?: string }, spec: MultipartSpec<z.ZodType>): ApiError {
  switch (e.code) {
    case 'LIMIT_FILE_SIZE':
      return Errors.imageTooLarge({ maxBytes: spec.maxFileBytes });
    case 'LIMIT_FILE_COUNT':
      return spec.tooManyFiles?.() ?? invalid(`too many parts (at most ${spec.maxFiles} files)`);
    case 'LIMIT_PART_COUNT':
      return invalid(`too many parts (at most ${spec.maxFiles} files)`);
    case 'LIMIT_FIELD_COUNT':
    case 'LIMIT_FIELD_KEY':
    case 'LIMIT_FIELD_VALUE':
      return invalid('a form field is too large or there are too many fields');
    default:
      // busboy's own parse errors ("Unexpected end of form", "Malformed part header", ...)
      return invalid(`malformed multipart body (${e.message ?? 'unknown error'})`);
  }
}
