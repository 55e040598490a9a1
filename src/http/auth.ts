import type Koa from 'koa';
import { Errors } from '../contract/errors.js';
import type { ApiKeyStore } from '../auth/apiKeyStore.js';
import type { FailureThrottle } from '../auth/failureThrottle.js';
import { KIOSK_TOKEN_PREFIX, type KioskTokenStore } from '../auth/kioskTokenStore.js';
import type { AppState } from './route.js';

/** `Authorization: Bearer <key>`: case-insensitive scheme, exactly one space, as upstream. */
export function parseBearer(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^bearer ([^ ]+)$/i.exec(header);
  return m ? m[1]! : null;
}

/** Upstream's message for a missing and for a wrong key alike. */
export const UNAUTHORIZED_MESSAGE = 'A valid Bearer API key is required.';

/**
 * Route-level guard; the app mounts it on every route not marked public. A key the process already
 * verified is accepted even from a throttled address (checking it costs one HMAC); a wrong key from an
 * address past its failure budget is answered 429 before anything else is computed.
 */
export function requireApiKey(keys: ApiKeyStore, throttle: FailureThrottle): Koa.Middleware {
  return async (ctx, next) => {
    const presented = parseBearer(ctx.get('Authorization') || undefined);
    if (!presented) throw Errors.unauthorized(UNAUTHORIZED_MESSAGE);
    const address = ctx.ip;
    const wait = throttle.blockedFor(address);
    if (wait > 0 && !(keys.fastPath && (await keys.verify(presented)))) throw Errors.tooManyAuthFailures(wait);
    if (!(await keys.verify(presented))) {
      throttle.failed(address);
      throw Errors.unauthorized(UNAUTHORIZED_MESSAGE);
    }
    throttle.succeeded(address);
    (ctx.state as AppState).credential = { kind: 'api_key' };
    await next();
  };
}

/**
 * The guard of a monitor's preview and state: the admin key, or a kiosk token (vk_…) issued for the
 * monitor in the path. Anything else is 401, exactly as the admin guard answers.
 */
export function requireApiKeyOrKiosk(
  keys: ApiKeyStore,
  kiosk: KioskTokenStore,
  throttle: FailureThrottle,
): Koa.Middleware {
  const admin = requireApiKey(keys, throttle);
  return async (ctx, next) => {
    const presented = parseBearer(ctx.get('Authorization') || undefined);
    const monitorId = (ctx as unknown as { params?: Record<string, string> }).params?.monitor_id;
    if (presented?.startsWith(KIOSK_TOKEN_PREFIX) && monitorId !== undefined) {
      // Wrong kiosk tokens count against the same per-address budget as wrong keys.
      const wait = throttle.blockedFor(ctx.ip);
      if (wait > 0) throw Errors.tooManyAuthFailures(wait);
      if (!kiosk.allows(presented, monitorId)) {
        throttle.failed(ctx.ip);
        throw Errors.unauthorized('The kiosk token is not valid for this monitor.');
      }
      (ctx.state as AppState).credential = { kind: 'kiosk', token: presented };
      return next();
    }
    return admin(ctx, next);
  };
}
