import type { z } from 'zod';
import { ApiError } from '../errors.js';
import type { AppContext } from './route.js';

export const invalid = (message: string, details: Record<string, unknown> = {}) => new ApiError(400, 'invalid_request', `Request validation failed: ${message}`, details);

export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = issue.path.join('.');
  const what = issue.code === 'unrecognized_keys' ? `unknown field(s) ${issue.keys.join(', ')}` : issue.message;
  throw invalid(path ? `${path}: ${what}` : what, { field: path });
}

/** The raw request body as UTF-8, 413 request_too_large past `maxBytes` (checked while streaming). */
export async function readBodyText(ctx: AppContext, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new ApiError(413, 'request_too_large', `The request body exceeds ${maxBytes} bytes.`, { max_request_bytes: maxBytes });
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a JSON request body (bounded by the app's body-size limit) and validates it strictly. */
export async function readJson<S extends z.ZodType>(ctx: AppContext, schema: S, maxBytes: number): Promise<z.infer<S>> {
  if (!ctx.is('application/json')) throw invalid('expected an application/json body');
  let body: unknown;
  try {
    body = JSON.parse(await readBodyText(ctx, maxBytes));
  } catch {
    throw invalid('the body is not valid JSON');
  }
  return validate(schema, body);
}

/** Validates query parameters (the last value wins when one is repeated). */
export function readQuery<S extends z.ZodType>(ctx: AppContext, schema: S): z.infer<S> {
  const q: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(ctx.query)) q[k] = Array.isArray(v) ? v[v.length - 1] : v;
  return validate(schema, q);
}
