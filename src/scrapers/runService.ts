import type { Logger } from 'pino';
import type { VigilConfig } from '../config/schema.js';
import { Errors, isApiError } from '../contract/errors.js';
import type { CursorCodec } from '../store/cursors.js';
import { datasetExport, type ExportFormat } from './datasetExport.js';
import { scraperKind } from './kinds.js';
import { runResource } from './runView.js';
import type { RunFinish, RunRow, RunStore } from './runStore.js';
import { isActive, type ScrapeOutcome, type SourceReportT } from './scrapeResult.js';
import type { ScrapeWorker } from './scrapeWorker.js';

/** A run is re-queued after a restart at most this many times, then failed (a run that kills the daemon must not loop). */
const MAX_ATTEMPTS = 3;

export interface RunResult {
  sources: SourceReportT[];
  warnings: string[];
  truncated_by_max_items: boolean;
  truncated_by_quota: boolean;
}

/** A run's items page: `next_cursor` is null once the run is final and every item was read. */
export interface ItemsPage { run_id: string; status: string; items: unknown[]; next_cursor: string | null }

/** A finished run as told to listeners (run webhooks, metrics). */
export interface FinishedRun { row: RunRow; resource: Record<string, unknown> }

/**
 * The scrape queue: accepts runs (quota reserved, row written) for any registered kind, runs them in
 * the low-priority worker a few at a time, and finalises and bills each in one transaction. Queued and
 * running runs found at startup (the daemon stopped or crashed) are queued again: scrapes only read
 * the upstream, and an unfinished run billed nothing, so running it again is safe. REST and MCP share
 * every entry point here (submitAndWait, view, list, items, export, cancel, usage).
 */
export class ScrapeRunService {
  private readonly queue: string[] = [];
  private readonly running = new Set<string>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly finishedListeners: ((run: FinishedRun) => void)[] = [];
  private readonly recordedListeners: ((row: RunRow) => void)[] = [];
  private purgeTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(readonly store: RunStore, readonly worker: ScrapeWorker, private readonly config: VigilConfig, private readonly log: Logger, private readonly cursors: CursorCodec) {}

