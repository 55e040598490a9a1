import type Koa from 'koa';
import { Errors } from '../contract/errors.js';
import { INTEGRITY_PENDING, type OpenedDatabase } from '../store/database.js';

/** POST routes that only read (inference, search): served while the start-up integrity check runs. */
const READ_ONLY_POSTS = [/^\/v1\/(detect|compare|embeddings)\/?$/, /^\/v1\/collections\/[^/]+\/search\/?$/];
/** Served whatever the check says: they report it. */
const ALWAYS = [/^\/v1\/health\/?$/, /^\/v1\/system\/?$/];

/**
 * The rule that keeps a corrupt database from serving while `PRAGMA quick_check` runs in the
 * background after start-up (it used to run before the port opened):
 * - check running: reads are served (GET, and the POSTs that only read: detect, compare, embeddings,
 *   search); every other request (a write) answers 503 `database_not_verified`, and no background
 *   writer (monitors, event history, webhooks, MQTT, scrapes) has started;
 * - check failed: only /v1/health (not_ready) and /v1/system (with the result) answer; everything else
 *   under /v1 and /workspaces is 503 `database_not_verified`;
 * - check passed: no effect.
 */
export function integrityGate(db: OpenedDatabase): Koa.Middleware {
  return async (ctx, next) => {
    const state = db.integrity;
    if (
      state !== 'ok' &&
      !ALWAYS.some((r) => r.test(ctx.path)) &&
      (ctx.path.startsWith('/v1/') || ctx.path.startsWith('/workspaces/') || ctx.path === '/mcp')
    ) {
      const reads =
        ctx.method === 'GET' ||
        ctx.method === 'HEAD' ||
        ctx.method === 'OPTIONS' ||
        (ctx.method === 'POST' && READ_ONLY_POSTS.some((r) => r.test(ctx.path)));
      if (state !== INTEGRITY_PENDING || !reads) throw Errors.databaseNotVerified(state);
    }
    await next();
  };
}
