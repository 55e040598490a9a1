import type Koa from 'koa';
import { Errors } from '../contract/errors.js';
import type { FailureThrottle } from '../auth/failureThrottle.js';
import type { WorkspaceRepository } from '../workspaces/repository.js';
import { parseBearer } from './auth.js';
import type { AppState } from './route.js';

/** The workspace a Bearer workspace key (vgl_…) belongs to; 401 when missing, unknown or revoked. */
export async function workspaceOf(
  store: WorkspaceRepository,
  authorization: string | undefined,
  throttle?: { throttle: FailureThrottle; address: string },
): Promise<string> {
  const presented = parseBearer(authorization);
  if (!presented) throw Errors.unauthorized('A valid Bearer workspace key is required.');
  const hit = await store.authenticate(presented);
  if (!hit) {
    if (throttle) {
      const wait = throttle.throttle.blockedFor(throttle.address);
      if (wait > 0) throw Errors.tooManyAuthFailures(wait);
      throttle.throttle.failed(throttle.address);
    }
    throw Errors.unauthorized('The workspace key is not valid.');
  }
  throttle?.throttle.succeeded(throttle.address);
  return hit.workspaceId;
}

/**
 * Guard of the /workspaces/{workspace_id}/… routes: a key only opens its own workspace. Another
 * workspace's path answers 404 workspace_not_found, the same as a workspace that does not exist, so
 * a key cannot even learn which workspaces exist.
 */
export function requireWorkspaceKey(store: WorkspaceRepository, throttle: FailureThrottle): Koa.Middleware<AppState> {
  return async (ctx, next) => {
    const workspaceId = await workspaceOf(store, ctx.get('Authorization') || undefined, { throttle, address: ctx.ip });
    const wanted = (ctx as unknown as { params: Record<string, string> }).params.workspace_id;
    if (wanted !== workspaceId) throw Errors.workspaceNotFound(wanted ?? '');
    ctx.state.workspaceId = workspaceId;
    await next();
  };
}
