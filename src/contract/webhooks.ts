import { z } from 'zod';
import { formInt, requestId, schemaId as id } from './common.js';
import { ID_PATTERN } from './collections.js';

/**
 * Webhook endpoints (/v1/webhooks): signed Standard Webhooks deliveries from the durable outbox. Event
 * types are hierarchical; the admin endpoints receive monitor events and the test event.
 */
export const MONITOR_WEBHOOK_TYPES = [
  'monitor.person_enter',
  'monitor.person_exit',
  'monitor.unknown_enter',
  'monitor.unknown_exit',
  'monitor.error',
  'monitor.recovered',
  'monitor.zone_enter',
  'monitor.zone_exit',
] as const;
export const WEBHOOK_TEST_TYPE = 'webhook.test';
export const ADMIN_WEBHOOK_TYPES = [...MONITOR_WEBHOOK_TYPES, WEBHOOK_TEST_TYPE] as const;

const url = z
  .url({ protocol: /^https?$/, hostname: z.regexes.hostname })
  .max(2048)
  .describe('http(s) URL of the receiver; redirects to another host are never followed.');
const description = z.string().max(500);
const eventTypes = z
  .array(z.enum(ADMIN_WEBHOOK_TYPES))
  .max(ADMIN_WEBHOOK_TYPES.length)
  .describe('Types to deliver; empty = all. webhook.test is always delivered to the endpoint it is sent to.');
const monitors = z
  .array(z.string().regex(ID_PATTERN))
  .max(100)
  .describe('Monitor ids whose events are delivered; empty = every monitor.');

export const WebhookCreate = z
  .strictObject({
    url,
    description: description.default(''),
    event_types: eventTypes.default([]),
    monitors: monitors.default([]),
    enabled: z.boolean().default(true),
  })
  .meta(id('WebhookCreate'));
export const WebhookPatch = z
  .strictObject({
    url: url.optional(),
    description: description.optional(),
    event_types: eventTypes.optional(),
    monitors: monitors.optional(),
    enabled: z.boolean().optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), 'at least one field is required')
  .meta(id('WebhookPatch'));

