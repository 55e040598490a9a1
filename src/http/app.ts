import Router from '@koa/router';
import Koa from 'koa';
import { FailureThrottle } from '../auth/failureThrottle.js';
import { requireApiKey, requireApiKeyOrKiosk } from './auth.js';
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
import { koaPath, type AppState, type RouteSpec } from './route.js';
import { addonRoutes } from './routes/addons.js';
import { collectionRoutes } from './routes/collections.js';
import { GALLERY_IMPORT_PATH, galleryImportRoutes } from './routes/galleryImport.js';
import { faceRoutes } from './routes/faces.js';
import { monitorRoutes } from './routes/monitors.js';
import { monitorSetupRoutes } from './routes/monitorSetup.js';
import { settingsRoutes } from './routes/settings.js';
import { eventRoutes } from './routes/events.js';
import { webhookRoutes } from './routes/webhooks.js';
import { kioskRoutes } from './routes/kiosk.js';
import { systemRoutes } from './routes/system.js';
import { RUN_WEBHOOK_EVENTS, workspaceWebhookRoutes } from './routes/workspaceWebhooks.js';
import type { Runtime } from './runtime.js';
import { webUi } from './webUi.js';
import { mountOperations } from './operations.js';
import { AuthorizedStreams } from './authorizedStreams.js';

/**
 * Every API operation the daemon serves (the auth test enumerates this list). `streams`: the open previews,
 * watched so that revoking the credential that opened one ends it.
 */
export function apiRoutes(rt: Runtime, streams = new AuthorizedStreams()): RouteSpec[] {
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
    ...webhookRoutes(rt),
    ...scraperRoutes(rt),
    ...workspaceWebhookRoutes(rt),
    ...kioskRoutes(rt, streams),
  ];
}

export function createApp(rt: Runtime): { app: Koa<AppState>; routes: RouteSpec[] } {
  const { config } = rt.loaded;
  const app = new Koa<AppState>();
  // Errors are shaped and logged by our middleware; Koa's default handler would print them again.
  app.silent = true;
  const routes = apiRoutes(rt);
  const openapi = buildOpenApi(routes, RUN_WEBHOOK_EVENTS);
  const router = new Router<AppState>();
  // Wrong keys per source address, shared by the admin and the workspace keys.
  const throttle = new FailureThrottle({
    maxFailures: config.auth.max_failures,
    windowMs: config.auth.failure_window_seconds * 1000,
  });
  const auth = requireApiKey(rt.keys, throttle);
  const workspaceAuth = requireWorkspaceKey(rt.workspaces, throttle);
  const kioskAuth = requireApiKeyOrKiosk(rt.keys, rt.kiosk, throttle);
  for (const r of routes) {
    // Workspace routes always need a workspace key: it names the tenant, even when the face API is open.
    const guard =
      r.auth === 'workspace' ? [workspaceAuth] : r.public || !config.auth.enabled ? [] : r.kiosk ? [kioskAuth] : [auth];
    router[r.method](koaPath(r.path), ...guard, async (ctx) => r.handler(ctx as never));
  }
  mountMcp(router, rt);
  mountOperations(router, rt);
  router.get('/openapi.json', (ctx) => {
    ctx.body = openapi;
  });

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
