import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { retryDelayMs, type RetryPolicy } from './retrySchedule.js';
import { webhookHeaders } from './signature.js';
import { postWebhook, type AttemptResult } from './webhookDelivery.js';
import type { OutboxRow, WebhookEndpoint, WebhookStore } from './webhookStore.js';

export interface OutboxOptions {
  timeoutMs: number;
  retry: RetryPolicy;
  /** Consecutive failed attempts that disable an endpoint; 0 = never. */
  disableAfterFailures: number;
  maxPendingPerEndpoint: number;
  logSize: number;
  maxRedirects: number;
}

/** A message for every endpoint of `scope` whose event types and filters match it. */
export interface OutboxMessage {
  scope: string;
  /** Hierarchical type, e.g. monitor.person_enter. */
  type: string;
  /** Values endpoint filters match on, e.g. { monitor_id: 'door' }. */
  tags: Record<string, string>;
  /** The payload's `data`. */
  data: unknown;
  /** The Standard Webhooks `webhook-id` (stable across retries and endpoints); a new one when absent. */
  messageId?: string;
  /** The payload's `timestamp` (when it happened); now when absent. */
  occurredAt?: string;
}

/** Whether an endpoint wants a message (its scope, types and filters). */
export function endpointMatches(
  e: Pick<WebhookEndpoint, 'scope' | 'event_types' | 'filters'>,
  m: Pick<OutboxMessage, 'scope' | 'type' | 'tags'>,
): boolean {
  if (e.scope !== m.scope) return false;
  if (e.event_types.length > 0 && !e.event_types.includes(m.type)) return false;
  for (const [key, values] of Object.entries(e.filters)) {
    if (values.length === 0) continue;
    const v = m.tags[key];
    if (v === undefined || !values.includes(v)) return false;
  }
  return true;
}

/** The body every endpoint receives: Standard Webhooks' {type, timestamp, data}. */
export const webhookBody = (type: string, timestamp: string, data: unknown): string =>
  JSON.stringify({ type, timestamp, data });

/**
 * The durable webhook outbox: `enqueue` writes one row per matching endpoint (synchronously, so a
 * publisher calls it inside the transaction that records what happened: nothing acknowledged is lost),
 * and the worker delivers each endpoint's rows in order, one at a time (at least once: a crash after the
 * POST and before the delete sends that message again, with the same webhook-id). A failed attempt is
 * retried after `retryDelayMs` and holds back the endpoint's later messages; `disable_after_failures`
 * consecutive failures (or a 410 Gone, or a full backlog) disable the endpoint with the reason.
 */
export class WebhookOutbox {
  private endpoints: WebhookEndpoint[] | null = null;
  /** Queued messages per endpoint (read from SQLite once, then kept), for the backlog bound. */
  private readonly pendingCounts = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Infinity;
  private pokeQueued = false;
  private closed = false;
  private started = false;
  /** Attempts made by this process (for the bench and the status). */
  readonly counters = { delivered: 0, failed: 0 };
  /** Observers of finished attempts (the bench measures latency with it). */
  onAttempt: ((row: OutboxRow, result: AttemptResult) => void) | null = null;

  constructor(
    private readonly store: WebhookStore,
    private readonly o: OutboxOptions,
    private readonly log: Logger,
    private readonly random: () => number = Math.random,
  ) {}

  /** Endpoints changed (created, patched, deleted): match against the new list. */
  invalidate(): void {
    this.endpoints = null;
    this.pendingCounts.clear();
    this.poke();
  }

  private active(): WebhookEndpoint[] {
    this.endpoints ??= this.store.enabledEndpoints();
    return this.endpoints;
  }

  /** Queues the message for every matching enabled endpoint (or only `onlyEndpoint`); returns how many. Synchronous. */
  enqueue(m: OutboxMessage, onlyEndpoint?: WebhookEndpoint): number {
    const targets = onlyEndpoint ? [onlyEndpoint] : this.active().filter((e) => endpointMatches(e, m));
    if (targets.length === 0) return 0;
    const now = Date.now();
    const messageId = m.messageId ?? `msg_${randomUUID()}`;
    const body = webhookBody(m.type, m.occurredAt ?? new Date(now).toISOString(), m.data);
    let queued = 0;
    for (const e of targets) {
      const pending = this.pendingCounts.get(e.id) ?? this.store.pendingCount(e.id);
      if (pending >= this.o.maxPendingPerEndpoint) {
        this.disable(
          e.id,
          `backlog_full: ${this.o.maxPendingPerEndpoint} messages were waiting (raise [webhooks] max_pending_per_endpoint or fix the receiver, then enable it again)`,
        );
        continue;
      }
      this.store.enqueue(e.id, messageId, m.type, body, now);
      this.pendingCounts.set(e.id, pending + 1);
      queued++;
    }
    if (queued) this.poke();
    return queued;
  }

