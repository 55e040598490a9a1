import { z } from 'zod';
import { EXPORT_FORMATS } from '../../scrapers/datasetExport.js';
import { scraperKinds } from '../../scrapers/kinds.js';
import { RunStatus, runResourceSchema } from '../../scrapers/scrapeResult.js';
import { billingPeriod } from '../../workspaces/usageMeter.js';
import { readJson, readQuery } from '../input.js';
import type { AppContext, RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

const W = '/workspaces/{workspace_id}';

export const UsageResponse = z
  .object({
    request_id: z.string(),
    workspace_id: z.string(),
    period: z.string().describe('UTC calendar month, YYYY-MM.'),
    quota: z.int().describe('Items per month (the workspace override or [scrapers] free_items_per_month).'),
    used: z.int(),
    reserved: z.int().describe('Held by queued/running runs until they finish.'),
    remaining: z.int(),
    resets_at: z.string(),
    by_kind: z.record(
      z.string(),
      z.object({ units: z.int(), runs: z.int(), reviews: z.int().describe('Review units billed (places).') }),
    ),
    reviews: z
      .object({ quota: z.int(), used: z.int(), reserved: z.int(), remaining: z.int() })
      .describe('Reviews are metered apart from items: [scrapers] free_reviews_per_month per workspace.'),
    seen_items: z
      .object({ by_kind: z.record(z.string(), z.int()), capacity_per_kind: z.int() })
      .describe(
        'The only_new seen-set: item keys remembered per scraper kind; past the capacity the least recently delivered are forgotten.',
      ),
  })
  .meta({ id: 'WorkspaceUsageResponse' });
const UsageQuery = z.strictObject({
  period: z
    .string()
    .regex(/^\d{4}-(0[1-9]|1[0-2])$/, 'expected YYYY-MM')
    .optional(),
});
const RunListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  before: z.string().max(64).optional(),
});
const AnyRun = runResourceSchema(z.unknown(), 'ScrapeRun');
const RunPage = z
  .object({ request_id: z.string(), runs: z.array(AnyRun), next_before: z.string().nullable() })
  .meta({ id: 'ScrapeRunPage' });
