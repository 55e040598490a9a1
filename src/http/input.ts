import type { z } from 'zod';
import { Errors } from '../contract/errors.js';
import { invalid, validate } from '../contract/validation.js';
import type { AppContext } from './route.js';

/** The raw request body as UTF-8, 413 request_too_large past `maxBytes` (checked while streaming). */
export async function readBodyText(ctx: AppContext, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw Errors.requestTooLarge(maxBytes);
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
