import type Router from '@koa/router';
import { mountApiDocs } from './apiDocs.js';
import { metricsGuard } from './metrics.js';
import type { AppState } from './route.js';
import type { Runtime } from './runtime.js';

/**
 * Operator endpoints outside the /v1 contract: GET /metrics (Prometheus) and the API docs page (/docs).
 * Mounted by createApp with their own guards, so they are not in /openapi.json.
 */
export function mountOperations(router: Router<AppState>, rt: Runtime): void {
  mountApiDocs(router);
  const { config } = rt.loaded;
  const metrics = rt.metrics;
  if (metrics && config.metrics.enabled) {
    const guard = metricsGuard(config.metrics.auth, {
      keys: rt.keys,
      token: config.metrics.token,
      authEnabled: config.auth.enabled,
    });
    router.get('/metrics', guard, async (ctx) => {
      ctx.set('Content-Type', metrics.registry.contentType);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = await metrics.registry.metrics();
    });
  }
}
