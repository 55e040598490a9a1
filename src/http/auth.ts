import type Koa from 'koa';
import { Errors } from '../contract/errors.js';
import type { ApiKeyStore } from '../auth/apiKeyStore.js';

/** `Authorization: Bearer <key>`: case-insensitive scheme, exactly one space, as upstream. */
export function parseBearer(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^bearer ([^ ]+)$/i.exec(header);
  return m ? m[1]! : null;
}

/** Route-level guard; the app mounts it on every route not marked public. */
export function requireApiKey(keys: ApiKeyStore): Koa.Middleware {
  return async (ctx, next) => {
    const presented = parseBearer(ctx.get('Authorization') || undefined);
    if (!presented) throw Errors.unauthorized('A valid Bearer API key is required.');
    if (!(await keys.verify(presented))) throw Errors.unauthorized('The API key is not valid.');
    await next();
  };
}
