import type { z } from 'zod';
import { Errors } from '../contract/errors.js';
import { invalid, validate } from '../contract/validation.js';
import { assertBodyComplete, closeAfterReply } from './middleware.js';
import type { AppContext } from './route.js';

/**
 * The raw request body as UTF-8, 413 request_too_large past `maxBytes` (checked while streaming). Past
 * the limit the rest is drained and dropped rather than the socket destroyed, and the connection is
 * closed after the reply, so the client reads a clean 413.
 */
export async function readBodyText(ctx: AppContext, maxBytes: number): Promise<string> {
  const req = ctx.req;
  const text = await new Promise<string | null>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        req.resume();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onError = (e: Error) => {
      cleanup();
      reject(e);
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    if (req.readableEnded) return resolve('');
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
  assertBodyComplete(ctx);
  if (text === null) {
    closeAfterReply(ctx);
    throw Errors.requestTooLarge(maxBytes);
  }
  return text;
}

/**
 * JSON bodies are parsed whole on the event loop, so their size is bounded before the parse, below the
 * upload-sized [server] max_request_bytes: a 15 MB metadata PATCH held every other request (even
 * /v1/health) for 9 s (issue 36.1). The largest JSON body any route takes is a few KB (a collection with
 * 64 KiB of metadata, a scrape request); 1 MiB parses in ~10 ms.
 */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

/** Reads a JSON request body (at most MAX_JSON_BODY_BYTES, or `maxBytes` when smaller) and validates it strictly. */
export async function readJson<S extends z.ZodType>(ctx: AppContext, schema: S, maxBytes: number): Promise<z.infer<S>> {
  if (!ctx.is('application/json')) throw invalid('expected an application/json body');
  // Read first: a 413 from the reader must not become "not valid JSON".
  const text = await readBodyText(ctx, Math.min(maxBytes, MAX_JSON_BODY_BYTES));
  let body: unknown;
  try {
    body = JSON.parse(text);
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
