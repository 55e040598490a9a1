import type Koa from 'koa';
import { Errors } from '../contract/errors.js';
import type { ApiKeyStore } from '../auth/apiKeyStore.js';
import { KIOSK_TOKEN_PREFIX, type KioskTokenStore } from '../auth/kioskTokenStore.js';

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

/**
 * The guard of a monitor's preview and state: the admin key, or a kiosk token (vk_…) issued for the
 * monitor in the path. Anything else is 401, exactly as the admin guard answers.
 */
export function requireApiKeyOrKiosk(keys: ApiKeyStore, kiosk: KioskTokenStore): Koa.Middleware {
  const admin = requireApiKey(keys);
  return async (ctx, next) => {
    const presented = parseBearer(ctx.get('Authorization') || undefined);
    const monitorId = (ctx as unknown as { params?: Record<string, string> }).params?.monitor_id;
    if (presented?.startsWith(KIOSK_TOKEN_PREFIX) && monitorId !== undefined) {
      if (!kiosk.allows(presented, monitorId)) throw Errors.unauthorized('The kiosk token is not valid for this monitor.');
      return next();
    }
    return admin(ctx, next);
  };
}
