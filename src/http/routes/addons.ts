import { Errors } from '../../contract/errors.js';
import { readBodyText } from '../input.js';
import { assertOriginAllowed } from '../browserSession.js';
import type { RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';
import { EmptyBody, ErrorEnvelope } from '../../contract/common.js';
import { LivenessManagementResponse } from '../../contract/system.js';

export function addonRoutes(rt: Runtime): RouteSpec[] {
  const { config } = rt.loaded;
  return [
    {
      method: 'get',
      path: '/v1/addons/liveness',
      operationId: 'liveness_status_v1_addons_liveness_get',
      summary: 'Liveness Status',
      tags: ['system'],
      role: 'operator',
      description: 'Liveness addon state. Never downloads anything.',
      success: { status: 200, schema: LivenessManagementResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, ...(await rt.liveness.status()) };
      },
    },
    {
      method: 'post',
      path: '/v1/addons/liveness/enable',
      operationId: 'enable_liveness_v1_addons_liveness_enable_post',
      summary: 'Enable Liveness',
      tags: ['system'],
      role: 'admin',
      description:
        'Starts (or joins) the background job that downloads and verifies the liveness models, then enables liveness in server.toml ' +
        'for the next start, keeping comments and other values. The running service is unchanged until it restarts.',
      body: { contentType: 'application/json', schema: EmptyBody },
      success: { status: 202, schema: LivenessManagementResponse },
      extraResponses: {
        403: { schema: ErrorEnvelope, description: 'origin_not_allowed: a browser page of another origin sent it.' },
        415: { schema: ErrorEnvelope, description: 'json_required: the body is not sent as application/json.' },
      },
      handler: async (ctx) => {
        if (!ctx.is('application/json')) throw Errors.jsonRequired();
        const text = await readBodyText(ctx, 1024);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        if (!EmptyBody.safeParse(body).success || Array.isArray(body)) throw Errors.invalidAddonRequest();
        assertOriginAllowed(ctx, config.server.cors_origins);
        const status = await rt.liveness.enable();
        ctx.status = 202;
        ctx.body = { request_id: ctx.state.requestId, ...status };
      },
    },
  ];
}
