import type Koa from 'koa';
import { Errors } from '../contract/errors.js';
import { roleAllows, type RoleT } from '../contract/users.js';
import type { ApiKeyStore } from '../auth/apiKeyStore.js';
import type { FailureThrottle } from '../auth/failureThrottle.js';
import { KIOSK_TOKEN_PREFIX, type KioskTokenStore } from '../auth/kioskTokenStore.js';
import type { UserService } from '../users/userService.js';
import { assertCsrf, clearSessionCookie, sessionCookie } from './browserSession.js';
import type { AppState, Credential } from './route.js';

/** `Authorization: Bearer <key>`: case-insensitive scheme, exactly one space, as upstream. */
export function parseBearer(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^bearer ([^ ]+)$/i.exec(header);
  return m ? m[1]! : null;
}

/** Upstream's message for a missing and for a wrong key alike. */
export const UNAUTHORIZED_MESSAGE = 'A valid Bearer API key is required.';
const SESSION_ENDED = 'The session has ended (signed out, revoked or expired): sign in again.';

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
    (ctx.state as AppState).credential = { kind: 'api_key', keyId: keys.activeKeyId() };
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

/**
 * The guard of every non-public /v1 route: an Authorization header is checked exactly as before (the API
 * key, or a kiosk token on `kiosk` routes), so API clients see no change. Without one, the session cookie
 * of a signed-in user: unknown or ended is 401 (and the cookie is cleared), and a request that changes
 * something must carry the session's CSRF token and come from this origin (403 csrf_failed). The role
 * is checked afterwards (requireRole), so a refusal can be audited with the user who was refused.
 */
export function requireCredential(
  deps: { keys: ApiKeyStore; kiosk: KioskTokenStore; users: UserService; throttle: FailureThrottle },
  kioskRoute: boolean,
): Koa.Middleware<AppState> {
  const bearer = kioskRoute
    ? requireApiKeyOrKiosk(deps.keys, deps.kiosk, deps.throttle)
    : requireApiKey(deps.keys, deps.throttle);
  return async (ctx, next) => {
    if (ctx.get('Authorization')) return bearer(ctx, next);
    const token = sessionCookie(ctx);
    if (!token) throw Errors.unauthorized(UNAUTHORIZED_MESSAGE);
    const auth = deps.users.authenticate(token);
    if (!auth) {
      clearSessionCookie(ctx);
      throw Errors.unauthorized(SESSION_ENDED);
    }
    assertCsrf(ctx, (presented) => deps.users.csrfMatches(token, presented));
    ctx.state.credential = { kind: 'session', ...auth, csrfToken: deps.users.csrfToken(token) };
    await next();
  };
}

/** The role a credential acts with: the API key is admin; a kiosk token has none (its routes check it). */
export function roleOf(credential: Credential | undefined): RoleT | null {
  if (!credential) return 'admin';
  if (credential.kind === 'session') return credential.role;
  return credential.kind === 'api_key' ? 'admin' : null;
}

/** 403 forbidden_role when a signed-in user's role is below what the operation needs. */
export function requireRole(need: RoleT): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const credential = ctx.state.credential;
    if (credential?.kind === 'session' && !roleAllows(credential.role, need))
      throw Errors.forbiddenRole(need, credential.role);
    await next();
  };
}

/**
 * A check that holds while the credential that opened a long-lived response (a preview) still admits it:
 * the kiosk token not revoked, the API key not rotated, the session not ended and its user still there.
 */
export function credentialCheck(
  deps: { keys: ApiKeyStore; kiosk: KioskTokenStore; users: UserService },
  credential: Credential,
  monitorId: string,
): () => boolean {
  switch (credential.kind) {
    case 'kiosk':
      return () => deps.kiosk.allows(credential.token, monitorId);
    case 'session':
      return () => deps.users.sessionValid(credential.sessionId);
    case 'api_key':
      return deps.keys.activeKeyCheck();
  }
}
