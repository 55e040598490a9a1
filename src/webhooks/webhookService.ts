import { randomBytes } from 'node:crypto';
import { Errors } from '../contract/errors.js';
import {
  WEBHOOK_TEST_TYPE,
  type WebhookAttemptT,
  type WebhookCreateT,
  type WebhookPatchT,
  type WebhookT,
} from '../contract/webhooks.js';
import { toPage, type CursorCodec, type Page } from '../store/cursors.js';
import { newWebhookSecret } from './signature.js';
import type { WebhookOutbox } from './webhookOutbox.js';
import type { WebhookEndpoint, WebhookStore } from './webhookStore.js';

/** The monitor filter of the admin API is the `monitor_id` tag of the generic outbox. */
const MONITOR_TAG = 'monitor_id';

/** A create/patch body of any scope: only the admin API has `monitors` (workspace endpoints have no monitors). */
type CreateBody = Omit<WebhookCreateT, 'monitors' | 'event_types'> & { event_types: string[]; monitors?: string[] };
type PatchBody = Omit<WebhookPatchT, 'monitors' | 'event_types'> & { event_types?: string[]; monitors?: string[] };

/**
 * Webhook endpoints of one owner (`scope`: 'admin' for /v1/webhooks, `workspace:<id>` for a workspace's
 * /workspaces/{id}/webhooks; one owner never sees another's endpoints): create (the secret is returned
 * once), list, patch, delete, the delivery log and "send test event". The outbox does the delivering.
 */
export class WebhookService {
  constructor(
    private readonly store: WebhookStore,
    private readonly outbox: WebhookOutbox,
    private readonly cursors: CursorCodec,
    private readonly o: { allowHttp: boolean },
  ) {}

  private endpoint(scope: string, id: string): WebhookEndpoint {
    const e = this.store.getEndpoint(id);
    if (!e || e.scope !== scope) throw Errors.webhookNotFound(id);
    return e;
  }

  private checkUrl(url: string): void {
    if (!this.o.allowHttp && !url.startsWith('https://'))
      throw Errors.invalidRequest('url: only https:// receivers are allowed here ([webhooks] allow_http = false)', {
        field: 'url',
      });
  }

  view(e: WebhookEndpoint): WebhookT {
    return {
      id: e.id,
      url: e.url,
      description: e.description,
      event_types: e.event_types,
      monitors: e.filters[MONITOR_TAG] ?? [],
      enabled: e.enabled,
      disabled_reason: e.disabled_reason,
      disabled_at: e.disabled_at,
      failure_streak: e.failure_streak,
      pending_messages: this.store.pendingCount(e.id),
      last_success_at: e.last_success_at,
      last_failure_at: e.last_failure_at,
      created_at: e.created_at,
      updated_at: e.updated_at,
    };
  }

  /** `maxEndpoints`: how many endpoints the scope may have (a workspace's bound); none = unbounded (admin). */
  create(scope: string, body: CreateBody, maxEndpoints?: number): { webhook: WebhookT; secret: string } {
    this.checkUrl(body.url);
    // Synchronous from the count to the insert: concurrent creates cannot both pass.
    if (maxEndpoints !== undefined && this.store.summary(scope).endpoints >= maxEndpoints)
      throw Errors.webhookLimitReached(maxEndpoints);
    const now = new Date().toISOString();
    const e: WebhookEndpoint = {
      id: `wh_${randomBytes(9).toString('base64url')}`,
      scope,
      url: body.url,
      description: body.description,
      event_types: [...new Set(body.event_types)],
      filters: body.monitors?.length ? { [MONITOR_TAG]: [...new Set(body.monitors)] } : {},
      secret: newWebhookSecret(),
      enabled: body.enabled,
      disabled_reason: null,
      disabled_at: body.enabled ? null : now,
      failure_streak: 0,
      last_success_at: null,
      last_failure_at: null,
      created_at: now,
      updated_at: now,
    };
    this.store.insertEndpoint(e);
    this.outbox.invalidate();
    return { webhook: this.view(e), secret: e.secret };
  }

