import type Koa from 'koa';
import type { Logger } from 'pino';
import { isApiError, isVigilError } from '../contract/errors.js';
import type { AuditLog, AuditRecord } from '../users/auditLog.js';
import type { AppState, Credential } from './route.js';

/** Who acted, as the audit log names them. */
export function auditActor(
  credential: Credential | undefined,
): Pick<AuditRecord, 'actor_type' | 'actor' | 'user_id' | 'session_id'> {
  switch (credential?.kind) {
    case 'session':
      return {
        actor_type: 'user',
        actor: credential.username,
        user_id: credential.userId,
        session_id: credential.sessionId,
      };
    case 'api_key':
      return { actor_type: 'api_key', actor: credential.keyId === null ? 'api key' : `api key #${credential.keyId}` };
    case 'kiosk':
      return { actor_type: 'kiosk', actor: `kiosk ${credential.token.slice(0, 9)}` };
    default:
      return { actor_type: 'anonymous', actor: 'anonymous' };
  }
}

/**
 * Records an audited operation once it is answered: who (from the credential the guard set, or the one a
 * sign-in made), what (the operationId, method and path), the status and error code, and the handler's
 * detail. Refusals are recorded too (a viewer's 403). A failing write is logged and does not change the
 * answer: the operation itself has happened.
 */
export function auditTrail(audit: AuditLog, action: string, log: Logger): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    let status = 500;
    let errorCode: string | null = null;
    try {
      await next();
      status = ctx.status;
    } catch (e) {
      status = isApiError(e) ? e.status : 500;
      errorCode = isVigilError(e) ? e.code : 'internal_error';
      throw e;
    } finally {
      try {
        audit.record({
          source: 'api',
          ...auditActor(ctx.state.credential),
          address: ctx.ip,
          action,
          method: ctx.method,
          path: ctx.path,
          status,
          error_code: errorCode,
          request_id: ctx.state.requestId,
          detail: ctx.state.auditDetail,
        });
      } catch (e) {
        log.error({ err: e, action, request_id: ctx.state.requestId }, 'the audit log could not record an operation');
      }
    }
  };
}