export const Webhook = z
  .looseObject({
    id: z.string(),
    url: z.string(),
    description: z.string(),
    event_types: z.array(z.string()),
    monitors: z.array(z.string()),
    enabled: z.boolean(),
    disabled_reason: z
      .string()
      .nullable()
      .describe(
        'Why the service disabled it (failure_streak, gone, backlog_full); null when enabled or disabled by a client.',
      ),
    disabled_at: z.string().nullable(),
    failure_streak: z.int().describe('Consecutive failed attempts.'),
    pending_messages: z.int().describe('Messages waiting in the outbox.'),
    last_success_at: z.string().nullable(),
    last_failure_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta(id('Webhook'));
export const WebhookAttempt = z
  .looseObject({
    message_id: z.string().describe('The webhook-id header: the same for every attempt of a message.'),
    type: z.string(),
    attempt: z.int(),
    at: z.string(),
    outcome: z.enum(['delivered', 'failed']),
    status_code: z.int().nullable(),
    latency_ms: z.number(),
    error: z.string().nullable(),
    next_attempt_at: z.string().nullable(),
  })
  .meta(id('WebhookAttempt'));

export const WebhookResponse = z.looseObject({ request_id: requestId, webhook: Webhook }).meta(id('WebhookResponse'));
export const WebhookCreatedResponse = z
  .looseObject({
    request_id: requestId,
    webhook: Webhook,
    secret: z.string().describe('whsec_…: shown only here. Verify webhook-signature with it (Standard Webhooks).'),
  })
  .meta(id('WebhookCreatedResponse'));
export const WebhookPageResponse = z
  .looseObject({ request_id: requestId, webhooks: z.array(Webhook), next_cursor: z.string().nullable() })
  .meta(id('WebhookPageResponse'));
export const WebhookDeliveriesResponse = z
  .looseObject({
    request_id: requestId,
    webhook_id: z.string(),
    deliveries: z.array(WebhookAttempt).describe('Newest first.'),
    next_cursor: z.string().nullable(),
  })
  .meta(id('WebhookDeliveriesResponse'));
export const WebhookTestResponse = z
  .looseObject({
    request_id: requestId,
    webhook_id: z.string(),
    message_id: z.string(),
    type: z.literal(WEBHOOK_TEST_TYPE),
  })
  .meta(id('WebhookTestResponse'));

export const WebhookListQuery = z.object({ limit: formInt(1, 100, 50), cursor: z.string().nullish() });

export type WebhookCreateT = z.infer<typeof WebhookCreate>;
export type WebhookPatchT = z.infer<typeof WebhookPatch>;
export type WebhookT = z.infer<typeof Webhook>;
export type WebhookAttemptT = z.infer<typeof WebhookAttempt>;

// ---- workspace webhooks (/workspaces/{workspace_id}/webhooks): scrape run outcomes of that workspace only ----

/** One type per final run status. */
export const RUN_WEBHOOK_TYPES = [
  'scrape.run.succeeded',
  'scrape.run.partial',
  'scrape.run.failed',
  'scrape.run.cancelled',
] as const;
export const WORKSPACE_WEBHOOK_TYPES = [...RUN_WEBHOOK_TYPES, WEBHOOK_TEST_TYPE] as const;
/** The outbox scope of a workspace's endpoints (the admin endpoints use 'admin'). */
export const workspaceWebhookScope = (workspaceId: string): string => `workspace:${workspaceId}`;

const runEventTypes = z
  .array(z.enum(WORKSPACE_WEBHOOK_TYPES))
  .max(WORKSPACE_WEBHOOK_TYPES.length)
  .describe('Types to deliver; empty = all. webhook.test is always delivered to the endpoint it is sent to.');

export const WorkspaceWebhookCreate = z
  .strictObject({
    url,
    description: description.default(''),
    event_types: runEventTypes.default([]),
    enabled: z.boolean().default(true),
  })
  .meta(id('WorkspaceWebhookCreate'));
export const WorkspaceWebhookPatch = z
  .strictObject({
    url: url.optional(),
    description: description.optional(),
    event_types: runEventTypes.optional(),
    enabled: z.boolean().optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), 'at least one field is required')
  .meta(id('WorkspaceWebhookPatch'));
export const WorkspaceWebhook = Webhook.omit({ monitors: true }).meta(id('WorkspaceWebhook'));
export const WorkspaceWebhookResponse = z
  .looseObject({ request_id: requestId, webhook: WorkspaceWebhook })
  .meta(id('WorkspaceWebhookResponse'));
export const WorkspaceWebhookCreatedResponse = z
  .looseObject({
    request_id: requestId,
    webhook: WorkspaceWebhook,
    secret: z.string().describe('whsec_…: shown only here. Verify webhook-signature with it (Standard Webhooks).'),
  })
  .meta(id('WorkspaceWebhookCreatedResponse'));
export const WorkspaceWebhookPageResponse = z
  .looseObject({ request_id: requestId, webhooks: z.array(WorkspaceWebhook), next_cursor: z.string().nullable() })
  .meta(id('WorkspaceWebhookPageResponse'));

/** The `data` of a scrape.run.* message: the run's outcome and counts (read the items with GET …/runs/{run_id}/items). */
export const ScrapeRunWebhookData = z
  .looseObject({
    run_id: z.string(),
    workspace_id: z.string(),
    kind: z.string().describe('Scraper kind (forum, places).'),
    status: z.enum(['succeeded', 'partial', 'failed', 'cancelled']),
    counts: z.looseObject({
      items: z.int().describe("Items delivered (stored in the run's dataset)."),
      billed_units: z.int().describe('Items billed (= items; a failed run bills nothing).'),
      billed_reviews: z.int().describe('Review units billed (places).'),
      problems: z
        .int()
        .describe(
          'Typed problems: failed sources plus problems attached to sources that went on (comments_unavailable, …).',
        ),
      sources: z.int(),
      failed_sources: z.int(),
    }),
    created_at: z.string(),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable(),
    error: z
      .looseObject({ code: z.string(), message: z.string(), details: z.unknown() })
      .nullable()
      .describe('Why a failed run failed; null otherwise.'),
    links: z
      .looseObject({ run: z.string(), items: z.string(), export: z.string() })
      .describe('API paths of the run, its items and its export.'),
  })
  .meta(id('ScrapeRunWebhookData'));
export const ScrapeRunWebhookPayload = z
  .looseObject({
    type: z.enum(RUN_WEBHOOK_TYPES),
    timestamp: z.string().describe('When the run finished.'),
    data: ScrapeRunWebhookData,
  })
  .meta(id('ScrapeRunWebhookPayload'));

export type WorkspaceWebhookCreateT = z.infer<typeof WorkspaceWebhookCreate>;
export type WorkspaceWebhookPatchT = z.infer<typeof WorkspaceWebhookPatch>;
export type ScrapeRunWebhookDataT = z.infer<typeof ScrapeRunWebhookData>;
