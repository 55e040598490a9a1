import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type Koa from 'koa';
import type { Logger } from 'pino';
import { Errors } from '../contract/errors.js';
import { RefusalLog } from './refusalLog.js';
import type { AppState } from './route.js';

/**
 * x-request-id on every response, and one log line per request, except refusals (429) past the first of
 * their address in an interval, which are counted and logged together (RefusalLog). Outermost, so errors
 * carry the id too.
 */
export function requestId(log: Logger): Koa.Middleware<AppState> {
  const refusals = new RefusalLog((address, refused, intervalSeconds) =>
    log.info({ address, status: 429, refused, interval_seconds: intervalSeconds }, 'requests refused'),
  );
  return async (ctx, next) => {
    const started = performance.now();
    ctx.state.requestId = randomUUID();
    ctx.set('x-request-id', ctx.state.requestId);
    try {
      await next();
    } finally {
      const ms = Math.round((performance.now() - started) * 1000) / 1000;
      if (ctx.status !== 429 || refusals.note(ctx.ip))
        log.info(
          { request_id: ctx.state.requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms },
          'request',
        );
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
    const onClose = () => {
      if (!ctx.res.writableFinished) controller.abort(Errors.clientClosedRequest());
    };
    ctx.res.once('close', onClose);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // Made only when it fires: an error captures a stack trace, a cost every request paid before.
        const timeoutError = Errors.requestTimeout(timeoutSeconds);
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

/** Seconds of idle keep-alive advertised to clients (`Keep-Alive: timeout=5`, as Node would say). */
export const KEEP_ALIVE_ADVERTISED_SECONDS = 5;
/**
 * When the server really closes an idle keep-alive connection: well after the advertised time. Clients
 * (undici/fetch: advertised − 1 s, checked by coarse timers) can send a request on a socket just as a
 * server that closes at exactly the advertised time drops it, and that request fails with a reset
 * ("fetch failed"): nodejs/node#52649, nodejs/undici#3141. The margin makes the client always close first.
 */
export const KEEP_ALIVE_SERVER_TIMEOUT_MS = 15_000;

/** Advertises the shorter keep-alive time (Node then adds no header of its own from the longer one). */
export function keepAliveHint(): Koa.Middleware {
  return async (ctx, next) => {
    ctx.set('Keep-Alive', `timeout=${KEEP_ALIVE_ADVERTISED_SECONDS}`);
    await next();
  };
}

/**
 * A reply sent while its request body is only partly read (a route that answered after reading the first
 * line of an import, say) closes the connection after it: the unread rest would otherwise sit in front of
 * the next request on that keep-alive socket, which then hangs and is reset ("fetch failed"). Node drains
 * only bodies nobody began to read. Outside the error envelope, so refusals are covered too.
 */
export function closeOnUnreadBody(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      if (ctx.req.readableDidRead && !ctx.req.complete) closeAfterReply(ctx);
    }
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

/**
 * Bounds every request body by `maxBytes`, declared or not. A declared Content-Length over the limit is
 * refused before a byte is read; a chunked body is counted as it streams: the moment it passes the limit
 * the body ends for whoever reads it (multipart, JSON), the rest is discarded unread, the request answers
 * 413 request_too_large and the connection is closed cleanly after the reply (`Connection: close`).
 */
export function bodySizeLimit(
  maxBytes: number,
  exempt: (path: string) => boolean = () => false,
): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    if (exempt(ctx.path)) return next();
    const declared = Number(ctx.get('Content-Length') || 0);
    if (declared > maxBytes) {
      // The rest of the upload is not wanted: close the connection after answering.
      closeAfterReply(ctx);
      throw Errors.requestTooLarge(maxBytes);
    }
    limitStream(ctx, maxBytes);
    await next();
  };
}

/**
 * Counts the bytes Node's HTTP parser pushes into the request stream (it calls `req.push` for every
 * body chunk, chunked or not). Past the limit the stream ends early and later chunks are dropped,
 * so memory stays bounded and the socket keeps draining until the 413 is written and it is closed.
 */
function limitStream(ctx: Koa.ParameterizedContext<AppState>, maxBytes: number): void {
  const req = ctx.req;
  const push = req.push.bind(req);
  let size = req.readableLength;
  let over = false;
  req.push = (chunk: unknown, encoding?: BufferEncoding): boolean => {
    if (over) return true;
    if (chunk !== null && chunk !== undefined) {
      size += (chunk as Buffer).length;
      if (size > maxBytes) {
        over = true;
        ctx.state.bodyTooLarge = Errors.requestTooLarge(maxBytes);
        closeAfterReply(ctx);
        // Ending a stream whose message is not `complete` makes Node destroy the socket (a RST before
        // the reply reaches the client): the message is complete as far as anyone will read it.
        req.complete = true;
        return push(null);
      }
    }
    return push(chunk, encoding);
  };
}

/** Throws 413 when the body was cut at the size limit (readers call it after the stream ended). */
export function assertBodyComplete(ctx: Koa.ParameterizedContext<AppState>): void {
  if (ctx.state.bodyTooLarge) throw ctx.state.bodyTooLarge;
}

/** How long a connection closed after an early reply keeps draining what the client still sends. */
const LINGER_MS = 2000;

/**
 * Replies with `Connection: close` and closes the socket the way HTTP wants it closed while the client
 * may still be sending (a "lingering close"): our side half-closes after the reply and keeps reading and
 * dropping input until the client closes too, or for LINGER_MS. Destroying the socket with unread input
 * makes the kernel send a RST, and the client would see ECONNRESET instead of the reply.
 */
export function closeAfterReply(ctx: Koa.Context | Koa.ParameterizedContext<AppState>): void {
  ctx.set('Connection', 'close');
  const socket = ctx.req.socket as Socket & { destroySoon?: () => void; vigilLingering?: boolean };
  if (socket.vigilLingering) return;
  socket.vigilLingering = true;
  // Node's server calls destroySoon() once a `Connection: close` reply is written.
  socket.destroySoon = () => {
    socket.end();
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', () => socket.destroy());
  };
}
