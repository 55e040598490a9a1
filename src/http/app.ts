import Router from '@koa/router';
import Koa from 'koa';
import { FailureThrottle } from '../auth/failureThrottle.js';
import { requireCredential, requireRole } from './auth.js';
import { auditTrail } from './auditTrail.js';
import { forwardedFromTrustedProxies } from './browserSession.js';
import { userRoutes } from './routes/users.js';
import { mountMcp } from './mcpRoute.js';
import { scraperRoutes } from './routes/scrapers.js';
import { requireWorkspaceKey } from './workspaceAuth.js';
import { errorEnvelope, storageGate } from './errors.js';
import { integrityGate } from './integrityGate.js';
import {
  bodySizeLimit,
  closeOnUnreadBody,
  cors,
  deadline,
  keepAliveHint,
  requestId,
  securityHeaders,
} from './middleware.js';
import { buildOpenApi } from './openapi.js';
import { isAudited, koaPath, requiredRole, type AppState, type RouteSpec } from './route.js';
import { addonRoutes } from './routes/addons.js';
import { collectionRoutes } from './routes/collections.js';
import { GALLERY_IMPORT_PATH, galleryImportRoutes } from './routes/galleryImport.js';
import { faceRoutes } from './routes/faces.js';
import { monitorRoutes } from './routes/monitors.js';
import { monitorSetupRoutes } from './routes/monitorSetup.js';
import { settingsRoutes } from './routes/settings.js';
import { eventRoutes } from './routes/events.js';
import { unknownRoutes } from './routes/unknowns.js';
import { webhookRoutes } from './routes/webhooks.js';
import { kioskRoutes } from './routes/kiosk.js';
import { systemRoutes } from './routes/system.js';
import { RUN_WEBHOOK_EVENTS, workspaceWebhookRoutes } from './routes/workspaceWebhooks.js';
import type { Runtime } from './runtime.js';
import { webUi } from './webUi.js';
import { mountOperations } from './operations.js';
import { AuthorizedStreams } from './authorizedStreams.js';

/** Wrong keys, kiosk tokens, passwords and set-up codes per source address, one budget for them all. */
export function failureThrottle(config: Runtime['loaded']['config']): FailureThrottle {
  return new FailureThrottle({
    maxFailures: config.auth.max_failures,
    windowMs: config.auth.failure_window_seconds * 1000,
  });
}

/**
 * Every API operation the daemon serves (the auth test enumerates this list). `streams`: the open previews,
 * watched so that revoking the credential that opened one ends it; `throttle`: the failure budget sign-ins
 * share with the guards.
 */
export function apiRoutes(
  rt: Runtime,
  streams = new AuthorizedStreams(),
  throttle = failureThrottle(rt.loaded.config),
): RouteSpec[] {
  return [
    ...systemRoutes(rt),
    ...addonRoutes(rt),
    ...faceRoutes(rt),
    ...collectionRoutes(rt),
    ...galleryImportRoutes(rt),
    ...monitorRoutes(rt, streams),
    ...monitorSetupRoutes(rt),
    ...settingsRoutes(rt),
    ...eventRoutes(rt),
    ...unknownRoutes(rt),
    ...webhookRoutes(rt),
    ...scraperRoutes(rt),
    ...workspaceWebhookRoutes(rt),
    ...kioskRoutes(rt, streams),
    ...userRoutes(rt, streams, throttle),
  ];
}

export function createApp(rt: Runtime): { app: Koa<AppState>; routes: RouteSpec[] } {
  const { config } = rt.loaded;
  const app = new Koa<AppState>();
  // Errors are shaped and logged by our middleware; Koa's default handler would print them again.
  app.silent = true;
  // Wrong keys per source address, shared by the admin and the workspace keys, passwords and set-up codes.
  const throttle = failureThrottle(config);
  const routes = apiRoutes(rt, new AuthorizedStreams(), throttle);
  const openapi = buildOpenApi(routes, RUN_WEBHOOK_EVENTS);
  const router = new Router<AppState>();
  const deps = { keys: rt.keys, kiosk: rt.kiosk, users: rt.users, throttle };
  const auth = requireCredential(deps, false);
  const workspaceAuth = requireWorkspaceKey(rt.workspaces, throttle);
  const kioskAuth = requireCredential(deps, true);
  for (const r of routes) {
    // Workspace routes always need a workspace key: it names the tenant, even when the face API is open.
    const guard =
      r.auth === 'workspace' ? [workspaceAuth] : r.public || !config.auth.enabled ? [] : r.kiosk ? [kioskAuth] : [auth];
    // Audited after the guard (it names who acted) and before the role check (a refusal is recorded too).
    const audit = isAudited(r) ? [auditTrail(rt.audit, r.operationId, rt.log)] : [];
    const role = guard.length && r.auth !== 'workspace' ? [requireRole(requiredRole(r))] : [];
    router[r.method](koaPath(r.path), ...guard, ...audit, ...role, async (ctx) => r.handler(ctx as never));
  }
  mountMcp(router, rt);
  mountOperations(router, rt);
  router.get('/openapi.json', (ctx) => {
    ctx.body = openapi;
  });

  // First: the client address and scheme behind a trusted proxy, for everything after (throttle, cookies, logs).
  app.use(forwardedFromTrustedProxies(config.server.trusted_proxies));
  app.use(requestId(rt.log));
  if (rt.metrics) app.use(rt.metrics.http());
  app.use(securityHeaders());
  app.use(keepAliveHint());
  app.use(cors(config.server.cors_origins));
  app.use(closeOnUnreadBody());
  app.use(errorEnvelope(rt.log, rt.recentErrors, rt.db.storage));
  app.use(deadline(config.server.request_timeout_seconds));
  app.use(integrityGate(rt.db));
  app.use(storageGate(rt.db.storage));
  app.use(bodySizeLimit(config.server.max_request_bytes, (path) => GALLERY_IMPORT_PATH.test(path)));
  // The browser UI answers only its own paths; API paths and their 404 envelopes pass through.
  if (!config.web.disabled) app.use(webUi());
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true }));
  return { app, routes };
}