  /** Re-queues what a previous process left unfinished and starts the retention sweep. */
  start(): void {
    for (const run of this.store.active()) {
      // A cancel asked for before the restart is honoured: the run delivered nothing that was kept.
      if (run.cancel_requested_at) {
        this.finish(run.id, { status: 'cancelled', items: [], result: { sources: [], warnings: ['The run was cancelled while the service restarted; nothing was delivered.'], truncated_by_max_items: false, truncated_by_quota: false }, error: null });
        continue;
      }
      if (run.attempts >= MAX_ATTEMPTS) {
        const e = Errors.runInterrupted(run.attempts);
        this.finish(run.id, { status: 'failed', items: [], result: null, error: { code: e.code, message: e.message, details: e.details } });
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

  /** Runs waiting for a worker, and runs in a worker now (metrics). */
  depth(): { queued: number; running: number } {
    return { queued: this.queue.length, running: this.running.size };
  }

  /** Called with every run that finished (any final status), after it was stored and billed. */
  onFinished(listener: (run: FinishedRun) => void): void {
    this.finishedListeners.push(listener);
  }

  /**
   * Called with every run that reached a final status, synchronously inside the transaction that
   * stores and bills it: what the listener writes to the same database (the run webhooks' outbox rows)
   * is committed together with the run, so a finished run is never without its webhook. A listener's
   * throw is logged and does not undo the run.
   */
  onRecorded(listener: (row: RunRow) => void): void {
    this.recordedListeners.push(listener);
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
   * before the request deadline, or less when the run waits for an upstream rate limit that outlasts
   * the call. `final` false means the run is still going (REST answers 202, MCP returns its status);
   * the run resource is returned either way.
   */
  async submitAndWait(workspaceId: string, kind: string, request: unknown, signal?: AbortSignal): Promise<{ run: Record<string, unknown>; final: boolean }> {
    const submitted = this.submit(workspaceId, kind, request);
    const done = await this.wait(submitted.id, this.syncWaitMs(), signal, { giveUpOnLongWait: true });
    return { run: this.resource(done ?? this.store.byId(submitted.id)!), final: done !== null };
  }

  /** A run of this workspace as REST and MCP show it (404 run_not_found for another workspace's run). */
  view(workspaceId: string, runId: string, withItems = true): Record<string, unknown> {
    return this.resource(this.store.get(workspaceId, runId), withItems);
  }

  /** A page of this workspace's runs, newest first, without their items. */
  list(workspaceId: string, limit: number, before?: string): { runs: Record<string, unknown>[]; next_before: string | null } {
    const rows = this.store.list(workspaceId, limit + 1, before);
    const page = rows.slice(0, limit);
    return { runs: page.map((r) => this.resource(r, false)), next_before: rows.length > limit ? page.at(-1)!.id : null };
  }

  /**
   * A page of a run's items in delivery order, after `cursor` (signed, bound to this run). Items exist
   * once the run finished; while it is active the page is empty and `next_cursor` says where to go on.
   * 410 run_items_purged past the retention period.
   */
  items(workspaceId: string, runId: string, cursor: string | undefined, limit: number): ItemsPage {
    const run = this.store.get(workspaceId, runId);
    if (run.result_purged_at) throw Errors.runItemsPurged(runId, run.result_purged_at);
    const scope = `run_items:${run.id}`;
    const after = cursor === undefined ? -1 : Number(this.cursors.decode(cursor, scope));
    const rows = this.store.items(run.id, after, limit + 1);
    const page = rows.slice(0, limit);
    const more = rows.length > limit || isActive(run.status);
    const last = page.at(-1)?.seq ?? after;
    return { run_id: run.id, status: run.status, items: page.map((r) => r.item), next_cursor: more ? this.cursors.encode(scope, String(last)) : null };
  }

  /** A run's items as a streamed JSON array, JSON Lines or CSV document (see datasetExport). */
  export(workspaceId: string, runId: string, format: ExportFormat): ReturnType<typeof datasetExport> {
    const run = this.store.get(workspaceId, runId);
    if (run.result_purged_at) throw Errors.runItemsPurged(runId, run.result_purged_at);
    return datasetExport(this.store, run, scraperKind(run.kind).item, format);
  }

  /**
   * Cancels a run. A queued one finishes at once (cancelled, nothing billed); a running one is stopped at
   * its next upstream request and finishes as cancelled with what it delivered by then, billed as such.
   * Cancelling a cancelled run is a no-op; a run that finished otherwise is 409 run_not_active.
   */
  cancel(workspaceId: string, runId: string): Record<string, unknown> {
    const run = this.store.get(workspaceId, runId);
    if (run.status === 'cancelled') return this.resource(run);
    if (!isActive(run.status)) throw Errors.runNotActive(run.id, run.status);
    this.store.requestCancel(run.id);
    const queued = this.queue.indexOf(run.id);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      this.finish(run.id, { status: 'cancelled', items: [], result: { sources: [], warnings: ['The run was cancelled before it started.'], truncated_by_max_items: false, truncated_by_quota: false }, error: null });
      this.wake(run.id);
    } else {
      this.worker.cancel(run.id);
    }
    this.log.info({ run_id: run.id, workspace_id: workspaceId }, 'scrape run cancel requested');
    return this.resource(this.store.byId(run.id)!);
  }

  /** A workspace's metered usage in a billing period (YYYY-MM), and the size of its only_new seen-set. */
  usage(workspaceId: string, period: string): ReturnType<RunStore['meter']['snapshot']> & { seen_items: ReturnType<RunStore['seenCounts']> } {
    return { ...this.store.meter.snapshot(workspaceId, period), seen_items: this.store.seenCounts(workspaceId) };
  }

  /** The longest a synchronous scrape holds its request: below the request deadline, so it can answer 202 instead. */
  private syncWaitMs(): number {
    const { server, scrapers } = this.config;
    return Math.max(500, Math.min(scrapers.sync_wait_seconds, server.request_timeout_seconds - 2) * 1000);
  }

  private resource(row: RunRow, withItems = true): Record<string, unknown> {
    return runResource(this.store, row, withItems, this.config.scrapers.result_retention_hours);
  }

  /**
   * Resolves with the run once it is final, or null after `ms` (or when `signal` aborts). With
   * `giveUpOnLongWait`, also null as soon as the run waits for an upstream rate limit that ends after
   * the deadline: the caller answers at once with the wait instead of holding the request.
   */
  async wait(id: string, ms: number, signal?: AbortSignal, o: { giveUpOnLongWait?: boolean } = {}): Promise<RunRow | null> {
    const deadline = Date.now() + ms;
    const final = () => { const r = this.store.byId(id); return r && !isActive(r.status) ? r : null; };
    const hopeless = () => {
      if (!o.giveUpOnLongWait) return false;
      const r = this.store.byId(id);
      return r?.status === 'waiting_for_rate_limit' && r.resume_at !== null && Date.parse(r.resume_at) > deadline;
    };
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
      const check = () => { if (this.closed || final() || hopeless()) done(); };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      set.add(check);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    await this.worker.close();
    for (const set of this.waiters.values()) for (const w of [...set]) w();
  }

  private wake(id: string): void {
    for (const w of [...(this.waiters.get(id) ?? [])]) w();
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
        this.wake(id);
        this.waiters.delete(id);
        this.pump();
      });
    }
  }

