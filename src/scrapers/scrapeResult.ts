import { z } from 'zod';

/**
 * What every scraper kind reports, whatever its items: one row per source (a URL, a query, a community)
 * so a partial result says which sources failed and why, never a silent empty success.
 */
export const SourceProblem = z
  .object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()).optional() })
  .meta({ id: 'ScrapeSourceProblem' });

/** A problem with one item or one part of a source that did not stop the source (the run is partial). */
export const RunProblem = z
  .object({
    code: z
      .string()
      .describe(
        'A run problem code from the error catalogue (comments_unavailable, community_info_unavailable, invalid_item, details_unavailable, …).',
      ),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).describe('`item_id` names the item concerned, when there is one.'),
  })
  .meta({ id: 'ScrapeRunProblem' });
export type RunProblemT = z.infer<typeof RunProblem>;

/** Why a source stopped delivering items. */
export const STOP_REASONS = [
  'exhausted',
  'max_items',
  'quota',
  'max_posts',
  'date_limit',
  'max_search_pages',
  'failed',
  'cancelled',
] as const;
export type StopReason = (typeof STOP_REASONS)[number];

export const SourceReport = z
  .object({
    source: z
      .string()
      .describe('The input this row is about: a URL, "search:<query>", "community:<name>" or "place_id:<id>".'),
    status: z
      .enum(['ok', 'failed', 'not_started', 'cancelled'])
      .describe(
        'not_started: the run reached its item limit (or was cancelled, or blocked) before this source; cancelled: the run was cancelled while this source was running.',
      ),
    items: z.int().describe('Items this source contributed after de-duplication.'),
    filtered: z
      .record(z.string(), z.int())
      .describe(
        'Items dropped by request filters, by reason (nsfw, post_date_limit, duplicate, seen, invalid, no_website, ...).',
      ),
    problem: SourceProblem.optional().describe('Why the source failed (status failed).'),
    stop_reason: z
      .enum(STOP_REASONS)
      .optional()
      .describe(
        'Why the source stopped: exhausted (the upstream had nothing more), max_items / quota (the run was full: the budget is shared, see docs/scrapers/index.md), ' +
          'max_posts, date_limit (post_date_limit on a newest-first sort), max_search_pages, failed, cancelled.',
      ),
    problems: z
      .array(RunProblem)
      .optional()
      .describe(
        'Problems that did not stop the source (an item or part of it could not be read); any makes the run partial.',
      ),
  })
  .meta({ id: 'ScrapeSourceReport' });
export type SourceReportT = z.infer<typeof SourceReport>;

/** What a runner (in the worker process) hands back for one run. */
export interface ScrapeOutcome {
  items: unknown[];
  sources: SourceReportT[];
  warnings: string[];
  /** The runner stopped because it reached `limit` (max_items or the quota cap, whichever is lower). */
  hitLimit: boolean;
  /** The run was cancelled: `items` is what it had delivered by then. */
  cancelled?: boolean;
}

export const RunStatus = z.enum([
  'queued',
  'running',
  'waiting_for_rate_limit',
  'succeeded',
  'partial',
  'failed',
  'cancelled',
]);
export type RunStatusT = z.infer<typeof RunStatus>;
/** Statuses of a run that has not finished (it holds its reservation and may still deliver items). */
export const ACTIVE_STATUSES: readonly RunStatusT[] = ['queued', 'running', 'waiting_for_rate_limit'];
export const isActive = (status: string): boolean => (ACTIVE_STATUSES as readonly string[]).includes(status);

export const Billing = z
  .object({
    billed_units: z
      .int()
      .describe('Units charged for this run: one per returned (de-duplicated) item; 0 for a failed run.'),
    billed_reviews: z
      .int()
      .describe('Review units charged for this run: one per delivered review (places); 0 for a failed run.'),
    period: z.string(),
    quota: z.int(),
    used: z.int().describe('Units billed in the period, this run included.'),
    remaining: z.int(),
    reviews: z
      .object({ quota: z.int(), used: z.int(), remaining: z.int() })
      .describe('The review quota of the period (metered apart from items).'),
  })
  .meta({ id: 'ScrapeBilling' });

export const ScrapeError = z
  .object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) })
  .meta({ id: 'ScrapeRunError' });

/** A run as the API shows it; `items`/`sources` are present once it finished. */
export function runResourceSchema(item: z.ZodType, name: string) {
  return z
    .object({
      run_id: z.string(),
      workspace_id: z.string(),
      kind: z.string(),
      status: RunStatus.describe(
        'queued → running (⇄ waiting_for_rate_limit) → succeeded | partial | failed | cancelled.',
      ),
      created_at: z.string(),
      started_at: z.string().nullable(),
      finished_at: z.string().nullable(),
      item_count: z.int(),
      resume_at: z
        .string()
        .nullable()
        .optional()
        .describe(
          'While waiting_for_rate_limit: when the upstream allows the next request (its retry-after or rate-limit window).',
        ),
      cancel_requested: z
        .boolean()
        .optional()
        .describe('A cancel was asked for; the run stops at its next upstream request and keeps what it delivered.'),
      items: z
        .array(item)
        .optional()
        .describe(
          'Present when the run finished and its result was not purged yet. Large runs: page them with GET …/runs/{run_id}/items.',
        ),
      sources: z.array(SourceReport).optional(),
      warnings: z.array(z.string()).optional(),
      truncated_by_max_items: z.boolean().optional(),
      truncated_by_quota: z.boolean().optional().describe('True when the monthly quota cut the result short.'),
      billing: Billing.optional(),
      error: ScrapeError.nullable().optional(),
      result_purged: z
        .boolean()
        .optional()
        .describe('The items were deleted after the retention period; counts and billing remain.'),
      items_expire_at: z
        .string()
        .nullable()
        .optional()
        .describe('When the items will be deleted ([scrapers] result_retention_hours after the run finished).'),
    })
    .meta({ id: name });
}
