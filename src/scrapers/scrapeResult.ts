import { z } from 'zod';
import { isApiError } from '../contract/errors.js';

/**
 * What every scraper kind reports, whatever its items: one row per source (a URL, a query, a community)
 * so a partial result says which sources failed and why, never a silent empty success.
 */
export const SourceProblem = z
  .object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()).optional() })
  .meta({ id: 'ScrapeSourceProblem' });

export const SourceReport = z
  .object({
    source: z.string().describe('The input this row is about: a URL, "search:<query>", "community:<name>" or "place_id:<id>".'),
    status: z.enum(['ok', 'failed', 'not_started']).describe('not_started: the run reached its item limit before this source.'),
    items: z.int().describe('Items this source contributed after de-duplication.'),
    filtered: z.record(z.string(), z.int()).describe('Items dropped by request filters, by reason (nsfw, post_date_limit, ...).'),
    problem: SourceProblem.optional(),
  })
  .meta({ id: 'ScrapeSourceReport' });
export type SourceReportT = z.infer<typeof SourceReport>;

/**
 * Runs the sources of one run in order, each into its own report. A source's ApiError becomes its problem;
 * a run-wide one (a block page, missing credentials) fails every later source with the same problem
 * instead of hammering the upstream; once the run is full the rest are not started. Anything else (a bug,
 * an abort) ends the run.
 */
export async function runSources<S extends { label: string }>(sources: S[], o: {
  runWide: ReadonlySet<string>;
  isFull: () => boolean;
  signal: AbortSignal | undefined;
  run: (source: S, report: SourceReportT) => Promise<void>;
}): Promise<SourceReportT[]> {
  const reports: SourceReportT[] = [];
  let runWide: SourceReportT['problem'] | null = null;
  for (const source of sources) {
    const report: SourceReportT = { source: source.label, status: 'ok', items: 0, filtered: {} };
    reports.push(report);
    if (runWide) {
      Object.assign(report, { status: 'failed', problem: runWide });
      continue;
    }
    if (o.isFull()) {
      report.status = 'not_started';
      continue;
    }
    try {
      await o.run(source, report);
    } catch (e) {
      o.signal?.throwIfAborted();
      if (!isApiError(e)) throw e;
      report.status = 'failed';
      report.problem = { code: e.code, message: e.message, ...(Object.keys(e.details).length ? { details: e.details } : {}) };
      if (o.runWide.has(e.code)) runWide = report.problem;
    }
  }
  return reports;
}

/** What a runner (in the worker process) hands back for one run. */
export interface ScrapeOutcome {
  items: unknown[];
  sources: SourceReportT[];
  warnings: string[];
  /** The runner stopped because it reached `limit` (max_items or the quota cap, whichever is lower). */
  hitLimit: boolean;
}

export const RunStatus = z.enum(['queued', 'running', 'succeeded', 'partial', 'failed']);
export type RunStatusT = z.infer<typeof RunStatus>;

export const Billing = z
  .object({
    billed_units: z.int().describe('Units charged for this run: one per returned (de-duplicated) item; 0 for a failed run.'),
    billed_reviews: z.int().describe('Review units charged for this run: one per delivered review (places); 0 for a failed run.'),
    period: z.string(),
    quota: z.int(),
    used: z.int().describe('Units billed in the period, this run included.'),
    remaining: z.int(),
    reviews: z.object({ quota: z.int(), used: z.int(), remaining: z.int() }).describe('The review quota of the period (metered apart from items).'),
  })
  .meta({ id: 'ScrapeBilling' });

export const ScrapeError = z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }).meta({ id: 'ScrapeRunError' });

/** A run as the API shows it; `items`/`sources` are present once it finished. */
export function runResourceSchema(item: z.ZodType, name: string) {
  return z
    .object({
      run_id: z.string(),
      workspace_id: z.string(),
      kind: z.string(),
      status: RunStatus,
      created_at: z.string(),
      started_at: z.string().nullable(),
      finished_at: z.string().nullable(),
      item_count: z.int(),
      items: z.array(item).optional().describe('Present when the run finished and its result was not purged yet.'),
      sources: z.array(SourceReport).optional(),
      warnings: z.array(z.string()).optional(),
      truncated_by_max_items: z.boolean().optional(),
      truncated_by_quota: z.boolean().optional().describe('True when the monthly quota cut the result short.'),
      billing: Billing.optional(),
      error: ScrapeError.nullable().optional(),
      result_purged: z.boolean().optional().describe('The items were deleted after the retention period; counts and billing remain.'),
    })
    .meta({ id: name });
}
