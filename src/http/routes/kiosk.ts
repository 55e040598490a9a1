import {
  KioskTokenCreate,
  KioskTokenCreatedResponse,
  KioskTokenListResponse,
  KioskTokenResponse,
  type KioskTokenCreateT,
} from '../../contract/kiosk.js';
import type { AuthorizedStreams } from '../authorizedStreams.js';
import { readJson } from '../input.js';
import type { RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

/** The kiosk page of a monitor with a token in the fragment (the browser never sends a fragment). */
export const kioskPath = (monitorId: string, token: string) => `/kiosk/${encodeURIComponent(monitorId)}#token=${token}`;

/** Admin management of preview-only kiosk tokens; a revoke ends the previews the token has open (`streams`). */
export function kioskRoutes(rt: Runtime, streams: AuthorizedStreams): RouteSpec[] {
  const maxBytes = rt.loaded.config.server.max_request_bytes;
  return [
    {
      method: 'post',
      path: '/v1/kiosk-tokens',
      operationId: 'create_kiosk_token_v1_kiosk_tokens_post',
      summary: 'Create Kiosk Token',
      tags: ['kiosk'],
      role: 'admin',
      description:
        'A token that opens GET /v1/monitors/{id}/state and /v1/monitors/{id}/preview.mjpeg of the listed monitors and nothing else. Stored hashed; survives restarts until revoked.',
      body: { contentType: 'application/json', schema: KioskTokenCreate },
      success: { status: 201, schema: KioskTokenCreatedResponse },
      handler: async (ctx) => {
        const body = (await readJson(ctx, KioskTokenCreate, maxBytes)) as KioskTokenCreateT;
        const { token, kiosk } = rt.kiosk.create(body.monitor_ids, body.label);
        ctx.status = 201;
        ctx.body = {
          request_id: ctx.state.requestId,
          kiosk_token: kiosk,
          token,
          kiosk_paths: Object.fromEntries(kiosk.monitor_ids.map((m) => [m, kioskPath(m, token)])),
        };
      },
    },
    {
      method: 'get',
      path: '/v1/kiosk-tokens',
      operationId: 'list_kiosk_tokens_v1_kiosk_tokens_get',
      summary: 'List Kiosk Tokens',
      tags: ['kiosk'],
      role: 'admin',
      success: { status: 200, schema: KioskTokenListResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, kiosk_tokens: rt.kiosk.list() };
      },
    },
    {
      method: 'delete',
      path: '/v1/kiosk-tokens/{token_id}',
      operationId: 'revoke_kiosk_token_v1_kiosk_tokens__token_id__delete',
      summary: 'Revoke Kiosk Token',
      tags: ['kiosk'],
      role: 'admin',
      description:
        'Revokes the token at once: its next request is 401 and the previews it has open end now; the record stays in the list with revoked_at.',
      success: { status: 200, schema: KioskTokenResponse },
      handler: async (ctx) => {
        const kiosk = rt.kiosk.revoke(ctx.params.token_id!);
        streams.recheck();
        ctx.body = { request_id: ctx.state.requestId, kiosk_token: kiosk };
      },
    },
  ];
}
