import { randomUUID } from 'node:crypto';
import { Errors } from '../contract/errors.js';
import type { Db } from '../store/database.js';
import { billingPeriod, type UsageMeter, type UsageSnapshot } from '../workspaces/usageMeter.js';
import { ACTIVE_STATUSES, type RunStatusT } from './scrapeResult.js';
import type { RunRepository } from './runRepository.js';

export interface RunRow {
  id: string;
  workspace_id: string;
  kind: string;
  status: RunStatusT;
  request_json: string;
  period: string;
  reserved_units: number;
  billed_units: number;
  /** Review units (places) held while active, and billed when finished. */
  reserved_reviews: number;
  billed_reviews: number;
  item_count: number;
  attempts: number;
  /** Sources, warnings and truncation flags of a finished run (the items are rows of scrape_items). */
  result_json: string | null;
  result_purged_at: string | null;
  error_json: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** While waiting_for_rate_limit: when the upstream allows the next request. */
  resume_at: string | null;
  cancel_requested_at: string | null;
}

export interface RunFinish {
  status: 'succeeded' | 'partial' | 'failed' | 'cancelled';
  /** The items delivered, in order, with their de-duplication keys (none for a failed run). */
  items: { key: string; item: unknown }[];
  /** Reviews delivered inside the returned items. */
  reviewCount?: number;
  result: unknown | null;
  error: { code: string; message: string; details: Record<string, unknown> } | null;
}

export interface StoredItem {
  seq: number;
  item: unknown;
}

export const ACTIVE_SQL = `(${ACTIVE_STATUSES.map((s) => `'${s}'`).join(', ')})`;

/**
 * The queued row of a new run from the usage read inside the creating transaction (shared by both
 * engines): 429 quota_exceeded when nothing is left, else the reservation capped at what remains.
 */
export function newRunRow(
  input: { workspaceId: string; kind: string; request: unknown; wanted: number; wantedReviews?: number },
  usage: UsageSnapshot,
  period: string,
  now: Date,
): RunRow {
  if (usage.remaining <= 0) {
    throw Errors.quotaExceeded(
      `The workspace used its ${usage.quota} items for ${period}${usage.reserved ? ` (${usage.reserved} reserved by runs in progress)` : ''}.`,
      {
        quota: usage.quota,
        used: usage.used,
        reserved: usage.reserved,
        period,
        resets_at: usage.resets_at,
      },
    );
  }
  return {
    id: `run_${randomUUID().replaceAll('-', '')}`,
    workspace_id: input.workspaceId,
    kind: input.kind,
    status: 'queued',
    request_json: JSON.stringify(input.request),
    period,
    reserved_units: Math.min(input.wanted, usage.remaining),
    billed_units: 0,
    reserved_reviews: Math.min(input.wantedReviews ?? 0, usage.reviews.remaining),
    billed_reviews: 0,
    item_count: 0,
    attempts: 0,
    result_json: null,
    result_purged_at: null,
    error_json: null,
    created_at: now.toISOString(),
    started_at: null,
    finished_at: null,
    resume_at: null,
    cancel_requested_at: null,
  };
}

/**
 * Scrape runs in SQLite, the source of truth: a run acknowledged to a client is a row before the answer
 * leaves, so a restart finds it. Creating a run reserves quota and finishing it stores its items, bills
 * them and remembers their keys (the only_new seen-set), each in one IMMEDIATE transaction, so concurrent
 * runs (threads or processes) cannot overspend or double-count, and billed units always equal the items
 * stored.
 */
export class RunStore implements RunRepository {
  constructor(
    private readonly db: Db,
    readonly meter: UsageMeter,
    private readonly seenPerKind = 100_000,
  ) {}

