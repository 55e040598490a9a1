import type Koa from 'koa';
import type { Logger } from 'pino';
import { type ApiError, Errors, isApiError } from '../contract/errors.js';
import { isStorageFull, type StorageGuard } from '../store/storageGuard.js';
import type { AppState } from './route.js';

export interface RecentError {
  code: string;
  path: string;
  request_id: string;
  status: number;
  at: string;
}

/** The last few errors, for /v1/system. */
export class RecentErrors {
  private readonly items: RecentError[] = [];
  constructor(private readonly limit = 10) {}
  add(e: RecentError): void {
    this.items.push(e);
    if (this.items.length > this.limit) this.items.shift();
  }
  list(): RecentError[] {
    return [...this.items].reverse();
  }
}

/** Maps framework errors (koa-router, http-errors, body parsing) onto the contract's codes. */
function toApiError(err: unknown): ApiError {
  if (isApiError(err)) return err;
  const e = err as { status?: number; statusCode?: number; expose?: boolean; message?: string; type?: string };
  const status = e.status ?? e.statusCode;
  if (status === 404) return Errors.routeNotFound();
  if (status === 405 || status === 501) return Errors.methodNotAllowed();
  if (status === 413) return Errors.requestTooLarge();
  if (status === 400 && e.expose) return Errors.invalidRequest(e.message ?? 'bad request');
  if (status && status >= 400 && status < 500 && e.expose) return Errors.httpError(status, e.message ?? 'HTTP error');
  return Errors.internalError();
}

/** The error itself or the first cause in its chain that says the disk is full. */
function fullCause(err: unknown): { code?: string } {
  let e = err as { code?: string; cause?: unknown } | undefined;
  for (let i = 0; i < 5 && e; i++) {
    if (isStorageFull(e)) return e;
    e = e.cause as typeof e;
  }
  return (err ?? {}) as { code?: string };
}

function storageDetails(storage: StorageGuard): Record<string, unknown> {
  const s = storage.status();
  return { free_bytes: s.free_bytes, reserve_bytes: s.reserve_bytes };
}

/**
 * While the disk is full, requests that would add data answer 507 insufficient_storage up front, so the
 * space the released reserve gave back is kept for deletes. Reads, deletes and the pure-compute POSTs
 * (detect, compare, embeddings, search) still run.
 */
export function storageGate(storage: StorageGuard): Koa.Middleware<AppState> {
  const computeOnly = /^\/v1\/(detect|compare|embeddings)$|^\/v1\/collections\/[^/]+\/search$|^\/mcp/;
  return async (ctx, next) => {
    if (['POST', 'PUT', 'PATCH'].includes(ctx.method) && !computeOnly.test(ctx.path) && storage.isFull()) {
      throw Errors.insufficientStorage({ reason: storage.status().reason, ...storageDetails(storage) });
    }
    await next();
  };
}

/**
 * Whether the client went away before its reply: the request stream was aborted (an upload cut off) or the
 * socket is gone. Whatever failed then (a multipart or JSON reader at a body that ended early, work stopped
 * by the request's signal) is no fault of the server nor a malformed request: it is answered (to nobody)
 * and counted as 499 client_closed_request, never as a 400 or a 500 (issue 36.1).
 */
function clientGone(ctx: Koa.ParameterizedContext<AppState>): boolean {
  return ctx.req.readableAborted || ctx.req.socket.destroyed;
}

/**
 * Shapes every failure, thrown anywhere below, into the one envelope. Unknown exceptions are logged with
 * their stack and reported as internal_error without leaking their text.
 */
export function errorEnvelope(log: Logger, recent: RecentErrors, storage?: StorageGuard): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw Errors.routeNotFound();
    } catch (err) {
      // A full disk (SQLITE_FULL, ENOSPC) anywhere below is a typed 507, and puts the guard in its full state.
      const full = storage && isStorageFull(fullCause(err));
      if (full) storage.markFull(`a write failed: ${fullCause(err).code}`);
      // Whatever a reader made of a body cut at the size limit, the cause is its size.
      const api =
        ctx.state.bodyTooLarge ??
        (full
          ? Errors.insufficientStorage({ reason: fullCause(err).code, ...storageDetails(storage) })
          : clientGone(ctx)
            ? Errors.clientClosedRequest()
            : toApiError(err));
      if (api.status >= 500 && api.code === 'internal_error')
        log.error({ err, request_id: ctx.state.requestId, path: ctx.path }, 'unhandled error');
      recent.add({
        code: api.code,
        path: ctx.path,
        request_id: ctx.state.requestId,
        status: api.status,
        at: new Date().toISOString(),
      });
      ctx.status = api.status;
      for (const [k, v] of Object.entries(api.headers)) ctx.set(k, v);
      ctx.body = {
        error: { code: api.code, message: api.message, details: api.details },
        request_id: ctx.state.requestId,
      };
    }
  };
}