  /** Starts delivering (call once the daemon is up). */
  start(): void {
    this.started = true;
    this.poke();
  }

  /** Wakes the worker after the current synchronous work (e.g. the enqueuing transaction) is done. */
  poke(): void {
    if (!this.started || this.closed || this.pokeQueued) return;
    this.pokeQueued = true;
    setImmediate(() => {
      this.pokeQueued = false;
      this.schedule();
    });
  }

  /** Starts every endpoint whose head message is due; sleeps until the next one is. */
  private schedule(): void {
    if (this.closed) return;
    const now = Date.now();
    let next = Infinity;
    for (const head of this.store.heads()) {
      if (this.inFlight.has(head.endpoint_id)) continue;
      if (head.next_attempt_ms <= now) this.startAttempt(head);
      else next = Math.min(next, head.next_attempt_ms);
    }
    if (next === Infinity || next >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.timerAt = Infinity;
        this.schedule();
      },
      Math.max(0, next - Date.now()),
    );
  }

  private startAttempt(row: OutboxRow): void {
    const p = this.attempt(row)
      .catch((e: unknown) => {
        this.log.error({ err: e, endpoint_id: row.endpoint_id }, 'webhook attempt failed unexpectedly');
      })
      .finally(() => {
        this.inFlight.delete(row.endpoint_id);
        this.poke();
      });
    this.inFlight.set(row.endpoint_id, p);
  }

  private async attempt(row: OutboxRow): Promise<void> {
    const endpoint = this.store.getEndpoint(row.endpoint_id);
    if (!endpoint || !endpoint.enabled) return;
    const ts = Math.floor(Date.now() / 1000);
    const result = await postWebhook(
      endpoint.url,
      webhookHeaders(endpoint.secret, row.message_id, ts, row.body),
      row.body,
      { timeoutMs: this.o.timeoutMs, maxRedirects: this.o.maxRedirects },
    );
    if (this.closed && !this.store.db.open) return;
    const at = new Date().toISOString();
    const attempt = row.attempts + 1;
    const base = {
      endpoint_id: row.endpoint_id,
      message_id: row.message_id,
      type: row.type,
      attempt,
      at,
      status_code: result.status,
      latency_ms: result.latencyMs,
    };
    if (result.ok) {
      this.counters.delivered++;
      const n = this.pendingCounts.get(row.endpoint_id);
      if (n !== undefined) this.pendingCounts.set(row.endpoint_id, n - 1);
      this.store.transaction(() => {
        this.store.removeMessage(row.seq);
        this.store.recordSuccess(row.endpoint_id, at);
        this.store.logAttempt({ ...base, outcome: 'delivered', error: null, next_attempt_at: null }, this.o.logSize);
      });
    } else {
      this.counters.failed++;
      const nextMs = Date.now() + retryDelayMs(attempt, this.o.retry, this.random);
      this.store.transaction(() => {
        this.store.rescheduleMessage(row.seq, attempt, nextMs);
        const streak = this.store.recordFailure(row.endpoint_id, at);
        this.store.logAttempt(
          { ...base, outcome: 'failed', error: result.error, next_attempt_at: new Date(nextMs).toISOString() },
          this.o.logSize,
        );
        if (result.gone) this.disable(row.endpoint_id, 'gone: the receiver answered 410 Gone');
        else if (this.o.disableAfterFailures > 0 && streak >= this.o.disableAfterFailures) {
          this.disable(
            row.endpoint_id,
            `failure_streak: ${streak} consecutive failed attempts (last: ${result.error}); enable it again to resume`,
          );
        }
      });
      this.log.warn(
        {
          endpoint_id: row.endpoint_id,
          message_id: row.message_id,
          attempt,
          error: result.error,
          retry_at: new Date(nextMs).toISOString(),
        },
        'webhook delivery failed',
      );
    }
    this.onAttempt?.(row, result);
  }

  private disable(endpointId: string, reason: string): void {
    this.store.disable(endpointId, reason, new Date().toISOString());
    this.endpoints = null;
    this.log.warn({ endpoint_id: endpointId, reason }, 'webhook endpoint disabled');
  }

  /** Stops starting attempts and waits for those in flight. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await Promise.all([...this.inFlight.values()]);
  }
}