  /** `wantedReviews` reserves review units too, capped at what is left (a run is not refused for lack of them). */
  async create(input: {
    workspaceId: string;
    kind: string;
    request: unknown;
    wanted: number;
    wantedReviews?: number;
    maxActive: number;
    now?: Date;
  }): Promise<RunRow> {
    const now = input.now ?? new Date();
    const period = billingPeriod(now);
    return this.db
      .transaction(() => {
        const active = (
          this.db.prepare(`SELECT count(*) AS n FROM scrape_runs WHERE status IN ${ACTIVE_SQL}`).get() as { n: number }
        ).n;
        if (active >= input.maxActive) {
          throw Errors.scrapeQueueFull(active, input.maxActive);
        }
        const usage = this.meter.snapshotSync(input.workspaceId, period);
        const row = newRunRow(input, usage, period, now);
        this.db
          .prepare(
            `INSERT INTO scrape_runs (id, workspace_id, kind, status, request_json, period, reserved_units, reserved_reviews, created_at)
        VALUES (@id, @workspace_id, @kind, @status, @request_json, @period, @reserved_units, @reserved_reviews, @created_at)`,
          )
          .run(row);
        return row;
      })
      .immediate();
  }

  async markRunning(id: string): Promise<RunRow> {
    this.db
      .prepare(
        `UPDATE scrape_runs SET status = 'running', attempts = attempts + 1, started_at = ?, resume_at = NULL WHERE id = ? AND status IN ${ACTIVE_SQL}`,
      )
      .run(new Date().toISOString(), id);
    return this.byIdSync(id)!;
  }

  /** The run waits for the upstream's rate limit until `resumeAt` (waiting_for_rate_limit), or goes on (null). */
  async setWaiting(id: string, resumeAt: Date | null): Promise<void> {
    if (resumeAt)
      this.db
        .prepare(
          "UPDATE scrape_runs SET status = 'waiting_for_rate_limit', resume_at = ? WHERE id = ? AND status IN ('running', 'waiting_for_rate_limit')",
        )
        .run(resumeAt.toISOString(), id);
    else
      this.db
        .prepare(
          "UPDATE scrape_runs SET status = 'running', resume_at = NULL WHERE id = ? AND status = 'waiting_for_rate_limit'",
        )
        .run(id);
  }

  /** Records that a cancel was asked for (it survives a restart: the run is then finished as cancelled, not re-run). */
  async requestCancel(id: string): Promise<void> {
    this.db
      .prepare(
        `UPDATE scrape_runs SET cancel_requested_at = coalesce(cancel_requested_at, ?) WHERE id = ? AND status IN ${ACTIVE_SQL}`,
      )
      .run(new Date().toISOString(), id);
  }

  /** Back to the queue (after a restart); the reservation is kept. */
  async requeue(id: string): Promise<void> {
    this.db
      .prepare(
        `UPDATE scrape_runs SET status = 'queued', started_at = NULL, resume_at = NULL WHERE id = ? AND status IN ${ACTIVE_SQL}`,
      )
      .run(id);
  }

  /**
   * Finalises a run in one transaction: its items become rows, billed units = those rows and billed
   * reviews = delivered reviews, never more than their reservations (the runner was capped at them); the
   * items' keys join the workspace's seen-set. A failed run stores and bills nothing. A run already final
   * is left alone. `recorded` runs inside the same transaction with the final row, only when this call
   * finalised the run (what it writes, e.g. a run webhook in the outbox, commits or rolls back with it).
   */
  async finish(id: string, f: RunFinish, recorded?: (row: RunRow) => void): Promise<RunRow> {
    return this.db
      .transaction(() => {
        const run = this.byIdSync(id);
        if (!run) throw Errors.runNotFound(id, false);
        if (!ACTIVE_STATUSES.includes(run.status)) return run;
        const items = f.status === 'failed' ? [] : f.items.slice(0, run.reserved_units);
        const reviews = f.status === 'failed' ? 0 : Math.min(f.reviewCount ?? 0, run.reserved_reviews);
        const now = new Date().toISOString();
        // A run re-queued after a restart may have left nothing here, but a second finish must never double rows.
        this.db.prepare('DELETE FROM scrape_items WHERE run_id = ?').run(id);
        const insert = this.db.prepare(
          'INSERT INTO scrape_items (run_id, seq, item_key, item_json) VALUES (?, ?, ?, ?)',
        );
        items.forEach((it, seq) => insert.run(id, seq, it.key, JSON.stringify(it.item)));
        this.db
          .prepare(
            `UPDATE scrape_runs SET status = ?, item_count = ?, billed_units = ?, reserved_units = 0, billed_reviews = ?, reserved_reviews = 0,
        result_json = ?, error_json = ?, finished_at = ?, resume_at = NULL WHERE id = ?`,
          )
          .run(
            f.status,
            items.length,
            items.length,
            reviews,
            f.result === null ? null : JSON.stringify(f.result),
            f.error ? JSON.stringify(f.error) : null,
            now,
            id,
          );
        if (f.status !== 'failed') {
          this.meter.record(run.workspace_id, run.period, run.kind, items.length, reviews);
          this.remember(
            run.workspace_id,
            run.kind,
            items.map((i) => i.key),
            now,
          );
        }
        const done = this.byIdSync(id)!;
        recorded?.(done);
        return done;
      })
      .immediate();
  }

