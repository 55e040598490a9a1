import type pg from 'pg';
import { Errors } from '../contract/errors.js';
import { withTransaction } from '../store/postgres.js';
import { pgQuery, storeCall } from '../store/pgQuery.js';
import type { UsageReader } from '../workspaces/repository.js';
import { billingPeriod, usageSnapshotOf, type UsageSnapshot } from '../workspaces/usageMeter.js';
import type { RunRepository } from './runRepository.js';
import { ACTIVE_SQL, newRunRow, type RunFinish, type RunRow, type StoredItem } from './runStore.js';

type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;
const RUN_COLS = `id, workspace_id, kind, status, request_json, period, reserved_units, billed_units, reserved_reviews, billed_reviews, item_count, attempts,
  result_json, result_purged_at, error_json, created_at, started_at, finished_at, resume_at, cancel_requested_at`;

/**
 * Usage of a workspace in one statement, so one snapshot: the billed rows of usage_monthly and the units
 * held by active runs read at the same instant (two statements under READ COMMITTED could see a run's
 * finish between them and undercount).
 */
async function usageSnapshot(
  q: Queryable,
  workspaceId: string,
  period: string,
  defaults: { items: number; reviews: number },
): Promise<UsageSnapshot> {
  const rows = (
    await q.query<{
      t: string;
      kind: string | null;
      units: number;
      runs: number;
      reviews: number;
      q: number | null;
      rq: number | null;
    }>(
      `SELECT 'u' AS t, kind, units, runs, review_units AS reviews, NULL::int AS q, NULL::int AS rq FROM usage_monthly WHERE workspace_id = $1 AND period = $2
     UNION ALL SELECT 'r', NULL, COALESCE(SUM(reserved_units), 0)::int, 0, COALESCE(SUM(reserved_reviews), 0)::int, NULL, NULL FROM scrape_runs
       WHERE workspace_id = $1 AND period = $2 AND status IN ${ACTIVE_SQL}
     UNION ALL SELECT 'w', NULL, 0, 0, 0, monthly_item_quota, monthly_review_quota FROM workspaces WHERE id = $1`,
      [workspaceId, period],
    )
  ).rows;
  const billed = rows
    .filter((r) => r.t === 'u')
    .sort((x, y) => (x.kind! < y.kind! ? -1 : 1))
    .map((r) => ({ kind: r.kind!, units: r.units, runs: r.runs, reviews: r.reviews }));
  const held = rows.find((r) => r.t === 'r') ?? { units: 0, reviews: 0 };
  const ws = rows.find((r) => r.t === 'w');
  return usageSnapshotOf(period, { items: ws?.q ?? defaults.items, reviews: ws?.rq ?? defaults.reviews }, billed, {
    units: held.units,
    reviews: held.reviews,
  });
}

/** Usage read from PostgreSQL: one workspace's usage is the same on every box (fleet-wide metering). */
export class PgUsageMeter implements UsageReader {
  constructor(
    private readonly pool: pg.Pool,
    private readonly defaultQuota: number,
    private readonly defaultReviewQuota = 0,
  ) {}

  get defaults(): { items: number; reviews: number } {
    return { items: this.defaultQuota, reviews: this.defaultReviewQuota };
  }

  async quotas(workspaceId: string): Promise<{ items: number; reviews: number }> {
    const row = (
      await pgQuery<{ q: number | null; r: number | null }>(
        this.pool,
        'SELECT monthly_item_quota AS q, monthly_review_quota AS r FROM workspaces WHERE id = $1',
        [workspaceId],
      )
    ).rows[0];
    return { items: row?.q ?? this.defaultQuota, reviews: row?.r ?? this.defaultReviewQuota };
  }

  snapshot(workspaceId: string, period: string): Promise<UsageSnapshot> {
    return storeCall(() => usageSnapshot(this.pool, workspaceId, period, this.defaults));
  }
}

/**
 * Scrape runs in PostgreSQL (fleet mode): a run accepted by any box is a row every box reads, pages,
 * exports and cancels. Metering is fleet-wide: creating a run locks its workspace's row (SELECT … FOR
 * UPDATE), reads usage in one statement and inserts the reservation in the same transaction, so boxes
 * racing at the edge of a quota queue behind each other and never reserve past it. Finishing a run
 * stores its items, bills them and remembers their keys in one transaction, as in SQLite.
 *
 * The accepting box executes the run (its box_id): active() and activeSummary() are that box's runs,
 * and the queue bound ([scrapers] max_queued_runs) is per box, like the worker it protects.
 */
