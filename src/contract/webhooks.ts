import { z } from 'zod';
import { formInt, requestId, schemaId as id } from './common.js';
import { ID_PATTERN } from './collections.js';

/**
 * Webhook endpoints (/v1/webhooks): signed Standard Webhooks deliveries from the durable outbox. Event
 * types are hierarchical; the admin endpoints receive monitor events and the test event.
 */
export const MONITOR_WEBHOOK_TYPES = ['monitor.person_enter', 'monitor.person_exit', 'monitor.unknown_enter', 'monitor.unknown_exit', 'monitor.error', 'monitor.recovered'] as const;
export const WEBHOOK_TEST_TYPE = 'webhook.test';
export const ADMIN_WEBHOOK_TYPES = [...MONITOR_WEBHOOK_TYPES, WEBHOOK_TEST_TYPE] as const;

const url = z.url({ protocol: /^https?$/, hostname: z.regexes.hostname }).max(2048).describe('http(s) URL of the receiver; redirects to another host are never followed.');
const description = z.string().max(500);
const eventTypes = z.array(z.enum(ADMIN_WEBHOOK_TYPES)).max(ADMIN_WEBHOOK_TYPES.length).describe('Types to deliver; empty = all. webhook.test is always delivered to the endpoint it is sent to.');
const monitors = z.array(z.string().regex(ID_PATTERN)).max(100).describe('Monitor ids whose events are delivered; empty = every monitor.');

export const WebhookCreate = z
  .strictObject({ url, description: description.default(''), event_types: eventTypes.default([]), monitors: monitors.default([]), enabled: z.boolean().default(true) })
  .meta(id('WebhookCreate'));
export const WebhookPatch = z
  .strictObject({ url: url.optional(), description: description.optional(), event_types: eventTypes.optional(), monitors: monitors.optional(), enabled: z.boolean().optional() })
  .refine((v) => Object.values(v).some((x) => x !== undefined), 'at least one field is required')
  .meta(id('WebhookPatch'));

export const Webhook = z
  .looseObject({
    id: z.string(), url: z.string(), description: z.string(), event_types: z.array(z.string()), monitors: z.array(z.string()), enabled: z.boolean(),
    disabled_reason: z.string().nullable().describe('Why the service disabled it (failure_streak, gone, backlog_full); null when enabled or disabled by a client.'),
    disabled_at: z.string().nullable(), failure_streak: z.int().describe('Consecutive failed attempts.'), pending_messages: z.int().describe('Messages waiting in the outbox.'),
    last_success_at: z.string().nullable(), last_failure_at: z.string().nullable(), created_at: z.string(), updated_at: z.string(),
  })
  .meta(id('Webhook'));
export const WebhookAttempt = z
  .looseObject({
    message_id: z.string().describe('The webhook-id header: the same for every attempt of a message.'), type: z.string(), attempt: z.int(), at: z.string(),
    outcome: z.enum(['delivered', 'failed']), status_code: z.int().nullable(), latency_ms: z.number(), error: z.string().nullable(), next_attempt_at: z.string().nullable(),
  })
  .meta(id('WebhookAttempt'));

export const WebhookResponse = z.looseObject({ request_id: requestId, webhook: Webhook }).meta(id('WebhookResponse'));
export const WebhookCreatedResponse = z
  .looseObject({ request_id: requestId, webhook: Webhook, secret: z.string().describe('whsec_…: shown only here. Verify webhook-signature with it (Standard Webhooks).') })
  .meta(id('WebhookCreatedResponse'));
export const WebhookPageResponse = z.looseObject({ request_id: requestId, webhooks: z.array(Webhook), next_cursor: z.string().nullable() }).meta(id('WebhookPageResponse'));
export const WebhookDeliveriesResponse = z
  .looseObject({ request_id: requestId, webhook_id: z.string(), deliveries: z.array(WebhookAttempt).describe('Newest first.'), next_cursor: z.string().nullable() })
  .meta(id('WebhookDeliveriesResponse'));
export const WebhookTestResponse = z
  .looseObject({ request_id: requestId, webhook_id: z.string(), message_id: z.string(), type: z.literal(WEBHOOK_TEST_TYPE) })
  .meta(id('WebhookTestResponse'));

export const WebhookListQuery = z.object({ limit: formInt(1, 100, 50), cursor: z.string().nullish() });

export type WebhookCreateT = z.infer<typeof WebhookCreate>;
export type WebhookPatchT = z.infer<typeof WebhookPatch>;
export type WebhookT = z.infer<typeof Webhook>;
export type WebhookAttemptT = z.infer<typeof WebhookAttempt>;
