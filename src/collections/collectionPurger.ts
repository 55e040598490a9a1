import type { Logger } from 'pino';
import { Errors } from '../contract/errors.js';
import { nextStepSize, type SpaceReclaimer } from '../store/spaceReclaimer.js';
import { CoalescingRun } from '../system/coalescingRun.js';
import type { CollectionStore } from './collectionStore.js';

export interface PurgeOptions {
  /** About how long one batch may hold the database connection. Default 20 ms. */
  batchMs?: number;
}

/**
 * Deletes the persons and faces of collections deleted in the background (CollectionStore.detachCollection)
 * in short transactions between requests, each followed by a pause as long as the batch, so other writers
 * (registrations, the monitors' events) keep their turn. Pending purges survive a restart in
 * collection_purges and resume once the database is known good; afterwards the freed pages are given back
 * (SpaceReclaimer).
 */
export class CollectionPurger {
  private readonly runs = new CoalescingRun(() => this.run());
  private closed = false;
  private checked: Promise<string> = Promise.resolve('ok');
  private failure: unknown = null;
  private rows = 256;
  /** Rows deleted since start, and the longest batch (the bench). */
  purgedRows = 0;
  longestBatchMs = 0;

  constructor(
    private readonly store: CollectionStore,
    private readonly reclaimer: SpaceReclaimer | null,
    private readonly log: Pick<Logger, 'info' | 'error'> | null,
    private readonly opts: PurgeOptions = {},
  ) {}

  /** Starts the purges left by the last run once `checked` resolves 'ok' (the integrity check after a crash). */
  start(checked: Promise<string>): void {
    this.checked = checked;
    if (this.store.pendingPurges().length) void this.wake();
  }

  pending(): { collection_id: string; persons: number; faces: number; requested_at: string }[] {
    return this.store.pendingPurges();
  }

  /** Runs the pending purges (again after the run in progress). Resolves when none is left. */
  wake(): Promise<void> {
    return this.runs.request();
  }

  /** Resolves once the rows of `id` are gone (a create of the same id waits for it: they still carry it). */
  async finish(id: string): Promise<void> {
    const has = () => this.store.pendingPurges().some((p) => p.collection_id === id);
    while (!this.closed && has()) {
      const result = await this.checked;
      if (result !== 'ok') throw Errors.databaseNotVerified(result);
      this.failure = null;
      await this.wake();
      if (this.failure && has()) throw this.failure;
    }
  }

  close(): Promise<void> {
    this.closed = true;
    return this.runs.idle();
  }

  private async run(): Promise<void> {
    if ((await this.checked) !== 'ok') return;
    let purged = 0;
    for (let next = this.store.pendingPurges()[0]; next && !this.closed; next = this.store.pendingPurges()[0]) {
      const id = next.collection_id;
      const t0 = performance.now();
      let n: number;
      try {
        n = this.store.purgeBatch(id, this.rows);
      } catch (e) {
        // A busy or full database: the purge stays recorded and is tried again at the next wake or start.
        this.failure = e;
        this.log?.error({ err: e, collection_id: id }, 'deleting the rows of a deleted collection failed');
        return;
      }
      const elapsed = performance.now() - t0;
      this.longestBatchMs = Math.max(this.longestBatchMs, elapsed);
      purged += n;
      this.purgedRows += n;
      if (n === 0) this.log?.info({ collection_id: id }, 'the rows of a deleted collection are gone');
      else this.rows = nextStepSize(this.rows, elapsed, this.opts.batchMs ?? 20, 16, 50_000);
      await new Promise((r) => setTimeout(r, Math.max(1, elapsed)));
    }
    if (purged > 0 && !this.closed) await this.reclaimer?.request();
  }
}