  /** Adds delivered keys to the seen-set (refreshing known ones), then forgets the least recent past the bound. */
  private remember(workspaceId: string, kind: string, keys: string[], at: string): void {
    if (keys.length === 0) return;
    const upsert = this.db
      .prepare(`INSERT INTO scrape_seen_items (workspace_id, kind, item_key, seen_at) VALUES (?, ?, ?, ?)
      ON CONFLICT (workspace_id, kind, item_key) DO UPDATE SET seen_at = excluded.seen_at`);
    for (const key of keys) upsert.run(workspaceId, kind, key, at);
    const n = (
      this.db
        .prepare('SELECT count(*) AS n FROM scrape_seen_items WHERE workspace_id = ? AND kind = ?')
        .get(workspaceId, kind) as { n: number }
    ).n;
    if (n <= this.seenPerKind) return;
    this.db
      .prepare(
        `DELETE FROM scrape_seen_items WHERE workspace_id = ? AND kind = ? AND item_key IN (
      SELECT item_key FROM scrape_seen_items WHERE workspace_id = ? AND kind = ? ORDER BY seen_at, item_key LIMIT ?)`,
      )
      .run(workspaceId, kind, workspaceId, kind, n - this.seenPerKind);
  }

  /** The keys of items delivered to this workspace before, for an only_new run. */
  async seenKeys(workspaceId: string, kind: string): Promise<string[]> {
    return this.db
      .prepare('SELECT item_key FROM scrape_seen_items WHERE workspace_id = ? AND kind = ?')
      .pluck()
      .all(workspaceId, kind) as string[];
  }

  /** How many keys the workspace's seen-set holds per kind, and the bound. */
  async seenCounts(workspaceId: string): Promise<{ by_kind: Record<string, number>; capacity_per_kind: number }> {
    const rows = this.db
      .prepare('SELECT kind, count(*) AS n FROM scrape_seen_items WHERE workspace_id = ? GROUP BY kind')
      .all(workspaceId) as { kind: string; n: number }[];
    return { by_kind: Object.fromEntries(rows.map((r) => [r.kind, r.n])), capacity_per_kind: this.seenPerKind };
  }

  /** Items of a run after `afterSeq` (-1: from the start), in delivery order. */
  async items(runId: string, afterSeq: number, limit: number): Promise<StoredItem[]> {
    return (
      this.db
        .prepare('SELECT seq, item_json FROM scrape_items WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?')
        .all(runId, afterSeq, limit) as { seq: number; item_json: string }[]
    ).map((r) => ({ seq: r.seq, item: JSON.parse(r.item_json) as unknown }));
  }

  /** The raw JSON of a run's items in batches, for streaming exports (no run is ever loaded whole). */
  async *itemJsonBatches(runId: string, batch = 500): AsyncGenerator<string[]> {
    let after = -1;
    for (;;) {
      const rows = this.db
        .prepare('SELECT seq, item_json FROM scrape_items WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?')
        .all(runId, after, batch) as { seq: number; item_json: string }[];
      if (rows.length === 0) return;
      yield rows.map((r) => r.item_json);
      after = rows.at(-1)!.seq;
    }
  }

