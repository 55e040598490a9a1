import type { Logger } from 'pino';
import type { VigilConfig } from '../config/schema.js';
import { Errors, isApiError } from '../contract/errors.js';
import { scraperKind } from './kinds.js';
import { runResource } from './runView.js';
import type { RunFinish, RunRow, RunStore } from './runStore.js';
import type { ScrapeOutcome, SourceReportT } from './scrapeResult.js';
import type { ScrapeWorker } from './scrapeWorker.js';

/** A run is re-queued after a restart at most this many times, then failed (a run that kills the daemon must not loop). */
const MAX_ATTEMPTS = 3;

export interface RunResult {
  items: unknown[];
  sources: SourceReportT[];
  warnings: string[];
  truncated_by_max_items: boolean;
  truncated_by_quota: boolean;
}

/**
 * The scrape queue: accepts runs (quota reserved, row written) for any registered kind, runs them in
 * the low-priority worker a few at a time, and finalises and bills each in one transaction. Queued and
 * running runs found at startup (the daemon stopped or crashed) are queued again: scrapes only read
 * the upstream, and an unfinished run billed nothing, so running it again is safe.
 */
export class ScrapeRunService {
  private readonly queue: string[] = [];
  private readonly running = new Set<string>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private purgeTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(readonly store: RunStore, readonly worker: ScrapeWorker, private readonly config: VigilConfig, private readonly log: Logger) {}

  /** Re-queues what a previous process left unfinished and starts the retention sweep. */
  start(): void {
    for (const run of this.store.active()) {
      if (run.attempts >= MAX_ATTEMPTS) {
        const e = Errors.runInterrupted(run.attempts);
        this.store.finish(run.id, { status: 'failed', itemCount: 0, result: null, error: { code: e.code, message: e.message, details: e.details } });
        continue;
      }
      this.store.requeue(run.id);
      this.queue.push(run.id);
    }
    if (this.queue.length) this.log.info({ runs: this.queue.length }, 'scrape runs re-queued after restart');
    this.purge();
    this.purgeTimer = setInterval(() => this.purge(), 3600_000);
    this.purgeTimer.unref();
    this.pump();
  }

  /** Validates, reserves quota and queues a run. The row exists before this returns. */
  submit(workspaceId: string, kind: string, request: unknown): RunRow {
    if (this.closed) throw Errors.shuttingDown();
    const k = scraperKind(kind);
    k.checkConfigured(this.config);
    k.preflight(request);
    const run = this.store.create({ workspaceId, kind, request, wanted: k.maxItems(request), wantedReviews: k.maxReviews?.(request) ?? 0, maxActive: this.config.scrapers.max_queued_runs });
    this.queue.push(run.id);
    this.pump();
    return run;
  }

  /**
   * The one synchronous scrape of REST and MCP: submits the run and waits for it, at most until shortly
   * before the request deadline. `final` false means the run is still going (REST answers 202, MCP
   * returns status "running"); the run resource is returned either way.
   */
  async submitAndWait(workspaceId: string, kind: string, request: unknown, signal?: AbortSignal): Promise<{ run: Record<string, unknown>; final: boolean }> {
    const submitted = this.submit(workspaceId, kind, request);
    const done = await this.wait(submitted.id, this.syncWaitMs(), signal);
    return { run: runResource(this.store, done ?? this.store.byId(submitted.id)!), final: done !== null };
  }

  /** A run of this workspace as REST and MCP show it (404 run_not_found for another workspace's run). */
  view(workspaceId: string, runId: string, withItems = true): Record<string, unknown> {
    return runResource(this.store, this.store.get(workspaceId, runId), withItems);
  }

  /** A page of this workspace's runs, newest first, without their items. */
  list(workspaceId: string, limit: number, before?: string): { runs: Record<string, unknown>[]; next_before: string | null } {
    const rows = this.store.list(workspaceId, limit + 1, before);
    const page = rows.slice(0, limit);
    return { runs: page.map((r) => runResource(this.store, r, false)), next_before: rows.length > limit ? page.at(-1)!.id : null };
  }

  /** A workspace's metered usage in a billing period (YYYY-MM). */
  usage(workspaceId: string, period: string): ReturnType<RunStore['meter']['snapshot']> {
    return this.store.meter.snapshot(workspaceId, period);
  }

