import type { UsageReader } from '../workspaces/repository.js';
import type { RunFinish, RunRow, StoredItem } from './runStore.js';

/**
 * Scrape runs, their items (the dataset), the only_new seen-set and the metering they reserve and bill,
 * whatever engine holds them: SQLite (RunStore, one box) or PostgreSQL (PgRunStore, fleet mode: a run
 * accepted by one box can be read, paged, exported and cancelled on any box, and usage is fleet-wide).
 * The run service only knows this interface. Every write is committed before its promise resolves.
 *
 * A run is executed by the box that accepted it: active() and activeSummary() are that box's runs (all
 * runs in SQLite mode), what it re-queues after a restart and what its metrics show.
 */
export interface RunRepository {
  readonly meter: UsageReader;
  /** Reserves quota (atomically: concurrent creates, on any box, never overspend) and stores the queued run. */
  create(input: {
    workspaceId: string;
    kind: string;
    request: unknown;
    wanted: number;
    wantedReviews?: number;
    maxActive: number;
    now?: Date;
  }): Promise<RunRow>;
  markRunning(id: string): Promise<RunRow>;
  setWaiting(id: string, resumeAt: Date | null): Promise<void>;
  requestCancel(id: string): Promise<void>;
  requeue(id: string): Promise<void>;
  /**
   * Finalises a run (items stored, billed, keys remembered) in one transaction. `recorded` is called
   * once with the final row when this call finalised it: inside the SQLite transaction in sqlite mode,
   * right after the PostgreSQL commit in fleet mode (it writes to the box's local outbox).
   */
  finish(id: string, f: RunFinish, recorded?: (row: RunRow) => void): Promise<RunRow>;
  seenKeys(workspaceId: string, kind: string): Promise<string[]>;
  seenCounts(workspaceId: string): Promise<{ by_kind: Record<string, number>; capacity_per_kind: number }>;
  items(runId: string, afterSeq: number, limit: number): Promise<StoredItem[]>;
  itemJsonBatches(runId: string, batch?: number): AsyncGenerator<string[]>;
  byId(id: string): Promise<RunRow | null>;
  get(workspaceId: string, id: string): Promise<RunRow>;
  list(workspaceId: string, limit: number, before?: string): Promise<RunRow[]>;
  /**
   * This box's finished runs whose webhook is not yet in its local outbox (fleet mode: the box stopped
   * between the PostgreSQL commit and the outbox write); always empty in SQLite mode, where both are
   * one transaction.
   */
  unannounced(): Promise<RunRow[]>;
  /** Records that the run's webhook is in this box's outbox. */
  markAnnounced(id: string): Promise<void>;
  /** Ids of this box's active runs with a cancel asked for (possibly on another box). */
  cancelRequested(ids: string[]): Promise<string[]>;
  active(): Promise<RunRow[]>;
  activeSummary(): Promise<{
    queued: number;
    running: number;
    waiting_for_rate_limit: number;
    next_resume_at: string | null;
  }>;
  purgeResults(before: Date): Promise<number>;
}
