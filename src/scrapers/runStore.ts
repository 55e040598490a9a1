import { randomUUID } from 'node:crypto';
import { Errors } from '../contract/errors.js';
import type { Db } from '../store/database.js';
import { billingPeriod, type UsageMeter } from '../workspaces/usageMeter.js';
import type { RunStatusT } from './scrapeResult.js';

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
  result_json: string | null;
  result_purged_at: string | null;
  error_json: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface RunFinish {
  status: Exclude<RunStatusT, 'queued' | 'running'>;
  itemCount: number;
  /** Reviews delivered inside the returned items. */
  reviewCount?: number;
  result: unknown | null;
  error: { code: string; message: string; details: Record<string, unknown> } | null;
}

/**
 * Scrape runs in SQLite, the source of truth: a run acknowledged to a client is a row before the answer
 * leaves, so a restart finds it. Creating a run reserves quota and finishing it bills, each in one
 * IMMEDIATE transaction, so concurrent runs (threads or processes) cannot overspend or double-count.
 */
export class RunStore {
  constructor(private readonly db: Db, readonly meter: UsageMeter) {}

  /** `wantedReviews` reserves review units too, capped at what is left (a run is not refused for lack of them). */
  create(input: { workspaceId: string; kind: string; request: unknown; wanted: number; wantedReviews?: number; maxActive: number; now?: Date }): RunRow {
    const now = input.now ?? new Date();
    const period = billingPeriod(now);
    return this.db.transaction(() => {
      const active = (this.db.prepare("SELECT count(*) AS n FROM scrape_runs WHERE status IN ('queued', 'running')").get() as { n: number }).n;
      if (active >= input.maxActive) {
        throw Errors.scrapeQueueFull(active, input.maxActive);
      }
      const usage = this.meter.snapshot(input.workspaceId, period);
      if (usage.remaining <= 0) {
        throw Errors.quotaExceeded(`The workspace used its ${usage.quota} items for ${period}${usage.reserved ? ` (${usage.reserved} reserved by runs in progress)` : ''}.`, {
          quota: usage.quota, used: usage.used, reserved: usage.reserved, period, resets_at: usage.resets_at,
        });
      }
      const row: RunRow = {
        id: `run_${randomUUID().replaceAll('-', '')}`, workspace_id: input.workspaceId, kind: input.kind, status: 'queued', request_json: JSON.stringify(input.request), period,
        reserved_units: Math.min(input.wanted, usage.remaining), billed_units: 0,
        reserved_reviews: Math.min(input.wantedReviews ?? 0, usage.reviews.remaining), billed_reviews: 0, item_count: 0, attempts: 0, result_json: null, result_purged_at: null, error_json: null,
        created_at: now.toISOString(), started_at: null, finished_at: null,
      };
      this.db.prepare(`INSERT INTO scrape_runs (id, workspace_id, kind, status, request_json, period, reserved_units, reserved_reviews, created_at)
        VALUES (@id, @workspace_id, @kind, @status, @request_json, @period, @reserved_units, @reserved_reviews, @created_at)`).run(row);
      return row;
    }).immediate();
  }

  markRunning(id: string): RunRow {
    this.db.prepare("UPDATE scrape_runs SET status = 'running', attempts = attempts + 1, started_at = ? WHERE id = ? AND status IN ('queued', 'running')").run(new Date().toISOString(), id);
    return this.byId(id)!;
  }

  /** Back to the queue (after a restart); the reservation is kept. */
  requeue(id: string): void {
    this.db.prepare("UPDATE scrape_runs SET status = 'queued', started_at = NULL WHERE id = ? AND status IN ('queued', 'running')").run(id);
  }

  /**
   * Finalises a run and bills it in one transaction. Billed units = returned items and billed reviews =
   * delivered reviews, never more than their reservations (the runner was capped at them); a failed run bills nothing. A run already final is left alone.
   */
  finish(id: string, f: RunFinish): RunRow {
    return this.db.transaction(() => {
      const run = this.byId(id);
      if (!run) throw Errors.runNotFound(id, false);
      if (run.status !== 'queued' && run.status !== 'running') return run;
      const billed = f.status === 'failed' ? 0 : Math.min(f.itemCount, run.reserved_units);
      const reviews = f.status === 'failed' ? 0 : Math.min(f.reviewCount ?? 0, run.reserved_reviews);
      this.db.prepare(`UPDATE scrape_runs SET status = ?, item_count = ?, billed_units = ?, reserved_units = 0, billed_reviews = ?, reserved_reviews = 0,
        result_json = ?, error_json = ?, finished_at = ? WHERE id = ?`)
        .run(f.status, f.status === 'failed' ? 0 : f.itemCount, billed, reviews, f.result === null ? null : JSON.stringify(f.result), f.error ? JSON.stringify(f.error) : null, new Date().toISOString(), id);
      if (f.status !== 'failed') this.meter.record(run.workspace_id, run.period, run.kind, billed, reviews);
      return this.byId(id)!;
    }).immediate();
  }

  byId(id: string): RunRow | null {
    return (this.db.prepare('SELECT * FROM scrape_runs WHERE id = ?').get(id) as RunRow | undefined) ?? null;
  }

  /** A run of this workspace; another workspace's run is "not found", never shown. */
  get(workspaceId: string, id: string): RunRow {
    const run = this.byId(id);
    if (!run || run.workspace_id !== workspaceId) throw Errors.runNotFound(id);
    return run;
  }

  /** Newest first; `before` is the last run id of the previous page. */
  list(workspaceId: string, limit: number, before?: string): RunRow[] {
    if (!before) return this.db.prepare('SELECT * FROM scrape_runs WHERE workspace_id = ? ORDER BY created_at DESC, id DESC LIMIT ?').all(workspaceId, limit) as RunRow[];
    const anchor = this.get(workspaceId, before);
    return this.db.prepare('SELECT * FROM scrape_runs WHERE workspace_id = ? AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?')
      .all(workspaceId, anchor.created_at, anchor.created_at, anchor.id, limit) as RunRow[];
  }

  active(): RunRow[] {
    return this.db.prepare("SELECT * FROM scrape_runs WHERE status IN ('queued', 'running') ORDER BY created_at, id").all() as RunRow[];
  }

  /** Drops scraped content of runs finished before `before` (upstream terms ask for short retention); counts stay. */
  purgeResults(before: Date): number {
    return this.db.prepare('UPDATE scrape_runs SET result_json = NULL, result_purged_at = ? WHERE result_json IS NOT NULL AND finished_at < ?')
      .run(new Date().toISOString(), before.toISOString()).changes;
  }
}