  /** The longest a synchronous scrape holds its request: below the request deadline, so it can answer 202 instead. */
  private syncWaitMs(): number {
    const { server, scrapers } = this.config;
    return Math.max(500, Math.min(scrapers.sync_wait_seconds, server.request_timeout_seconds - 2) * 1000);
  }

  /** Resolves with the run once it is final, or null after `ms` (or when `signal` aborts). */
  async wait(id: string, ms: number, signal?: AbortSignal): Promise<RunRow | null> {
    const final = () => { const r = this.store.byId(id); return r && r.status !== 'queued' && r.status !== 'running' ? r : null; };
    const now = final();
    if (now || ms <= 0) return now;
    return new Promise<RunRow | null>((resolve) => {
      const set = this.waiters.get(id) ?? new Set();
      this.waiters.set(id, set);
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        set.delete(done);
        resolve(final());
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      set.add(done);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    await this.worker.close();
    for (const set of this.waiters.values()) for (const w of set) w();
  }

  private purge(): void {
    const n = this.store.purgeResults(new Date(Date.now() - this.config.scrapers.result_retention_hours * 3600_000));
    if (n) this.log.info({ runs: n }, 'purged scraped items past retention');
  }

  private pump(): void {
    while (!this.closed && this.running.size < this.config.scrapers.max_concurrent_runs && this.queue.length) {
      const id = this.queue.shift()!;
      this.running.add(id);
      void this.execute(id).finally(() => {
        this.running.delete(id);
        for (const w of this.waiters.get(id) ?? []) w();
        this.waiters.delete(id);
        this.pump();
      });
    }
  }

  private async execute(id: string): Promise<void> {
    const run = this.store.markRunning(id);
    let finish: RunFinish;
    try {
      const outcome = await this.worker.run(id, run.kind, JSON.parse(run.request_json), run.reserved_units, run.reserved_reviews);
      finish = this.settle(run, outcome);
    } catch (e) {
      if (this.closed) return; // stays "running": re-queued at the next start
      const err = isApiError(e) ? { code: e.code, message: e.message, details: e.details } : { code: Errors.internalError.code, message: 'The run failed unexpectedly.', details: {} };
      if (!isApiError(e)) this.log.error({ err: e, run_id: id }, 'scrape run failed');
      finish = { status: 'failed', itemCount: 0, result: null, error: err };
    }
    const done = this.store.finish(id, finish);
    this.log.info({ run_id: id, workspace_id: done.workspace_id, kind: done.kind, status: done.status, items: done.item_count, billed: done.billed_units }, 'scrape run finished');
  }

  /** De-duplicates (again: billing must not trust the runner), caps at the reservation, and decides the status. */
  private settle(run: RunRow, outcome: ScrapeOutcome): RunFinish {
    const k = scraperKind(run.kind);
    const seen = new Set<string>();
    const items = outcome.items.filter((it) => { const key = k.itemKey(it); if (seen.has(key)) return false; seen.add(key); return true; }).slice(0, run.reserved_units);
    const wanted = k.maxItems(JSON.parse(run.request_json));
    const capped = run.reserved_units < wanted;
    const full = items.length >= run.reserved_units;
    const failed = outcome.sources.filter((s) => s.status === 'failed');
    const result: RunResult = {
      items, sources: outcome.sources, warnings: outcome.warnings,
      truncated_by_max_items: full && !capped && outcome.hitLimit, truncated_by_quota: full && capped && outcome.hitLimit,
    };
    if (result.truncated_by_quota) result.warnings = [...result.warnings, `The monthly quota allowed ${run.reserved_units} of the ${wanted} requested items; the result was cut there.`];
    const anyOk = outcome.sources.some((s) => s.status === 'ok');
    // Only reviews inside returned items were delivered, so only those are billed.
    const reviewCount = k.reviewCount ? items.reduce((s: number, it) => s + k.reviewCount!(it), 0) : 0;
    if (failed.length === 0) return { status: 'succeeded', itemCount: items.length, reviewCount, result, error: null };
    if (items.length > 0 || anyOk) return { status: 'partial', itemCount: items.length, reviewCount, result, error: null };
    const first = failed[0]!.problem!;
    return { status: 'failed', itemCount: 0, result, error: { code: first.code, message: `Every source failed; the first: ${first.message}`, details: { sources: failed.length } } };
  }
}
