import { workspaceWebhookScope, type ScrapeRunWebhookDataT } from '../contract/webhooks.js';
import type { WebhookOutbox } from '../webhooks/webhookOutbox.js';
import type { RunResult } from './runService.js';
import type { RunRow } from './runStore.js';
import { isActive } from './scrapeResult.js';

/** The `data` of a run's scrape.run.<status> message, from its final row (no items: read them with the links). */
export function runWebhookData(row: RunRow): ScrapeRunWebhookDataT {
  const result = row.result_json ? (JSON.parse(row.result_json) as RunResult) : null;
  const sources = result?.sources ?? [];
  const failed = sources.filter((s) => s.status === 'failed').length;
  const problems = failed + sources.reduce((n, s) => n + (s.problems?.length ?? 0), 0);
  const run = `/workspaces/${row.workspace_id}/runs/${row.id}`;
  return {
    run_id: row.id,
    workspace_id: row.workspace_id,
    kind: row.kind,
    status: row.status as ScrapeRunWebhookDataT['status'],
    counts: {
      items: row.item_count,
      billed_units: row.billed_units,
      billed_reviews: row.billed_reviews,
      problems,
      sources: sources.length,
      failed_sources: failed,
    },
    created_at: row.created_at,
    started_at: row.started_at,
    finished_at: row.finished_at,
    error: row.error_json ? (JSON.parse(row.error_json) as ScrapeRunWebhookDataT['error']) : null,
    links: { run, items: `${run}/items`, export: `${run}/export` },
  };
}

/**
 * Run webhooks: every finished run becomes one `scrape.run.<status>` message for the endpoints of its
 * own workspace (outbox scope `workspace:<id>`), written inside the run's final transaction and then
 * delivered, signed and retried by the shared WebhookOutbox exactly like the monitor events.
 * `webhook-id` is `msg_<run id>`: stable across retries and endpoints, so receivers can de-duplicate.
 */
export class RunWebhooks {
  constructor(private readonly outbox: WebhookOutbox) {}

  recorded(row: RunRow): void {
    if (isActive(row.status)) return;
    this.outbox.enqueue({
      scope: workspaceWebhookScope(row.workspace_id),
      type: `scrape.run.${row.status}`,
      tags: { kind: row.kind },
      data: runWebhookData(row),
      messageId: `msg_${row.id}`,
      ...(row.finished_at ? { occurredAt: row.finished_at } : {}),
    });
  }
}
