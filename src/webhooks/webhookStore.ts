import { CredentialCipher } from '../store/credentialCipher.js';
import type { Db } from '../store/database.js';

/** One endpoint as stored (the secret included, decrypted: it is needed to sign). */
export interface WebhookEndpoint {
  id: string;
  scope: string;
  url: string;
  description: string;
  /** Empty = every event type of the scope. */
  event_types: string[];
  /** Each key lists the values a message's tag must have one of (`{}` = every message). */
  filters: Record<string, string[]>;
  secret: string;
  enabled: boolean;
  disabled_reason: string | null;
  disabled_at: string | null;
  failure_streak: number;
  last_success_at: string | null;
  last_failure_at: string | null;
  created_at: string;
  updated_at: string;
}

/** What /metrics shows of one endpoint. */
export interface WebhookEndpointHealth {
  id: string;
  scope: string;
  enabled: boolean;
  failure_streak: number;
  pending: number;
}

/** One queued message for one endpoint. */
export interface OutboxRow {
  seq: number;
  endpoint_id: string;
  message_id: string;
  type: string;
  body: string;
  created_ms: number;
  attempts: number;
  next_attempt_ms: number;
}

/** One attempt of the delivery log. */
export interface AttemptRow {
  seq: number;
  endpoint_id: string;
  message_id: string;
  type: string;
  attempt: number;
  at: string;
  outcome: 'delivered' | 'failed';
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  next_attempt_at: string | null;
}

interface EndpointDbRow extends Omit<WebhookEndpoint, 'event_types' | 'filters' | 'enabled'> {
  event_types_json: string;
  filters_json: string;
  enabled: number;
}

