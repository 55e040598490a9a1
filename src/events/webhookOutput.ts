import { webhookTypeOf } from '../contract/events.js';
import type { WebhookOutbox } from '../webhooks/webhookOutbox.js';
import type { HistoryOutput } from './eventHistory.js';
import { eventView } from './eventView.js';
import type { StoredEvent } from './historyStore.js';

/** The admin endpoints (/v1/webhooks) receive monitor events. */
export const ADMIN_SCOPE = 'admin';

/**
 * Monitor events into the webhook outbox, inside the history's transaction: `webhook-id` is
 * `msg_<event id>` (the same for every endpoint and retry, so receivers can de-duplicate), the payload's
 * `data` is the event as GET /v1/events/{id} shows it.
 */
export class WebhookEventOutput implements HistoryOutput {
  constructor(private readonly outbox: WebhookOutbox) {}

  recorded(e: StoredEvent): void {
    this.outbox.enqueue({
      scope: ADMIN_SCOPE,
      type: webhookTypeOf(e.type),
      tags: { monitor_id: e.monitor_id },
      data: eventView(e),
      messageId: `msg_${e.id}`,
      occurredAt: e.occurred_at,
    });
  }
}
