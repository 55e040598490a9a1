import {
  RUN_WEBHOOK_TYPES,
  ScrapeRunWebhookPayload,
  WebhookDeliveriesResponse,
  WebhookListQuery,
  WebhookTestResponse,
  WEBHOOK_TEST_TYPE,
  workspaceWebhookScope,
  WorkspaceWebhookCreate,
  WorkspaceWebhookCreatedResponse,
  WorkspaceWebhookPageResponse,
  WorkspaceWebhookPatch,
  WorkspaceWebhookResponse,
  type WebhookT,
  type WorkspaceWebhookCreateT,
  type WorkspaceWebhookPatchT,
} from '../../contract/webhooks.js';
import { readJson, readQuery } from '../input.js';
import type { AppContext, RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

const W = '/workspaces/{workspace_id}/webhooks';
const ONE = `${W}/{webhook_id}`;

/** Workspace endpoints have no monitor filter. */
const shape = ({ monitors: _monitors, ...rest }: WebhookT) => rest;

/** The events a workspace's endpoints receive, for the OpenAPI `webhooks` section. */
export const RUN_WEBHOOK_EVENTS = RUN_WEBHOOK_TYPES.map((type) => ({
  name: type,
  schema: ScrapeRunWebhookPayload,
  summary: `A scrape run of the workspace finished with status ${type.slice('scrape.run.'.length)}`,
}));

/**
 * A workspace's own webhook endpoints (its key, like the other /workspaces routes): scrape run outcomes
 * of that workspace only, signed and retried by the same outbox as /v1/webhooks.
 */
export function workspaceWebhookRoutes(rt: Runtime): RouteSpec[] {
  const maxBytes = rt.loaded.config.server.max_request_bytes;
  const webhooks = rt.webhooks;
  const scope = (ctx: AppContext) => workspaceWebhookScope(ctx.state.workspaceId!);
  const common = { tags: ['webhooks'], auth: 'workspace' as const };
  return [
    {
      ...common,
      method: 'post',
      path: W,
      operationId: 'create_workspace_webhook',
      summary: 'Create a run webhook',
      description: `A receiver of this workspace's scrape run outcomes (${RUN_WEBHOOK_TYPES.join(', ')}; see the webhooks section), signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) and retried with backoff. The secret is returned only here. At most [webhooks] max_endpoints_per_workspace endpoints (409 webhook_limit_reached).`,
      body: { contentType: 'application/json', schema: WorkspaceWebhookCreate },
      success: { status: 201, schema: WorkspaceWebhookCreatedResponse },
      handler: async (ctx) => {
        const body = (await readJson(ctx, WorkspaceWebhookCreate, maxBytes)) as WorkspaceWebhookCreateT;
        const r = webhooks.create(scope(ctx), body, rt.loaded.config.webhooks.max_endpoints_per_workspace);
        ctx.status = 201;
        ctx.body = { request_id: ctx.state.requestId, webhook: shape(r.webhook), secret: r.secret };
      },
    },
    {
      ...common,
      method: 'get',
      path: W,
      operationId: 'list_workspace_webhooks',
      summary: 'List run webhooks',
      query: WebhookListQuery,
      success: { status: 200, schema: WorkspaceWebhookPageResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, WebhookListQuery);
        const page = webhooks.list(scope(ctx), q.cursor, q.limit);
        ctx.body = { request_id: ctx.state.requestId, webhooks: page.items.map(shape), next_cursor: page.next_cursor };
      },
    },
    {
      ...common,
      method: 'get',
      path: ONE,
      operationId: 'get_workspace_webhook',
      summary: 'Get a run webhook',
      success: { status: 200, schema: WorkspaceWebhookResponse },
      handler: async (ctx) => {
        ctx.body = {
          request_id: ctx.state.requestId,
          webhook: shape(webhooks.get(scope(ctx), ctx.params.webhook_id!)),
        };
      },
    },
    {
      ...common,
      method: 'patch',
      path: ONE,
      operationId: 'patch_workspace_webhook',
      summary: 'Patch a run webhook',
      description:
        'enabled=true on a disabled endpoint clears the reason and the failure streak, and retries its waiting messages at once.',
      body: { contentType: 'application/json', schema: WorkspaceWebhookPatch },
      success: { status: 200, schema: WorkspaceWebhookResponse },
      handler: async (ctx) => {
        const body = (await readJson(ctx, WorkspaceWebhookPatch, maxBytes)) as WorkspaceWebhookPatchT;
        ctx.body = {
          request_id: ctx.state.requestId,
          webhook: shape(webhooks.patch(scope(ctx), ctx.params.webhook_id!, body)),
        };
      },
    },
    {
      ...common,
      method: 'delete',
      path: ONE,
      operationId: 'delete_workspace_webhook',
      summary: 'Delete a run webhook',
      description: 'Deletes the endpoint, its waiting messages and its delivery log.',
      success: { status: 204, schema: null },
      handler: async (ctx) => {
        webhooks.delete(scope(ctx), ctx.params.webhook_id!);
        ctx.status = 204;
      },
    },
    {
      ...common,
      method: 'get',
      path: `${ONE}/deliveries`,
      operationId: 'workspace_webhook_deliveries',
      summary: 'Run webhook deliveries',
      description:
        'The delivery log: every attempt (status, latency, attempt number, error, next retry), newest first.',
      query: WebhookListQuery,
      success: { status: 200, schema: WebhookDeliveriesResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, WebhookListQuery);
        const page = webhooks.deliveries(scope(ctx), ctx.params.webhook_id!, q.cursor, q.limit);
        ctx.body = {
          request_id: ctx.state.requestId,
          webhook_id: ctx.params.webhook_id!,
          deliveries: page.items,
          next_cursor: page.next_cursor,
        };
      },
    },
    {
      ...common,
      method: 'post',
      path: `${ONE}/test`,
      operationId: 'test_workspace_webhook',
      summary: 'Send a test event to a run webhook',
      description: `Queues a ${WEBHOOK_TEST_TYPE} message for this endpoint (delivered after anything already waiting); its attempts appear in the delivery log.`,
      success: { status: 202, schema: WebhookTestResponse },
      handler: async (ctx) => {
        const r = webhooks.sendTest(scope(ctx), ctx.params.webhook_id!);
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