const toEndpoint = (r: EndpointDbRow, secret: string): WebhookEndpoint => ({
  id: r.id,
  scope: r.scope,
  url: r.url,
  description: r.description,
  event_types: JSON.parse(r.event_types_json) as string[],
  filters: JSON.parse(r.filters_json) as Record<string, string[]>,
  secret,
  enabled: r.enabled === 1,
  disabled_reason: r.disabled_reason,
  disabled_at: r.disabled_at,
  failure_streak: r.failure_streak,
  last_success_at: r.last_success_at,
  last_failure_at: r.last_failure_at,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

/** The AAD of an endpoint's secret: the ciphertext belongs to this row only. */
const secretAad = (endpointId: string) => `webhook:${endpointId}`;

/**
 * SQL of webhook endpoints, the outbox and the delivery log (no rules here). Signing secrets are stored
 * encrypted with the box key (CredentialCipher, as monitor URLs): encrypted on the way in, decrypted on the
 * way out, so the database file and its backups hold ciphertext only.
 */
export class WebhookStore {
  constructor(
    readonly db: Db,
    private readonly cipher: CredentialCipher,
  ) {}

  private endpoint = (r: EndpointDbRow): WebhookEndpoint =>
    toEndpoint(r, this.cipher.decrypt(r.secret, secretAad(r.id)));

  /**
   * Start-up: encrypts the plaintext secrets an older version stored (idempotent: rows already encrypted are
   * left alone; one transaction, so a crash leaves every row either plaintext or encrypted, and the next
   * start finishes). secure_delete zeroes the plaintext's old bytes in the file, so backups never carry it.
   * Returns how many rows it encrypted.
   */
  encryptPlaintextSecrets(): number {
    const rows = (
      this.db.prepare('SELECT id, secret FROM webhook_endpoints').all() as { id: string; secret: string }[]
    ).filter((r) => !CredentialCipher.isToken(r.secret));
    if (rows.length === 0) return 0;
    const secureDelete = this.db.pragma('secure_delete', { simple: true }) as number;
    this.db.pragma('secure_delete = ON');
    try {
      const update = this.db.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ? AND secret = ?');
      this.transaction(() => {
        for (const r of rows) update.run(this.cipher.encrypt(r.secret, secretAad(r.id)), r.id, r.secret);
      });
    } finally {
      this.db.pragma(`secure_delete = ${secureDelete}`);
    }
    return rows.length;
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  insertEndpoint(e: WebhookEndpoint): void {
    this.db
      .prepare(
        `INSERT INTO webhook_endpoints (id, scope, url, description, event_types_json, filters_json, secret, enabled, disabled_reason, disabled_at,
      failure_streak, last_success_at, last_failure_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        e.id,
        e.scope,
        e.url,
        e.description,
        JSON.stringify(e.event_types),
        JSON.stringify(e.filters),
        this.cipher.encrypt(e.secret, secretAad(e.id)),
        e.enabled ? 1 : 0,
        e.disabled_reason,
        e.disabled_at,
        e.failure_streak,
        e.last_success_at,
        e.last_failure_at,
        e.created_at,
        e.updated_at,
      );
  }

  updateEndpoint(e: WebhookEndpoint): void {
    this.db
      .prepare(
        `UPDATE webhook_endpoints SET url = ?, description = ?, event_types_json = ?, filters_json = ?, enabled = ?, disabled_reason = ?, disabled_at = ?,
      failure_streak = ?, updated_at = ? WHERE id = ?`,
      )
      .run(
        e.url,
        e.description,
        JSON.stringify(e.event_types),
        JSON.stringify(e.filters),
        e.enabled ? 1 : 0,
        e.disabled_reason,
        e.disabled_at,
        e.failure_streak,
        e.updated_at,
        e.id,
      );
  }

  getEndpoint(id: string): WebhookEndpoint | null {
    const r = this.db.prepare('SELECT * FROM webhook_endpoints WHERE id = ?').get(id) as EndpointDbRow | undefined;
    return r ? this.endpoint(r) : null;
  }

  listEndpoints(scope: string, after: string | null, limit: number): WebhookEndpoint[] {
    return (
      this.db
        .prepare('SELECT * FROM webhook_endpoints WHERE scope = ? AND id > ? ORDER BY id LIMIT ?')
        .all(scope, after ?? '', limit) as EndpointDbRow[]
    ).map(this.endpoint);
  }

  enabledEndpoints(): WebhookEndpoint[] {
    return (
      this.db.prepare('SELECT * FROM webhook_endpoints WHERE enabled = 1 ORDER BY id').all() as EndpointDbRow[]
    ).map(this.endpoint);
  }

  summary(scope: string): { endpoints: number; enabled: number; pending_messages: number } {
    const e = this.db
      .prepare('SELECT count(*) AS n, coalesce(sum(enabled), 0) AS on_ FROM webhook_endpoints WHERE scope = ?')
      .get(scope) as { n: number; on_: number };
    const p = this.db
      .prepare(
        'SELECT count(*) AS n FROM webhook_outbox o JOIN webhook_endpoints e ON e.id = o.endpoint_id WHERE e.scope = ?',
      )
      .get(scope) as { n: number };
    return { endpoints: e.n, enabled: e.on_, pending_messages: p.n };
  }

  /** Endpoints of every scope (the first `limit` by id) with their queued messages, and the totals by state. */
  health(limit: number): { endpoints: WebhookEndpointHealth[]; enabled: number; disabled: number } {
    const endpoints = (
      this.db
        .prepare(
          `SELECT id, scope, enabled, failure_streak, (SELECT count(*) FROM webhook_outbox o WHERE o.endpoint_id = e.id) AS pending
      FROM webhook_endpoints e ORDER BY id LIMIT ?`,
        )
        .all(limit) as (Omit<WebhookEndpointHealth, 'enabled'> & { enabled: number })[]
    ).map((r) => ({ ...r, enabled: r.enabled === 1 }));
    const totals = this.db
      .prepare('SELECT coalesce(sum(enabled), 0) AS on_, count(*) AS n FROM webhook_endpoints')
      .get() as { on_: number; n: number };
    return { endpoints, enabled: totals.on_, disabled: totals.n - totals.on_ };
  }

  deleteEndpoint(id: string): boolean {
    return this.db.prepare('DELETE FROM webhook_endpoints WHERE id = ?').run(id).changes > 0;
  }

  // ---- outbox ----

  enqueue(endpointId: string, messageId: string, type: string, body: string, nowMs: number): void {
    this.db
      .prepare(
        'INSERT INTO webhook_outbox (endpoint_id, message_id, type, body, created_ms, next_attempt_ms) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(endpointId, messageId, type, body, nowMs, nowMs);
  }

  pendingCount(endpointId: string): number {
    return (
      this.db.prepare('SELECT count(*) AS n FROM webhook_outbox WHERE endpoint_id = ?').get(endpointId) as { n: number }
    ).n;
  }

  /** The oldest queued message of every enabled endpoint. */
  heads(): OutboxRow[] {
    return this.db
      .prepare(
        `SELECT o.* FROM webhook_endpoints e JOIN webhook_outbox o ON o.seq = (SELECT min(seq) FROM webhook_outbox WHERE endpoint_id = e.id)
      WHERE e.enabled = 1`,
      )
      .all() as OutboxRow[];
  }

  oldestPending(endpointId: string): OutboxRow | null {
    return (
      (this.db.prepare('SELECT * FROM webhook_outbox WHERE endpoint_id = ? ORDER BY seq LIMIT 1').get(endpointId) as
        OutboxRow | undefined) ?? null
    );
  }

  removeMessage(seq: number): void {
    this.db.prepare('DELETE FROM webhook_outbox WHERE seq = ?').run(seq);
  }

  rescheduleMessage(seq: number, attempts: number, nextAttemptMs: number): void {
    this.db
      .prepare('UPDATE webhook_outbox SET attempts = ?, next_attempt_ms = ? WHERE seq = ?')
      .run(attempts, nextAttemptMs, seq);
  }

  /** After a re-enable: the head is tried at once. */
  retryNow(endpointId: string, nowMs: number): void {
    this.db.prepare('UPDATE webhook_outbox SET next_attempt_ms = ? WHERE endpoint_id = ?').run(nowMs, endpointId);
  }

  recordSuccess(endpointId: string, at: string): void {
    this.db
      .prepare('UPDATE webhook_endpoints SET failure_streak = 0, last_success_at = ? WHERE id = ?')
      .run(at, endpointId);
  }

  /** The new failure streak. */
  recordFailure(endpointId: string, at: string): number {
    this.db
      .prepare('UPDATE webhook_endpoints SET failure_streak = failure_streak + 1, last_failure_at = ? WHERE id = ?')
      .run(at, endpointId);
    return (
      (
        this.db.prepare('SELECT failure_streak FROM webhook_endpoints WHERE id = ?').get(endpointId) as
          { failure_streak: number } | undefined
      )?.failure_streak ?? 0
    );
  }

  disable(endpointId: string, reason: string, at: string): void {
    this.db
      .prepare(
        'UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, disabled_at = ?, updated_at = ? WHERE id = ?',
      )
      .run(reason, at, at, endpointId);
  }

  // ---- delivery log ----

  logAttempt(a: Omit<AttemptRow, 'seq'>, keep: number): void {
    this.db
      .prepare(
        `INSERT INTO webhook_attempts (endpoint_id, message_id, type, attempt, at, outcome, status_code, latency_ms, error, next_attempt_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        a.endpoint_id,
        a.message_id,
        a.type,
        a.attempt,
        a.at,
        a.outcome,
        a.status_code,
        a.latency_ms,
        a.error,
        a.next_attempt_at,
      );
    this.db
      .prepare(
        `DELETE FROM webhook_attempts WHERE endpoint_id = ? AND seq <= (SELECT seq FROM webhook_attempts WHERE endpoint_id = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
      )
      .run(a.endpoint_id, a.endpoint_id, keep);
  }

  /** Newest first, keyset by seq. */
  attempts(endpointId: string, beforeSeq: number | null, limit: number): AttemptRow[] {
    return this.db
      .prepare('SELECT * FROM webhook_attempts WHERE endpoint_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?')
      .all(endpointId, beforeSeq ?? Number.MAX_SAFE_INTEGER, limit) as AttemptRow[];
  }
}
