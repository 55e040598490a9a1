import {
  WebhookCreate,
  WebhookCreatedResponse,
  WebhookDeliveriesResponse,
  WebhookListQuery,
  WebhookPageResponse,
  WebhookPatch,
  WebhookResponse,
  WebhookTestResponse,
  WEBHOOK_TEST_TYPE,
  type WebhookCreateT,
  type WebhookPatchT,
} from '../../contract/webhooks.js';
import { readJson, readQuery } from '../input.js';
import type { RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

const W = '/v1/webhooks/{webhook_id}';
/** The admin key's endpoints. */
const SCOPE = 'admin';

export function webhookRoutes(rt: Runtime): RouteSpec[] {
  const maxBytes = rt.loaded.config.server.max_request_bytes;
  const webhooks = rt.webhooks;
  return [
    {
      method: 'post',
      path: '/v1/webhooks',
      operationId: 'create_webhook_v1_webhooks_post',
      summary: 'Create Webhook',
      tags: ['webhooks'],
      role: 'admin',
      description:
        'A receiver of monitor events, signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature). The secret is returned only here.',
      body: { contentType: 'application/json', schema: WebhookCreate },
      success: { status: 201, schema: WebhookCreatedResponse },
      handler: async (ctx) => {
        const body = (await readJson(ctx, WebhookCreate, maxBytes)) as WebhookCreateT;
        ctx.status = 201;
        ctx.body = { request_id: ctx.state.requestId, ...webhooks.create(SCOPE, body) };
      },
    },
    {
      method: 'get',
      path: '/v1/webhooks',
      operationId: 'list_webhooks_v1_webhooks_get',
      summary: 'List Webhooks',
      tags: ['webhooks'],
      role: 'admin',
      query: WebhookListQuery,
      success: { status: 200, schema: WebhookPageResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, WebhookListQuery);
        const page = webhooks.list(SCOPE, q.cursor, q.limit);
        ctx.body = { request_id: ctx.state.requestId, webhooks: page.items, next_cursor: page.next_cursor };
      },
    },
    {
      method: 'get',
      path: W,
      operationId: 'get_webhook_v1_webhooks__webhook_id__get',
      summary: 'Get Webhook',
      tags: ['webhooks'],
      role: 'admin',
      success: { status: 200, schema: WebhookResponse },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, webhook: webhooks.get(SCOPE, ctx.params.webhook_id!) };
      },
    },
    {
      method: 'patch',
      path: W,
      operationId: 'patch_webhook_v1_webhooks__webhook_id__patch',
      summary: 'Patch Webhook',
      tags: ['webhooks'],
      role: 'admin',
      description:
        'enabled=true on a disabled endpoint clears the reason and the failure streak, and retries its waiting messages at once.',
      body: { contentType: 'application/json', schema: WebhookPatch },
      success: { status: 200, schema: WebhookResponse },
      handler: async (ctx) => {
        const body = (await readJson(ctx, WebhookPatch, maxBytes)) as WebhookPatchT;
        ctx.body = { request_id: ctx.state.requestId, webhook: webhooks.patch(SCOPE, ctx.params.webhook_id!, body) };
      },
    },
    {
      method: 'delete',
      path: W,
      operationId: 'delete_webhook_v1_webhooks__webhook_id__delete',
      summary: 'Delete Webhook',
      tags: ['webhooks'],
      role: 'admin',
      description: 'Deletes the endpoint, its waiting messages and its delivery log.',
      success: { status: 204, schema: null },
      handler: async (ctx) => {
        webhooks.delete(SCOPE, ctx.params.webhook_id!);
        ctx.status = 204;
      },
    },
    {
      method: 'get',
      path: `${W}/deliveries`,
      operationId: 'webhook_deliveries_v1_webhooks__webhook_id__deliveries_get',
      summary: 'Webhook Deliveries',
      tags: ['webhooks'],
      role: 'admin',
      description:
        'The delivery log: every attempt (status, latency, attempt number, error, next retry), newest first.',
      query: WebhookListQuery,
      success: { status: 200, schema: WebhookDeliveriesResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, WebhookListQuery);
        const page = webhooks.deliveries(SCOPE, ctx.params.webhook_id!, q.cursor, q.limit);
        ctx.body = {
          request_id: ctx.state.requestId,
          webhook_id: ctx.params.webhook_id!,
          deliveries: page.items,
          next_cursor: page.next_cursor,
        };
      },
    },
    {
      method: 'post',
      path: `${W}/test`,
      operationId: 'test_webhook_v1_webhooks__webhook_id__test_post',
      summary: 'Send Test Event',
      tags: ['webhooks'],
      role: 'admin',
      description: `Queues a ${WEBHOOK_TEST_TYPE} message for this endpoint (delivered after anything already waiting); its attempts appear in the delivery log.`,
      success: { status: 202, schema: WebhookTestResponse },
      handler: async (ctx) => {
        const r = webhooks.sendTest(SCOPE, ctx.params.webhook_id!);
        ctx.status = 202;
        ctx.body = {
          request_id: ctx.state.requestId,
          webhook_id: ctx.params.webhook_id!,
          message_id: r.message_id,
          type: WEBHOOK_TEST_TYPE,
        };
      },
    },
  ];
}