  get(scope: string, id: string): WebhookT {
    return this.view(this.endpoint(scope, id));
  }

  list(scope: string, cursor: string | null | undefined, limit: number): Page<WebhookT> {
    const key = `webhooks:${scope}`;
    const after = cursor ? this.cursors.decode(cursor, key) : null;
    const page = toPage(this.store.listEndpoints(scope, after, limit + 1), limit, (e) => e.id, this.cursors, key);
    return { items: page.items.map((e) => this.view(e)), next_cursor: page.next_cursor };
  }

  /** Enabling again clears the disabled reason and the failure streak, and retries the backlog at once. */
  patch(scope: string, id: string, body: PatchBody): WebhookT {
    if (body.url !== undefined) this.checkUrl(body.url);
    const updated = this.store.transaction(() => {
      const e = this.endpoint(scope, id);
      const now = new Date().toISOString();
      const next: WebhookEndpoint = {
        ...e,
        updated_at: now,
        ...(body.url !== undefined && { url: body.url }),
        ...(body.description !== undefined && { description: body.description }),
        ...(body.event_types !== undefined && { event_types: [...new Set(body.event_types)] }),
        ...(body.monitors !== undefined && {
          filters: body.monitors.length
            ? { ...e.filters, [MONITOR_TAG]: [...new Set(body.monitors)] }
            : Object.fromEntries(Object.entries(e.filters).filter(([k]) => k !== MONITOR_TAG)),
        }),
      };
      if (body.enabled === true && !e.enabled) {
        Object.assign(next, { enabled: true, disabled_reason: null, disabled_at: null, failure_streak: 0 });
        this.store.retryNow(id, Date.now());
      } else if (body.enabled === false && e.enabled)
        Object.assign(next, { enabled: false, disabled_reason: null, disabled_at: now });
      this.store.updateEndpoint(next);
      return next;
    });
    this.outbox.invalidate();
    return this.view(updated);
  }

  /** Deletes the endpoint with its queued messages and delivery log. */
  delete(scope: string, id: string): void {
    this.endpoint(scope, id);
    this.store.deleteEndpoint(id);
    this.outbox.invalidate();
  }

  /** Every scope's endpoints (the first `limit` by id) with their backlog and failure streak, and the totals. */
  health(limit: number) {
    return this.store.health(limit);
  }

  /** Queues a `webhook.test` message for this endpoint only (behind anything already waiting, like any message). */
  sendTest(scope: string, id: string): { message_id: string } {
    const e = this.endpoint(scope, id);
    const messageId = `msg_test_${randomBytes(9).toString('base64url')}`;
    const n = this.outbox.enqueue(
      {
        scope,
        type: WEBHOOK_TEST_TYPE,
        tags: {},
        messageId,
        data: { webhook_id: id, message: 'This is a test event from Vigil.' },
      },
      e,
    );
    if (n === 0) throw Errors.webhookNotFound(id);
    return { message_id: messageId };
  }

  deliveries(scope: string, id: string, cursor: string | null | undefined, limit: number): Page<WebhookAttemptT> {
    this.endpoint(scope, id);
    const key = `webhook-deliveries:${id}`;
    const before = cursor ? Number(this.cursors.decode(cursor, key)) : null;
    if (before !== null && !Number.isInteger(before)) throw Errors.invalidCursor('malformed');
    const rows = this.store.attempts(id, before, limit + 1);
    const page = toPage(rows, limit, (r) => String(r.seq), this.cursors, key);
    return {
      items: page.items.map((r) => ({
        message_id: r.message_id,
        type: r.type,
        attempt: r.attempt,
        at: r.at,
        outcome: r.outcome,
        status_code: r.status_code,
        latency_ms: r.latency_ms,
        error: r.error,
        next_attempt_at: r.next_attempt_at,
      })),
      next_cursor: page.next_cursor,
    };
  }
}