export class PgRunStore implements RunRepository {
  readonly meter: PgUsageMeter;

  constructor(
    private readonly pool: pg.Pool,
    private readonly boxId: string,
    defaultQuota: number,
    defaultReviewQuota = 0,
    private readonly seenPerKind = 100_000,
  ) {
    this.meter = new PgUsageMeter(pool, defaultQuota, defaultReviewQuota);
  }

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
    return withTransaction(this.pool, async (c) => {
      const ws = await c.query('SELECT id FROM workspaces WHERE id = $1 FOR UPDATE', [input.workspaceId]);
      if (ws.rowCount === 0) throw Errors.workspaceNotFound(input.workspaceId);
      const active = (
        await c.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM scrape_runs WHERE box_id = $1 AND status IN ${ACTIVE_SQL}`,
          [this.boxId],
        )
      ).rows[0]!.n;
      if (active >= input.maxActive) throw Errors.scrapeQueueFull(active, input.maxActive);
      const row = newRunRow(input, await usageSnapshot(c, input.workspaceId, period, this.meter.defaults), period, now);
      await c.query(
        `INSERT INTO scrape_runs (id, workspace_id, kind, status, request_json, period, reserved_units, reserved_reviews, created_at, box_id)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          row.id,
          row.workspace_id,
          row.kind,
          row.status,
          row.request_json,
          row.period,
          row.reserved_units,
          row.reserved_reviews,
          row.created_at,
          this.boxId,
        ],
      );
      return row;
    });
  }

  async markRunning(id: string): Promise<RunRow> {
    await pgQuery(
      this.pool,
      `UPDATE scrape_runs SET status = 'running', attempts = attempts + 1, started_at = $1, resume_at = NULL WHERE id = $2 AND status IN ${ACTIVE_SQL}`,
      [new Date().toISOString(), id],
    );
    return (await this.byId(id))!;
  }

  async setWaiting(id: string, resumeAt: Date | null): Promise<void> {
    if (resumeAt)
      await pgQuery(
        this.pool,
        "UPDATE scrape_runs SET status = 'waiting_for_rate_limit', resume_at = $1 WHERE id = $2 AND status IN ('running', 'waiting_for_rate_limit')",
        [resumeAt.toISOString(), id],
      );
    else
      await pgQuery(
        this.pool,
        "UPDATE scrape_runs SET status = 'running', resume_at = NULL WHERE id = $1 AND status = 'waiting_for_rate_limit'",
        [id],
      );
  }

  async requestCancel(id: string): Promise<void> {
    await pgQuery(
      this.pool,
      `UPDATE scrape_runs SET cancel_requested_at = coalesce(cancel_requested_at, $1) WHERE id = $2 AND status IN ${ACTIVE_SQL}`,
      [new Date().toISOString(), id],
    );
  }

  async requeue(id: string): Promise<void> {
    await pgQuery(
      this.pool,
      `UPDATE scrape_runs SET status = 'queued', started_at = NULL, resume_at = NULL WHERE id = $1 AND status IN ${ACTIVE_SQL}`,
      [id],
    );
  }

  async finish(id: string, f: RunFinish, recorded?: (row: RunRow) => void): Promise<RunRow> {
    const { row, finalised } = await withTransaction(this.pool, async (c) => {
      // The run's row lock: two finishes (a cancel on another box and the worker's end) never both bill.
      const run = (await c.query<RunRow>(`SELECT ${RUN_COLS} FROM scrape_runs WHERE id = $1 FOR UPDATE`, [id])).rows[0];
      if (!run) throw Errors.runNotFound(id, false);
      if (!ACTIVE_SQL.includes(`'${run.status}'`)) return { row: run, finalised: false };
      const items = f.status === 'failed' ? [] : f.items.slice(0, run.reserved_units);
      const reviews = f.status === 'failed' ? 0 : Math.min(f.reviewCount ?? 0, run.reserved_reviews);
      const now = new Date().toISOString();
      await c.query('DELETE FROM scrape_items WHERE run_id = $1', [id]);
      for (let i = 0; i < items.length; i += 1000) {
        const chunk = items.slice(i, i + 1000);
        await c.query(
          `INSERT INTO scrape_items (run_id, seq, item_key, item_json) SELECT $1, s, k, j FROM unnest($2::int[], $3::text[], $4::text[]) AS t(s, k, j)`,
          [id, chunk.map((_, n) => i + n), chunk.map((it) => it.key), chunk.map((it) => JSON.stringify(it.item))],
        );
      }
      const done = (
        await c.query<RunRow>(
          `UPDATE scrape_runs SET status = $1, item_count = $2, billed_units = $2, reserved_units = 0, billed_reviews = $3, reserved_reviews = 0,
        result_json = $4, error_json = $5, finished_at = $6, resume_at = NULL WHERE id = $7 RETURNING ${RUN_COLS}`,
          [
            f.status,
            items.length,
            reviews,
            f.result === null ? null : JSON.stringify(f.result),
            f.error ? JSON.stringify(f.error) : null,
            now,
            id,
          ],
        )
      ).rows[0]!;
      if (f.status !== 'failed') {
        await c.query(
          `INSERT INTO usage_monthly (workspace_id, period, kind, units, runs, review_units) VALUES ($1, $2, $3, $4, 1, $5)
          ON CONFLICT (workspace_id, period, kind) DO UPDATE SET units = usage_monthly.units + excluded.units, runs = usage_monthly.runs + 1,
          review_units = usage_monthly.review_units + excluded.review_units`,
          [run.workspace_id, run.period, run.kind, items.length, reviews],
        );
        await this.remember(
          c,
          run.workspace_id,
          run.kind,
          items.map((i) => i.key),
          now,
        );
      }
      return { row: done, finalised: true };
    });
    // Committed: what the listener writes (the run webhook, in this box's local outbox) follows the commit.
    if (finalised) recorded?.(row);
    return row;
  }

  private async remember(
    c: pg.PoolClient,
    workspaceId: string,
    kind: string,
    keys: string[],
    at: string,
  ): Promise<void> {
    if (keys.length === 0) return;
    await c.query(
      `INSERT INTO scrape_seen_items (workspace_id, kind, item_key, seen_at) SELECT DISTINCT $1, $2, k, $4 FROM unnest($3::text[]) AS k
      ON CONFLICT (workspace_id, kind, item_key) DO UPDATE SET seen_at = excluded.seen_at`,
      [workspaceId, kind, keys, at],
    );
    const n = (
      await c.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM scrape_seen_items WHERE workspace_id = $1 AND kind = $2',
        [workspaceId, kind],
      )
    ).rows[0]!.n;
    if (n <= this.seenPerKind) return;
    await c.query(
      `DELETE FROM scrape_seen_items WHERE workspace_id = $1 AND kind = $2 AND item_key IN (
      SELECT item_key FROM scrape_seen_items WHERE workspace_id = $1 AND kind = $2 ORDER BY seen_at, item_key LIMIT $3)`,
      [workspaceId, kind, n - this.seenPerKind],
    );
  }

  async seenKeys(workspaceId: string, kind: string): Promise<string[]> {
    return (
      await pgQuery<{ item_key: string }>(
        this.pool,
        'SELECT item_key FROM scrape_seen_items WHERE workspace_id = $1 AND kind = $2',
        [workspaceId, kind],
      )
    ).rows.map((r) => r.item_key);
  }

  async seenCounts(workspaceId: string): Promise<{ by_kind: Record<string, number>; capacity_per_kind: number }> {
    const rows = (
      await pgQuery<{ kind: string; n: number }>(
        this.pool,
        'SELECT kind, count(*)::int AS n FROM scrape_seen_items WHERE workspace_id = $1 GROUP BY kind ORDER BY kind',
        [workspaceId],
      )
    ).rows;
    return { by_kind: Object.fromEntries(rows.map((r) => [r.kind, r.n])), capacity_per_kind: this.seenPerKind };
  }

  async items(runId: string, afterSeq: number, limit: number): Promise<StoredItem[]> {
    const rows = (
      await pgQuery<{ seq: number; item_json: string }>(
        this.pool,
        'SELECT seq, item_json FROM scrape_items WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
        [runId, afterSeq, Math.min(limit, 2 ** 31 - 1)],
      )
    ).rows;
    return rows.map((r) => ({ seq: r.seq, item: JSON.parse(r.item_json) as unknown }));
  }

  async *itemJsonBatches(runId: string, batch = 500): AsyncGenerator<string[]> {
    let after = -1;
    for (;;) {
      const rows = (
        await pgQuery<{ seq: number; item_json: string }>(
          this.pool,
          'SELECT seq, item_json FROM scrape_items WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3',
          [runId, after, batch],
        )
      ).rows;
      if (rows.length === 0) return;
      yield rows.map((r) => r.item_json);
      after = rows.at(-1)!.seq;
    }
  }

  async byId(id: string): Promise<RunRow | null> {
    return (
      (await pgQuery<RunRow>(this.pool, `SELECT ${RUN_COLS} FROM scrape_runs WHERE id = $1`, [id])).rows[0] ?? null
    );
  }

  async get(workspaceId: string, id: string): Promise<RunRow> {
    const run = await this.byId(id);
    if (!run || run.workspace_id !== workspaceId) throw Errors.runNotFound(id);
    return run;
  }

  async list(workspaceId: string, limit: number, before?: string): Promise<RunRow[]> {
    if (!before)
      return (
        await pgQuery<RunRow>(
          this.pool,
          `SELECT ${RUN_COLS} FROM scrape_runs WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
          [workspaceId, limit],
        )
      ).rows;
    const anchor = await this.get(workspaceId, before);
    return (
      await pgQuery<RunRow>(
        this.pool,
        `SELECT ${RUN_COLS} FROM scrape_runs WHERE workspace_id = $1 AND (created_at < $2 OR (created_at = $2 AND id < $3))
      ORDER BY created_at DESC, id DESC LIMIT $4`,
        [workspaceId, anchor.created_at, anchor.id, limit],
      )
    ).rows;
  }

  async unannounced(): Promise<RunRow[]> {
    return (
      await pgQuery<RunRow>(
        this.pool,
        `SELECT ${RUN_COLS} FROM scrape_runs WHERE box_id = $1 AND announced_at IS NULL AND finished_at IS NOT NULL ORDER BY finished_at, id`,
        [this.boxId],
      )
    ).rows;
  }

  async markAnnounced(id: string): Promise<void> {
    await pgQuery(this.pool, 'UPDATE scrape_runs SET announced_at = $1 WHERE id = $2 AND announced_at IS NULL', [
      new Date().toISOString(),
      id,
    ]);
  }

  async cancelRequested(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return (
      await pgQuery<{ id: string }>(
        this.pool,
        `SELECT id FROM scrape_runs WHERE id = ANY($1) AND cancel_requested_at IS NOT NULL AND status IN ${ACTIVE_SQL}`,
        [ids],
      )
    ).rows.map((r) => r.id);
  }

  async active(): Promise<RunRow[]> {
    return (
      await pgQuery<RunRow>(
        this.pool,
        `SELECT ${RUN_COLS} FROM scrape_runs WHERE box_id = $1 AND status IN ${ACTIVE_SQL} ORDER BY created_at, id`,
        [this.boxId],
      )
    ).rows;
  }

  async activeSummary(): Promise<{
    queued: number;
    running: number;
    waiting_for_rate_limit: number;
    next_resume_at: string | null;
  }> {
    const rows = (
      await pgQuery<{ status: string; n: number; resume: string | null }>(
        this.pool,
        `SELECT status, count(*)::int AS n, min(resume_at) AS resume FROM scrape_runs WHERE box_id = $1 AND status IN ${ACTIVE_SQL} GROUP BY status`,
        [this.boxId],
      )
    ).rows;
    const n = (s: string) => rows.find((r) => r.status === s)?.n ?? 0;
    return {
      queued: n('queued'),
      running: n('running'),
      waiting_for_rate_limit: n('waiting_for_rate_limit'),
      next_resume_at: rows.find((r) => r.status === 'waiting_for_rate_limit')?.resume ?? null,
    };
  }

  async purgeResults(before: Date): Promise<number> {
    const r = await pgQuery(
      this.pool,
      `WITH ids AS (
        SELECT id FROM scrape_runs r WHERE result_purged_at IS NULL AND finished_at IS NOT NULL AND finished_at < $1 AND EXISTS (SELECT 1 FROM scrape_items i WHERE i.run_id = r.id)
        FOR UPDATE SKIP LOCKED),
      gone AS (DELETE FROM scrape_items WHERE run_id IN (SELECT id FROM ids))
      UPDATE scrape_runs SET result_purged_at = $2 WHERE id IN (SELECT id FROM ids)`,
      [before.toISOString(), new Date().toISOString()],
    );
    return r.rowCount ?? 0;
  }
}
