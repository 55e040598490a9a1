import { isIP } from 'node:net';
import type Koa from 'koa';
import { Errors } from '../contract/errors.js';
import type { AppState } from './route.js';

/**
 * What the HTTP layer needs for browsers: the client's address and scheme behind a trusted proxy, the
 * session cookie, and the checks that keep another site from acting with it (Origin, Sec-Fetch-Site and
 * the session's CSRF token).
 */

export const SESSION_COOKIE = 'vigil_session';
export const CSRF_HEADER = 'X-CSRF-Token';

type Ctx = Koa.ParameterizedContext<AppState>;

/** "::ffff:127.0.0.1" is how Node reports an IPv4 client on a dual-stack socket. */
const plainAddress = (a: string | undefined) => (a?.startsWith('::ffff:') ? a.slice(7) : (a ?? ''));

/** The rightmost entry of X-Forwarded-For that is not itself a trusted proxy: the client as the proxies saw it. */
export function forwardedClient(remote: string, forwardedFor: string, trusted: ReadonlySet<string>): string {
  const hops = forwardedFor
    .split(',')
    .map((h) => plainAddress(h.trim()))
    .filter((h) => isIP(h) !== 0);
  let client = remote;
  for (let i = hops.length - 1; i >= 0 && trusted.has(client); i--) client = hops[i]!;
  return client;
}

/**
 * For connections from `[server] trusted_proxies` only: the client address comes from X-Forwarded-For
 * (so the failure throttle counts each client, not the proxy) and HTTPS from X-Forwarded-Proto (so the
 * session cookie is Secure). From anyone else those headers are ignored. Sets `ctx.state.https`.
 */
export function forwardedFromTrustedProxies(proxies: string[]): Koa.Middleware<AppState> {
  const trusted = new Set(proxies.map((p) => plainAddress(p)));
  return async (ctx, next) => {
    const remote = plainAddress(ctx.req.socket.remoteAddress);
    let https = (ctx.req.socket as { encrypted?: boolean }).encrypted === true;
    if (trusted.has(remote)) {
      const xff = ctx.get('X-Forwarded-For');
      if (xff) ctx.request.ip = forwardedClient(remote, xff, trusted);
      const proto = ctx.get('X-Forwarded-Proto').split(',')[0]!.trim().toLowerCase();
      if (proto) https = proto === 'https';
    }
    ctx.state.https = https;
    await next();
  };
}

/** The session token of the request's cookie, or null. */
export function sessionCookie(ctx: Ctx): string | null {
  for (const part of (ctx.get('Cookie') || '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim() || null;
  }
  return null;
}

/** HttpOnly (no script reads it), SameSite=Strict (no other site sends it), Secure whenever the client is on HTTPS. */
export function setSessionCookie(ctx: Ctx, token: string, maxAgeSeconds: number): void {
  ctx.append('Set-Cookie', cookieLine(ctx, token, maxAgeSeconds));
}

export function clearSessionCookie(ctx: Ctx): void {
  ctx.append('Set-Cookie', cookieLine(ctx, '', 0));
}

function cookieLine(ctx: Ctx, value: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${value}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${ctx.state.https ? '; Secure' : ''}`;
}

/** This request's own origin, as a browser on it would write its Origin header. */
const ownOrigin = (ctx: Ctx) => `${ctx.state.https ? 'https' : 'http'}://${ctx.host}`;

/**
 * A state-changing action a browser could be tricked into: a cross-site Origin, "null" (sandboxed frames,
 * file://) or a malformed one is refused; same-origin pages and configured CORS origins are fine. Clients
 * that send no Origin (curl, SDKs) are not browsers and pass.
 */
export function assertOriginAllowed(ctx: Ctx, corsOrigins: string[]): void {
  const origin = ctx.get('Origin');
  if (!origin) return;
  let parsed: URL | null = null;
  try {
    parsed = origin === 'null' ? null : new URL(origin);
  } catch {
    parsed = null;
  }
  if (parsed !== null && parsed.origin === origin && (origin === ownOrigin(ctx) || corsOrigins.includes(origin)))
    return;
  throw Errors.originNotAllowed(origin);
}

/**
 * What only a page of this very origin may send with the session cookie: Sec-Fetch-Site (sent by every
 * current browser) must be same-origin, and an Origin header must be this origin. Another port of the same
 * host is "same-site" and gets the cookie despite SameSite=Strict, so it is refused here.
 */
export function isSameOriginBrowserRequest(ctx: Ctx): boolean {
  const site = ctx.get('Sec-Fetch-Site');
  if (site && site !== 'same-origin' && site !== 'none') return false;
  const origin = ctx.get('Origin');
  return !origin || origin === ownOrigin(ctx);
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** CSRF defence of cookie-authenticated requests that change something: same origin, and the session's token. */
export function assertCsrf(ctx: Ctx, matches: (presented: string) => boolean): void {
  if (SAFE_METHODS.has(ctx.method)) return;
  if (!isSameOriginBrowserRequest(ctx)) throw Errors.csrfFailed('cross_site');
  const presented = ctx.get(CSRF_HEADER);
  if (!presented) throw Errors.csrfFailed('missing_token');
  if (!matches(presented)) throw Errors.csrfFailed('wrong_token');
}