  private async execute(id: string): Promise<void> {
    const run = this.store.markRunning(id);
    const request = JSON.parse(run.request_json) as { only_new?: boolean };
    let finish: RunFinish;
    try {
      const outcome = await this.worker.run({
        id, kind: run.kind, request, limit: run.reserved_units, reviewLimit: run.reserved_reviews,
        seen: request.only_new ? this.store.seenKeys(run.workspace_id, run.kind) : [],
        onWait: (resumeAt) => {
          this.store.setWaiting(id, resumeAt);
          this.wake(id);
        },
      });
      finish = this.settle(run, outcome);
    } catch (e) {
      if (this.closed) return; // stays "running": re-queued at the next start
      const err = isApiError(e) ? { code: e.code, message: e.message, details: e.details } : { code: Errors.internalError.code, message: 'The run failed unexpectedly.', details: {} };
      if (!isApiError(e)) this.log.error({ err: e, run_id: id }, 'scrape run failed');
      finish = { status: 'failed', items: [], result: null, error: err };
    }
    const done = this.finish(id, finish);
    this.log.info({ run_id: id, workspace_id: done.workspace_id, kind: done.kind, status: done.status, items: done.item_count, billed: done.billed_units }, 'scrape run finished');
  }

  private finish(id: string, f: RunFinish): RunRow {
    const done = this.store.finish(id, f, (row) => {
      for (const l of this.recordedListeners) {
        try {
          l(row);
        } catch (e) {
          this.log.error({ err: e, run_id: id }, 'a run-recorded listener failed');
        }
      }
    });
    if (!isActive(done.status)) {
      const resource = this.resource(done, false);
      for (const l of this.finishedListeners) {
        try {
          l({ row: done, resource });
        } catch (e) {
          this.log.error({ err: e, run_id: id }, 'a run-finished listener failed');
        }
      }
    }
    return done;
  }

  /**
   * De-duplicates (again: billing must not trust the runner), caps at the reservation, and decides the
   * status: a cancel wins; a failed source or any problem makes the run partial when something was
   * delivered, failed when every source failed and nothing was.
   */
  private settle(run: RunRow, outcome: ScrapeOutcome): RunFinish {
    const k = scraperKind(run.kind);
    const seen = new Set<string>();
    const items = outcome.items.flatMap((item) => { const key = k.itemKey(item); if (seen.has(key)) return []; seen.add(key); return [{ key, item }]; }).slice(0, run.reserved_units);
    const wanted = k.maxItems(JSON.parse(run.request_json));
    const capped = run.reserved_units < wanted;
    const full = items.length >= run.reserved_units;
    const failed = outcome.sources.filter((s) => s.status === 'failed');
    const problems = outcome.sources.some((s) => (s.problems?.length ?? 0) > 0);
    const result: RunResult = {
      sources: outcome.sources, warnings: outcome.warnings,
      truncated_by_max_items: full && !capped && outcome.hitLimit, truncated_by_quota: full && capped && outcome.hitLimit,
    };
    if (result.truncated_by_quota) result.warnings = [...result.warnings, `The monthly quota allowed ${run.reserved_units} of the ${wanted} requested items; the result was cut there.`];
    const anyOk = outcome.sources.some((s) => s.status === 'ok');
    // Only reviews inside returned items were delivered, so only those are billed.
    const reviewCount = k.reviewCount ? items.reduce((s: number, it) => s + k.reviewCount!(it.item), 0) : 0;
    // A cancel that reached the worker after the run had finished changes nothing: it completed.
    if (outcome.cancelled) return { status: 'cancelled', items, reviewCount, result, error: null };
    if (failed.length === 0 && !problems) return { status: 'succeeded', items, reviewCount, result, error: null };
    if (items.length > 0 || anyOk) return { status: 'partial', items, reviewCount, result, error: null };
    const first = failed[0]!.problem!;
    return { status: 'failed', items: [], result, error: { code: first.code, message: `Every source failed; the first: ${first.message}`, details: { sources: failed.length } } };
  }
}
