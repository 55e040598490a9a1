import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { Errors } from '../contract/errors.js';
import type { AppState } from './route.js';

/** x-request-id on every response, and one log line per request. Outermost, so errors carry the id too. */
export function requestId(log: Logger): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const started = performance.now();
    ctx.state.requestId = randomUUID();
    ctx.set('x-request-id', ctx.state.requestId);
    try {
      await next();
    } finally {
      const ms = Math.round((performance.now() - started) * 1000) / 1000;
      log.info({ request_id: ctx.state.requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms }, 'request');
    }
  };
}

/**
 * The request deadline: past it the client gets 503 request_timeout and `ctx.state.signal` aborts, so
 * work still queued for inference is dropped. A client that disconnects aborts the signal too.
 */
export function deadline(timeoutSeconds: number): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const controller = new AbortController();
    ctx.state.signal = controller.signal;
    const timeoutError = Errors.requestTimeout(timeoutSeconds);
    const onClose = () => { if (!ctx.res.writableFinished) controller.abort(Errors.clientClosedRequest()); };
    ctx.res.once('close', onClose);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        controller.abort(timeoutError);
        reject(timeoutError);
      }, timeoutSeconds * 1000);
    });
    try {
      await Promise.race([next(), expired]);
    } finally {
      clearTimeout(timer);
      ctx.res.off('close', onClose);
    }
  };
}

/** Error envelopes set their own status; everything else carries the security headers too. */
export function securityHeaders(): Koa.Middleware {
  return async (ctx, next) => {
    ctx.set({
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      'Permissions-Policy': 'camera=(), microphone=(), geolocation=()',
      'Content-Security-Policy':
        "default-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    });
    await next();
  };
}

/** CORS only for the configured exact origins; no credentials. */
export function cors(origins: string[]): Koa.Middleware {
  const allowed = new Set(origins);
  return async (ctx, next) => {
    const origin = ctx.get('Origin');
    if (!origin || !allowed.has(origin)) {
      await next();
      return;
    }
    ctx.vary('Origin');
    ctx.set('Access-Control-Allow-Origin', origin);
    ctx.set('Access-Control-Expose-Headers', 'x-request-id');
    if (ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method')) {
      ctx.set('Access-Control-Allow-Methods', 'GET, POST, PATCH, DELETE');
      ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type');
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
      return;
    }
    await next();
  };
}

/** Rejects a declared body over the limit before reading a byte of it. Streaming is bounded by the parsers' own limits. */
export function bodySizeLimit(maxBytes: number, exempt: (path: string) => boolean = () => false): Koa.Middleware {
  return async (ctx, next) => {
    if (exempt(ctx.path)) return next();
    const declared = Number(ctx.get('Content-Length') || 0);
    if (declared > maxBytes) {
      // The rest of the upload is not wanted: close the connection after answering.
      ctx.set('Connection', 'close');
      throw Errors.requestTooLarge(maxBytes);
    }
    await next();
  };
}
