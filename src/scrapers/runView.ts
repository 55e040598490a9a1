import type { RunRow, RunStore } from './runStore.js';
import type { RunResult } from './runService.js';

/** The API/MCP shape of a run; `withItems` false for lists. */
export function runResource(store: RunStore, row: RunRow, withItems = true): Record<string, unknown> {
  const final = row.status !== 'queued' && row.status !== 'running';
  const out: Record<string, unknown> = {
    run_id: row.id, workspace_id: row.workspace_id, kind: row.kind, status: row.status,
    created_at: row.created_at, started_at: row.started_at, finished_at: row.finished_at, item_count: row.item_count,
  };
  if (!final) return out;
  const result = row.result_json ? (JSON.parse(row.result_json) as RunResult) : null;
  if (result) {
    if (withItems) out.items = result.items;
    Object.assign(out, { sources: result.sources, warnings: result.warnings, truncated_by_max_items: result.truncated_by_max_items, truncated_by_quota: result.truncated_by_quota });
  }
  if (row.result_purged_at) out.result_purged = true;
  const usage = store.meter.snapshot(row.workspace_id, row.period);
  out.billing = {
    billed_units: row.billed_units, billed_reviews: row.billed_reviews, period: row.period, quota: usage.quota, used: usage.used, remaining: usage.remaining,
    reviews: { quota: usage.reviews.quota, used: usage.reviews.used, remaining: usage.reviews.remaining },
  };
  out.error = row.error_json ? JSON.parse(row.error_json) : null;
  return out;
}
