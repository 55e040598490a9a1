import type { Logger } from 'pino';
import type { VigilConfig } from '../config/schema.js';
import { Errors, isApiError } from '../contract/errors.js';
import type { CursorCodec } from '../store/cursors.js';
import { datasetExport, type ExportFormat } from './datasetExport.js';
import { scraperKind } from './kinds.js';
import { runResource } from './runView.js';
import type { RunRepository } from './runRepository.js';
import type { RunFinish, RunRow } from './runStore.js';
import { isActive, type ScrapeOutcome, type SourceReportT } from './scrapeResult.js';
import type { UsageSnapshot } from '../workspaces/usageMeter.js';
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
export interface ItemsPage {
  run_id: string;
  status: string;
  items: unknown[];
  next_cursor: string | null;
}

/** A finished run as told to listeners (run webhooks, metrics). */
export interface FinishedRun {
  row: RunRow;
  resource: Record<string, unknown>;
}

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
  private cancelTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    readonly store: RunRepository,
    readonly worker: ScrapeWorker,
    private readonly config: VigilConfig,
    private readonly log: Logger,
    private readonly cursors: CursorCodec,
  ) {}

  /**
   * Re-queues what a previous process left unfinished and starts the retention sweep. In fleet mode
   * these are this box's runs only (the box that accepted a run executes it).
   */
  async start(): Promise<void> {
    void this.purge();
    this.purgeTimer = setInterval(() => void this.purge(), 3600_000);
    this.purgeTimer.unref();
    // A cancel can be asked for on another box (fleet mode) or by another process: the running runs'
    // rows are polled so the worker stops at its next upstream request wherever the cancel came from.
    this.cancelTimer = setInterval(() => void this.pollCancels(), 1000);
    this.cancelTimer.unref();
    // Fleet mode with the database unreachable at start: recovery is retried until it can run.
    for (;;) {
      try {
        await this.recover();
        return;
      } catch (e) {
        if (this.closed) return;
        this.log.warn({ err: e }, 'scrape runs could not be recovered at start (store unavailable); retrying in 5 s');
        await new Promise((r) => setTimeout(r, 5000).unref());
        if (this.closed) return;
      }
    }
  }

  private async recover(): Promise<void> {
    // Fleet mode: runs this box finished in PostgreSQL whose webhook did not reach its local outbox
    // (it stopped in between) are announced now: at least once, with the same webhook-id.
    for (const row of await this.store.unannounced()) {
      this.announce(row);
      await this.store.markAnnounced(row.id);
    }
    const requeued: string[] = [];
    for (const run of await this.store.active()) {
      if (this.queue.includes(run.id) || this.running.has(run.id)) continue;
      // A cancel asked for before the restart is honoured: the run delivered nothing that was kept.
      if (run.cancel_requested_at) {
        await this.finish(run.id, {
          status: 'cancelled',
          items: [],
          result: {
            sources: [],
            warnings: ['The run was cancelled while the service restarted; nothing was delivered.'],
            truncated_by_max_items: false,
            truncated_by_quota: false,
          },
          error: null,
        });
        continue;
      }
      if (run.attempts >= MAX_ATTEMPTS) {
        const e = Errors.runInterrupted(run.attempts);
        await this.finish(run.id, {
          status: 'failed',
          items: [],
          result: null,
          error: { code: e.code, message: e.message, details: e.details },
        });
        continue;
      }
      await this.store.requeue(run.id);
      requeued.push(run.id);
    }
    this.queue.push(...requeued);
    if (requeued.length) this.log.info({ runs: requeued.length }, 'scrape runs re-queued after restart');
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
  async submit(workspaceId: string, kind: string, request: unknown): Promise<RunRow> {
    if (this.closed) throw Errors.shuttingDown();
    const k = scraperKind(kind);
    k.checkConfigured(this.config);
    k.preflight(request);
    const run = await this.store.create({
      workspaceId,
      kind,
      request,
      wanted: k.maxItems(request),
      wantedReviews: k.maxReviews?.(request) ?? 0,
      maxActive: this.config.scrapers.max_queued_runs,
    });
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
  async submitAndWait(
    workspaceId: string,
    kind: string,
    request: unknown,
    signal?: AbortSignal,
  ): Promise<{ run: Record<string, unknown>; final: boolean }> {
    const submitted = await this.submit(workspaceId, kind, request);
    const done = await this.wait(submitted.id, this.syncWaitMs(), signal, { giveUpOnLongWait: true });
    return { run: await this.resource(done ?? (await this.store.byId(submitted.id))!), final: done !== null };
  }

  /** A run of this workspace as REST and MCP show it (404 run_not_found for another workspace's run). */
  async view(workspaceId: string, runId: string, withItems = true): Promise<Record<string, unknown>> {
    return this.resource(await this.store.get(workspaceId, runId), withItems);
  }

  /** A page of this workspace's runs, newest first, without their items. */
  async list(
    workspaceId: string,
    limit: number,
    before?: string,
  ): Promise<{ runs: Record<string, unknown>[]; next_before: string | null }> {
    const rows = await this.store.list(workspaceId, limit + 1, before);
    const page = rows.slice(0, limit);
    const runs: Record<string, unknown>[] = [];
    for (const r of page) runs.push(await this.resource(r, false));
    return { runs, next_before: rows.length > limit ? page.at(-1)!.id : null };
  }

  /**
   * A page of a run's items in delivery order, after `cursor` (signed, bound to this run). Items exist
   * once the run finished; while it is active the page is empty and `next_cursor` says where to go on.
   * 410 run_items_purged past the retention period.
   */
  async items(workspaceId: string, runId: string, cursor: string | undefined, limit: number): Promise<ItemsPage> {
    const run = await this.store.get(workspaceId, runId);
    if (run.result_purged_at) throw Errors.runItemsPurged(runId, run.result_purged_at);
    const scope = `run_items:${run.id}`;
    const after = cursor === undefined ? -1 : Number(this.cursors.decode(cursor, scope));
    const rows = await this.store.items(run.id, after, limit + 1);
    const page = rows.slice(0, limit);
    const more = rows.length > limit || isActive(run.status);
    const last = page.at(-1)?.seq ?? after;
    return {
      run_id: run.id,
      status: run.status,
      items: page.map((r) => r.item),
      next_cursor: more ? this.cursors.encode(scope, String(last)) : null,
    };
  }

  /** A run's items as a streamed JSON array, JSON Lines or CSV document (see datasetExport). */
  async export(workspaceId: string, runId: string, format: ExportFormat): Promise<ReturnType<typeof datasetExport>> {
    const run = await this.store.get(workspaceId, runId);
    if (run.result_purged_at) throw Errors.runItemsPurged(runId, run.result_purged_at);
    return datasetExport(this.store, run, scraperKind(run.kind).item, format);
  }

  /**
   * Cancels a run. A queued one finishes at once (cancelled, nothing billed); a running one is stopped at
   * its next upstream request and finishes as cancelled with what it delivered by then, billed as such.
   * Cancelling a cancelled run is a no-op; a run that finished otherwise is 409 run_not_active.
   */
  async cancel(workspaceId: string, runId: string): Promise<Record<string, unknown>> {
    const run = await this.store.get(workspaceId, runId);
    if (run.status === 'cancelled') return this.resource(run);
    if (!isActive(run.status)) throw Errors.runNotActive(run.id, run.status);
    await this.store.requestCancel(run.id);
    const queued = this.queue.indexOf(run.id);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      await this.finish(run.id, {
        status: 'cancelled',
        items: [],
        result: {
          sources: [],
          warnings: ['The run was cancelled before it started.'],
          truncated_by_max_items: false,
          truncated_by_quota: false,
        },
        error: null,
      });
      this.wake(run.id);
    } else if (this.running.has(run.id)) {
      this.worker.cancel(run.id);
    }
    // Fleet mode: a run executed by another box sees the recorded cancel there (pollCancels).
    this.log.info({ run_id: run.id, workspace_id: workspaceId }, 'scrape run cancel requested');
    return this.resource((await this.store.byId(run.id))!);
  }

  /** A workspace's metered usage in a billing period (YYYY-MM), and the size of its only_new seen-set. */
  async usage(
    workspaceId: string,
    period: string,
  ): Promise<UsageSnapshot & { seen_items: Awaited<ReturnType<RunRepository['seenCounts']>> }> {
    return {
      ...(await this.store.meter.snapshot(workspaceId, period)),
      seen_items: await this.store.seenCounts(workspaceId),
    };
  }

  /** The longest a synchronous scrape holds its request: below the request deadline, so it can answer 202 instead. */
  private syncWaitMs(): number {
    const { server, scrapers } = this.config;
    return Math.max(500, Math.min(scrapers.sync_wait_seconds, server.request_timeout_seconds - 2) * 1000);
  }

  private resource(row: RunRow, withItems = true): Promise<Record<string, unknown>> {
    return runResource(this.store, row, withItems, this.config.scrapers.result_retention_hours);
  }

  /**
   * Resolves with the run once it is final, or null after `ms` (or when `signal` aborts). With
   * `giveUpOnLongWait`, also null as soon as the run waits for an upstream rate limit that ends after
   * the deadline: the caller answers at once with the wait instead of holding the request.
   */
  async wait(
    id: string,
    ms: number,
    signal?: AbortSignal,
    o: { giveUpOnLongWait?: boolean } = {},
  ): Promise<RunRow | null> {
    const deadline = Date.now() + ms;
    const final = async () => {
      const r = await this.store.byId(id).catch(() => null);
      return r && !isActive(r.status) ? r : null;
    };
    const hopeless = async () => {
      if (!o.giveUpOnLongWait) return false;
      const r = await this.store.byId(id).catch(() => null);
      return r?.status === 'waiting_for_rate_limit' && r.resume_at !== null && Date.parse(r.resume_at) > deadline;
    };
    const now = await final();
    if (now || ms <= 0) return now;
    return new Promise<RunRow | null>((resolve) => {
      const set = this.waiters.get(id) ?? new Set();
      this.waiters.set(id, set);
      let settled = false;
      const done = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        set.delete(check);
        void final().then(resolve);
      };
      const check = () => {
        if (this.closed) return done();
        void (async () => {
          if ((await final()) || (await hopeless())) done();
        })();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      set.add(check);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    if (this.cancelTimer) clearInterval(this.cancelTimer);
    await this.worker.close();
    for (const set of this.waiters.values()) for (const w of [...set]) w();
  }

  private wake(id: string): void {
    for (const w of [...(this.waiters.get(id) ?? [])]) w();
  }

  private async purge(): Promise<void> {
    try {
      const n = await this.store.purgeResults(
        new Date(Date.now() - this.config.scrapers.result_retention_hours * 3600_000),
      );
      if (n) this.log.info({ runs: n }, 'purged scraped items past retention');
    } catch (e) {
      this.log.warn({ err: e }, 'the retention sweep of scraped items failed; it runs again within the hour');
    }
  }

  private async pollCancels(): Promise<void> {
    if (this.closed || this.running.size === 0) return;
    try {
      for (const id of await this.store.cancelRequested([...this.running])) this.worker.cancel(id);
    } catch {
      // The store is unreachable (fleet mode): the next poll tries again.
    }
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
    let run: RunRow;
    let request: { only_new?: boolean };
    let seen: string[];
    try {
      run = await this.store.markRunning(id);
      request = JSON.parse(run.request_json) as { only_new?: boolean };
      seen = request.only_new ? await this.store.seenKeys(run.workspace_id, run.kind) : [];
    } catch (e) {
      // Fleet mode with the database unreachable: the run stays queued in PostgreSQL and is re-queued
      // by this box's next start (or the retry below).
      this.log.warn({ err: e, run_id: id }, 'a scrape run could not start (store unavailable); retrying in 5 s');
      if (!this.closed)
        setTimeout(() => {
          if (!this.closed) {
            this.queue.push(id);
            this.pump();
          }
        }, 5000).unref();
      return;
    }
    let finish: RunFinish;
    try {
      const outcome = await this.worker.run({
        id,
        kind: run.kind,
        request,
        limit: run.reserved_units,
        reviewLimit: run.reserved_reviews,
        seen,
        onWait: (resumeAt) => {
          void this.store
            .setWaiting(id, resumeAt)
            .catch(() => undefined)
            .then(() => this.wake(id));
        },
      });
      finish = this.settle(run, outcome);
    } catch (e) {
      if (this.closed) return; // stays "running": re-queued at the next start
      const err = isApiError(e)
        ? { code: e.code, message: e.message, details: e.details }
        : { code: Errors.internalError.code, message: 'The run failed unexpectedly.', details: {} };
      if (!isApiError(e)) this.log.error({ err: e, run_id: id }, 'scrape run failed');
      finish = { status: 'failed', items: [], result: null, error: err };
    }
    let done: RunRow;
    for (let attempt = 0; ; attempt++) {
      try {
        done = await this.finish(id, finish);
        break;
      } catch (e) {
        // Fleet mode: the database went away as the run ended. Billing must stay exact, so the result is
        // kept in memory and the finish retried until it commits (or the box stops: the run is re-run).
        if (this.closed || attempt >= 60 || !(isApiError(e) && e.code === 'store_unavailable')) {
          this.log.error(
            { err: e, run_id: id },
            'a finished scrape run could not be stored; it is re-run at the next start',
          );
          return;
        }
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
    this.log.info(
      {
        run_id: id,
        workspace_id: done.workspace_id,
        kind: done.kind,
        status: done.status,
        items: done.item_count,
        billed: done.billed_units,
      },
      'scrape run finished',
    );
  }

  private announce(row: RunRow): void {
    for (const l of this.recordedListeners) {
      try {
        l(row);
      } catch (e) {
        this.log.error({ err: e, run_id: row.id }, 'a run-recorded listener failed');
      }
    }
  }

  private async finish(id: string, f: RunFinish): Promise<RunRow> {
    let announced = false;
    const done = await this.store.finish(id, f, (row) => {
      this.announce(row);
      announced = true;
    });
    if (announced)
      await this.store
        .markAnnounced(id)
        .catch((e: unknown) =>
          this.log.warn(
            { err: e, run_id: id },
            'the run webhook was queued but not marked; it may be sent again at the next start',
          ),
        );
    if (!isActive(done.status)) {
      const resource = await this.resource(done, false).catch(() => ({ run_id: done.id }) as Record<string, unknown>);
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
    const items = outcome.items
      .flatMap((item) => {
        const key = k.itemKey(item);
        if (seen.has(key)) return [];
        seen.add(key);
        return [{ key, item }];
      })
      .slice(0, run.reserved_units);
    const wanted = k.maxItems(JSON.parse(run.request_json));
    const capped = run.reserved_units < wanted;
    const full = items.length >= run.reserved_units;
    const failed = outcome.sources.filter((s) => s.status === 'failed');
    const problems = outcome.sources.some((s) => (s.problems?.length ?? 0) > 0);
    const result: RunResult = {
      sources: outcome.sources,
      warnings: outcome.warnings,
      truncated_by_max_items: full && !capped && outcome.hitLimit,
      truncated_by_quota: full && capped && outcome.hitLimit,
    };
    if (result.truncated_by_quota)
      result.warnings = [
        ...result.warnings,
        `The monthly quota allowed ${run.reserved_units} of the ${wanted} requested items; the result was cut there.`,
      ];
    const anyOk = outcome.sources.some((s) => s.status === 'ok');
    // Only reviews inside returned items were delivered, so only those are billed.
    const reviewCount = k.reviewCount ? items.reduce((s: number, it) => s + k.reviewCount!(it.item), 0) : 0;
    // A cancel that reached the worker after the run had finished changes nothing: it completed.
    if (outcome.cancelled) return { status: 'cancelled', items, reviewCount, result, error: null };
    if (failed.length === 0 && !problems) return { status: 'succeeded', items, reviewCount, result, error: null };
    if (items.length > 0 || anyOk) return { status: 'partial', items, reviewCount, result, error: null };
    const first = failed[0]!.problem!;
    return {
      status: 'failed',
      items: [],
      result,
      error: {
        code: first.code,
        message: `Every source failed; the first: ${first.message}`,
        details: { sources: failed.length },
      },
    };
  }
}