export const RunItemsQuery = z.strictObject({
  cursor: z.string().max(2048).optional().describe('next_cursor of the previous page (signed, bound to this run).'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export const RunItemsPage = z
  .object({
    request_id: z.string(),
    run_id: z.string(),
    status: RunStatus,
    items: z.array(z.unknown()).describe("Items in delivery order (the kind's item schema: ForumItem, PlaceItem)."),
    next_cursor: z
      .string()
      .nullable()
      .describe('Null once the run is final and every item was read; while the run is active, poll with it.'),
  })
  .meta({ id: 'ScrapeRunItemsPage' });
const ExportQuery = z.strictObject({ format: z.enum(EXPORT_FORMATS).default('json') });

export function scraperRoutes(rt: Runtime): RouteSpec[] {
  const maxBytes = rt.loaded.config.server.max_request_bytes;
  const ws = (ctx: AppContext) => ctx.state.workspaceId!;
  const accepted = (ctx: AppContext, body: Record<string, unknown>) => {
    ctx.status = 202;
    ctx.set('Location', `/workspaces/${body.workspace_id as string}/runs/${body.run_id as string}`);
    ctx.body = { request_id: ctx.state.requestId, ...body };
  };
  const perKind = scraperKinds().flatMap((k): RouteSpec[] => {
    const Run = runResourceSchema(k.item, `${k.kind[0]!.toUpperCase()}${k.kind.slice(1)}ScrapeRun`);
    return [
      {
        method: 'post',
        path: `${W}/scrapers/${k.kind}/scrape`,
        operationId: `${k.kind}_scrape`,
        summary: k.title,
        tags: ['scrapers'],
        auth: 'workspace',
        description: `${k.description} Waits for the result (200); a run still going near the request deadline answers 202 with the run to poll. Quota is reserved up front (max_items, or max_places and the reviews they may carry) and settled to what was returned.`,
        body: { contentType: 'application/json', schema: k.request },
        success: { status: 200, schema: Run },
        extraResponses: { 202: { schema: Run, description: 'Still running: poll Location.' } },
        handler: async (ctx) => {
          const request = await readJson(ctx, k.request, maxBytes);
          const { run, final } = await rt.scrapes.submitAndWait(ws(ctx), k.kind, request, ctx.state.signal);
          if (!final) return accepted(ctx, run);
          ctx.body = { request_id: ctx.state.requestId, ...run };
        },
      },
      {
        method: 'post',
        path: `${W}/scrapers/${k.kind}/runs`,
        operationId: `${k.kind}_scrape_async`,
        summary: `${k.title} (async run)`,
        tags: ['scrapers'],
        auth: 'workspace',
        description:
          'Queues the run and answers 202 at once with the run resource (Location); poll it until its status is succeeded, partial or failed.',
        body: { contentType: 'application/json', schema: k.request },
        success: { status: 202, schema: Run },
        handler: async (ctx) => {
          const request = await readJson(ctx, k.request, maxBytes);
          accepted(ctx, await rt.scrapes.view(ws(ctx), (await rt.scrapes.submit(ws(ctx), k.kind, request)).id));
        },
      },
    ];
  });
  return [
    ...perKind,
    {
      method: 'get',
      path: `${W}/runs/{run_id}`,
      operationId: 'get_scrape_run',
      summary: 'Get a scrape run',
      tags: ['scrapers'],
      auth: 'workspace',
      success: { status: 200, schema: AnyRun },
      handler: async (ctx) => {
        ctx.body = { request_id: ctx.state.requestId, ...(await rt.scrapes.view(ws(ctx), ctx.params.run_id!)) };
      },
    },
    {
      method: 'get',
      path: `${W}/runs/{run_id}/items`,
      operationId: 'list_scrape_run_items',
      summary: "Page a scrape run's items",
      tags: ['scrapers'],
      auth: 'workspace',
      description:
        "The run's dataset in delivery order, paged with a signed cursor. 410 run_items_purged after [scrapers] result_retention_hours.",
      query: RunItemsQuery,
      success: { status: 200, schema: RunItemsPage },
      handler: async (ctx) => {
        const q = readQuery(ctx, RunItemsQuery);
        ctx.body = {
          request_id: ctx.state.requestId,
          ...(await rt.scrapes.items(ws(ctx), ctx.params.run_id!, q.cursor, q.limit)),
        };
      },
    },
    {
      method: 'get',
      path: `${W}/runs/{run_id}/export`,
      operationId: 'export_scrape_run_items',
      summary: "Download a scrape run's items (JSON, JSONL, CSV)",
      tags: ['scrapers'],
      auth: 'workspace',
      description:
        "Streams the items as a JSON array, JSON Lines or CSV (one row per item; columns are the item schema's fields, nested objects flattened with dots, arrays as JSON; see docs/scrapers/index.md).",
      query: ExportQuery,
      success: {
        status: 200,
        schema: null,
        media: 'text/csv',
        description: 'The items, as an attachment (application/json, application/x-ndjson or text/csv).',
      },
      handler: async (ctx) => {
        const q = readQuery(ctx, ExportQuery);
        const out = await rt.scrapes.export(ws(ctx), ctx.params.run_id!, q.format);
        ctx.set('Content-Disposition', `attachment; filename="${out.filename}"`);
        ctx.set('Cache-Control', 'no-store');
        ctx.type = out.contentType;
        ctx.body = out.stream;
      },
    },
    {
      method: 'post',
      path: `${W}/runs/{run_id}/cancel`,
      operationId: 'cancel_scrape_run',
      summary: 'Cancel a scrape run',
      tags: ['scrapers'],
      auth: 'workspace',
      description:
        'A queued run ends at once (cancelled, nothing billed); a running one stops at its next upstream request and keeps, and bills, what it delivered. 409 run_not_active for a run that already finished.',
      success: { status: 202, schema: AnyRun },
      handler: async (ctx) => {
        const run = await rt.scrapes.cancel(ws(ctx), ctx.params.run_id!);
        ctx.status = 202;
        ctx.set('Location', `/workspaces/${ws(ctx)}/runs/${run.run_id as string}`);
        ctx.body = { request_id: ctx.state.requestId, ...run };
      },
    },
    {
      method: 'get',
      path: `${W}/runs`,
      operationId: 'list_scrape_runs',
      summary: 'List scrape runs (newest first, without items)',
      tags: ['scrapers'],
      auth: 'workspace',
      query: RunListQuery,
      success: { status: 200, schema: RunPage },
      handler: async (ctx) => {
        const q = readQuery(ctx, RunListQuery);
        ctx.body = { request_id: ctx.state.requestId, ...(await rt.scrapes.list(ws(ctx), q.limit, q.before)) };
      },
    },
    {
      method: 'get',
      path: `${W}/usage`,
      operationId: 'get_workspace_usage',
      summary: 'Workspace usage and quota',
      tags: ['scrapers'],
      auth: 'workspace',
      query: UsageQuery,
      success: { status: 200, schema: UsageResponse },
      handler: async (ctx) => {
        const q = readQuery(ctx, UsageQuery);
        ctx.body = {
          request_id: ctx.state.requestId,
          workspace_id: ws(ctx),
          ...(await rt.scrapes.usage(ws(ctx), q.period ?? billingPeriod(new Date()))),
        };
      },
    },
  ];
}
