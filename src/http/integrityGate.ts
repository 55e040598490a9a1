import type Koa from 'koa';
import { Errors } from '../contract/errors.js';
import { INTEGRITY_PENDING, type OpenedDatabase } from '../store/database.js';

/** Served whatever the check says: they report it. */
const ALWAYS = [/^\/v1\/health\/?$/, /^\/v1\/system\/?$/];

/**
 * The rule that keeps a corrupt database from serving. A file the last daemon closed in order is known
 * good at open (its clean-shutdown marker); after a crash `PRAGMA quick_check` runs in the background
 * once the daemon is ready (it reads the whole file: 105 s at 13 GB):
 * - check running: everything is served and the monitors run (SQLite refuses a write that meets a
 *   damaged page itself); only the work that rewrites pages all over the file waits for the check
 *   (space reclamation, purging deleted collections). /v1/health says `degraded` with the reason;
 * - check failed: only /v1/health (not_ready) and /v1/system (with the result) answer; everything else
 *   under /v1 and /workspaces is 503 `database_not_verified`, and the background writers are stopped;
 * - check passed (or the marker): no effect.
 */
export function integrityGate(db: OpenedDatabase): Koa.Middleware {
  return async (ctx, next) => {
    const state = db.integrity;
    if (
      state !== 'ok' &&
      state !== INTEGRITY_PENDING &&
      !ALWAYS.some((r) => r.test(ctx.path)) &&
      (ctx.path.startsWith('/v1/') || ctx.path.startsWith('/workspaces/') || ctx.path === '/mcp')
    )
      throw Errors.databaseNotVerified(state);
    await next();
  };
}
