import type { Db } from '../store/database.js';
import type { UsageReader } from './repository.js';

/** The billing period of an instant: the UTC calendar month, "YYYY-MM". */
export const billingPeriod = (at: Date): string => at.toISOString().slice(0, 7);
/** First instant of the next period (when the quota resets). */
export const periodEnd = (period: string): string => {
  const [y, m] = period.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(y, m, 1)).toISOString();
};

export interface UsageSnapshot {
  period: string;
  quota: number;
  /** Billed units of finished runs in the period. */
  used: number;
  /** Units held by active runs (queued, running, waiting for a rate limit; released when they finish). */
  reserved: number;
  remaining: number;
  resets_at: string;
  by_kind: Record<string, { units: number; runs: number; reviews: number }>;
  /** Reviews (places scraper) are metered apart from items, against their own monthly quota. */
  reviews: { quota: number; used: number; reserved: number; remaining: number };
}

/**
 * A workspace's usage from its billed rows per kind (sorted by kind) and the units held by its active
 * runs: the one rule for both engines (remaining never below zero).
 */
export function usageSnapshotOf(
  period: string,
  quotas: { items: number; reviews: number },
  billed: { kind: string; units: number; runs: number; reviews: number }[],
  held: { units: number; reviews: number },
): UsageSnapshot {
  const used = billed.reduce((s, r) => s + r.units, 0),
    usedReviews = billed.reduce((s, r) => s + r.reviews, 0);
  return {
    period,
    quota: quotas.items,
    used,
    reserved: held.units,
    remaining: Math.max(0, quotas.items - used - held.units),
    resets_at: periodEnd(period),
    by_kind: Object.fromEntries(billed.map((r) => [r.kind, { units: r.units, runs: r.runs, reviews: r.reviews }])),
    reviews: {
      quota: quotas.reviews,
      used: usedReviews,
      reserved: held.reviews,
      remaining: Math.max(0, quotas.reviews - usedReviews - held.reviews),
    },
  };
}

/**
 * Monthly usage per workspace: one returned item is one unit; one delivered review is one review unit. Reading and reserving happen inside the
 * caller's write transaction (RunStore), so two concurrent runs can never both take the last units.
 */
export class UsageMeter implements UsageReader {
  constructor(
    private readonly db: Db,
    private readonly defaultQuota: number,
    private readonly defaultReviewQuota = 0,
  ) {}

  async quotas(workspaceId: string): Promise<{ items: number; reviews: number }> {
    return this.quotasSync(workspaceId);
  }

  async snapshot(workspaceId: string, period: string): Promise<UsageSnapshot> {
    return this.snapshotSync(workspaceId, period);
  }

  /** Items and reviews per month: the workspace's overrides, else the deployment defaults. */
  quotasSync(workspaceId: string): { items: number; reviews: number } {
    const row = this.db
      .prepare('SELECT monthly_item_quota AS q, monthly_review_quota AS r FROM workspaces WHERE id = ?')
      .get(workspaceId) as { q: number | null; r: number | null } | undefined;
    return { items: row?.q ?? this.defaultQuota, reviews: row?.r ?? this.defaultReviewQuota };
  }

  /** The snapshot inside the caller's SQLite transaction (RunStore.create reserves from it). */
  snapshotSync(workspaceId: string, period: string): UsageSnapshot {
    const { items: quota, reviews: reviewQuota } = this.quotasSync(workspaceId);
    const rows = this.db
      .prepare(
        'SELECT kind, units, runs, review_units FROM usage_monthly WHERE workspace_id = ? AND period = ? ORDER BY kind',
      )
      .all(workspaceId, period) as { kind: string; units: number; runs: number; review_units: number }[];
    // Every active status holds its reservation (the scrapers' ACTIVE_STATUSES): a run waiting for an
    // upstream's rate limit still delivers and bills afterwards.
    const held = this.db
      .prepare(
        "SELECT COALESCE(SUM(reserved_units), 0) AS units, COALESCE(SUM(reserved_reviews), 0) AS reviews FROM scrape_runs WHERE workspace_id = ? AND period = ? AND status IN ('queued', 'running', 'waiting_for_rate_limit')",
      )
      .get(workspaceId, period) as { units: number; reviews: number };
    return usageSnapshotOf(
      period,
      { items: quota, reviews: reviewQuota },
      rows.map((r) => ({ kind: r.kind, units: r.units, runs: r.runs, reviews: r.review_units })),
      held,
    );
  }

  /** Adds a finished run's billed units and reviews (call inside the transaction that finalises the run). */
  record(workspaceId: string, period: string, kind: string, units: number, reviews = 0): void {
    this.db
      .prepare(
        `INSERT INTO usage_monthly (workspace_id, period, kind, units, runs, review_units) VALUES (?, ?, ?, ?, 1, ?)
      ON CONFLICT (workspace_id, period, kind) DO UPDATE SET units = units + excluded.units, runs = runs + 1, review_units = review_units + excluded.review_units`,
      )
      .run(workspaceId, period, kind, units, reviews);
  }
}
