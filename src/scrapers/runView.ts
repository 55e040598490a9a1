import type { RunRepository } from './runRepository.js';
import type { RunRow } from './runStore.js';
import type { RunResult } from './runService.js';
import { isActive } from './scrapeResult.js';

/** The API/MCP shape of a run; `withItems` false for lists. `retentionHours` dates when its items go. */
export async function runResource(
  store: RunRepository,
  row: RunRow,
  withItems = true,
  retentionHours?: number,
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {
    run_id: row.id,
    workspace_id: row.workspace_id,
    kind: row.kind,
    status: row.status,
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
    item_count: row.item_count,
  };
  if (isActive(row.status)) {
    out.resume_at = row.resume_at;
    if (row.cancel_requested_at) out.cancel_requested = true;
    return out;
  }
  const result = row.result_json ? (JSON.parse(row.result_json) as RunResult) : null;
  if (result) {
    if (withItems && !row.result_purged_at)
      out.items = (await store.items(row.id, -1, Number.MAX_SAFE_INTEGER)).map((r) => r.item);
    Object.assign(out, {
      sources: result.sources,
      warnings: result.warnings,
      truncated_by_max_items: result.truncated_by_max_items,
      truncated_by_quota: result.truncated_by_quota,
    });
  }
  if (row.result_purged_at) out.result_purged = true;
  else if (retentionHours !== undefined && row.finished_at)
    out.items_expire_at = new Date(Date.parse(row.finished_at) + retentionHours * 3600_000).toISOString();
  const usage = await store.meter.snapshot(row.workspace_id, row.period);
  out.billing = {
    billed_units: row.billed_units,
    billed_reviews: row.billed_reviews,
    period: row.period,
    quota: usage.quota,
    used: usage.used,
    remaining: usage.remaining,
    reviews: { quota: usage.reviews.quota, used: usage.reviews.used, remaining: usage.reviews.remaining },
  };
  out.error = row.error_json ? JSON.parse(row.error_json) : null;
  return out;
}