  async byId(id: string): Promise<RunRow | null> {
    return this.byIdSync(id);
  }

  private byIdSync(id: string): RunRow | null {
    return (this.db.prepare('SELECT * FROM scrape_runs WHERE id = ?').get(id) as RunRow | undefined) ?? null;
  }

  /** A run of this workspace; another workspace's run is "not found", never shown. */
  async get(workspaceId: string, id: string): Promise<RunRow> {
    return this.getSync(workspaceId, id);
  }

  private getSync(workspaceId: string, id: string): RunRow {
    const run = this.byIdSync(id);
    if (!run || run.workspace_id !== workspaceId) throw Errors.runNotFound(id);
    return run;
  }

  /** Newest first; `before` is the last run id of the previous page. */
  async list(workspaceId: string, limit: number, before?: string): Promise<RunRow[]> {
    if (!before)
      return this.db
        .prepare('SELECT * FROM scrape_runs WHERE workspace_id = ? ORDER BY created_at DESC, id DESC LIMIT ?')
        .all(workspaceId, limit) as RunRow[];
    const anchor = this.getSync(workspaceId, before);
    return this.db
      .prepare(
        'SELECT * FROM scrape_runs WHERE workspace_id = ? AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?',
      )
      .all(workspaceId, anchor.created_at, anchor.created_at, anchor.id, limit) as RunRow[];
  }

  /** Empty: in SQLite the webhook is written in the transaction that finishes the run. */
  async unannounced(): Promise<RunRow[]> {
    return [];
  }

  async markAnnounced(): Promise<void> {
    // Nothing to record (see unannounced).
  }

  async cancelRequested(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return this.db
      .prepare(
        `SELECT id FROM scrape_runs WHERE id IN (${ids.map(() => '?').join(', ')}) AND cancel_requested_at IS NOT NULL AND status IN ${ACTIVE_SQL}`,
      )
      .pluck()
      .all(...ids) as string[];
  }

  async active(): Promise<RunRow[]> {
    return this.db
      .prepare(`SELECT * FROM scrape_runs WHERE status IN ${ACTIVE_SQL} ORDER BY created_at, id`)
      .all() as RunRow[];
  }

  /**
   * Runs not finished, by status, and the earliest `resume_at` of those waiting for an upstream's rate
   * limit: what a pull-based metrics collector reads (queue depth and visible back-pressure).
   */
  async activeSummary(): Promise<{
    queued: number;
    running: number;
    waiting_for_rate_limit: number;
    next_resume_at: string | null;
  }> {
    const rows = this.db
      .prepare(
        `SELECT status, count(*) AS n, min(resume_at) AS resume FROM scrape_runs WHERE status IN ${ACTIVE_SQL} GROUP BY status`,
      )
      .all() as { status: string; n: number; resume: string | null }[];
    const n = (s: string) => rows.find((r) => r.status === s)?.n ?? 0;
    return {
      queued: n('queued'),
      running: n('running'),
      waiting_for_rate_limit: n('waiting_for_rate_limit'),
      next_resume_at: rows.find((r) => r.status === 'waiting_for_rate_limit')?.resume ?? null,
    };
  }

  /** Drops scraped items of runs finished before `before` (upstream terms ask for short retention); counts, sources and billing stay. */
  async purgeResults(before: Date): Promise<number> {
    return this.db
      .transaction(() => {
        const ids = this.db
          .prepare(
            `SELECT id FROM scrape_runs r WHERE result_purged_at IS NULL AND finished_at IS NOT NULL AND finished_at < ?
        AND EXISTS (SELECT 1 FROM scrape_items i WHERE i.run_id = r.id)`,
          )
          .pluck()
          .all(before.toISOString()) as string[];
        const del = this.db.prepare('DELETE FROM scrape_items WHERE run_id = ?');
        const mark = this.db.prepare('UPDATE scrape_runs SET result_purged_at = ? WHERE id = ?');
        const now = new Date().toISOString();
        for (const id of ids) {
          del.run(id);
          mark.run(now, id);
        }
        return ids.length;
      })
      .immediate();
  }
}
