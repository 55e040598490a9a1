import type { Logger } from 'pino';
import { isConnectionError } from '../store/postgres.js';
import type { HistoryOutput } from './eventHistory.js';
import type { HistoryStore, StoredEvent } from './historyStore.js';
import type { PgHistory } from './pgHistory.js';

export interface ForwarderOptions {
  boxId: string;
  /** A catch-up pass at least this often (a committed batch wakes it sooner). */
  intervalMs: number;
  batch?: number;
  /** A row whose picture is still being written waits this long before it is copied without it (then updated). */
  pendingWaitMs?: number;
  retention: { maxAgeDays: number; maxEvents: number; intervalMs: number };
}

export interface ForwarderStatus {
  database: 'connected' | 'disconnected';
  since: string;
  last_error: string | null;
  /** The highest local seq PostgreSQL has (with every row before it). */
  forwarded_seq: number;
  /** Local rows not yet in PostgreSQL. */
  backlog: number;
  /** Rows this process copied (inserted; repeats after a crash are not counted). */
  forwarded: number;
  last_forward_at: string | null;
  /** The fleet history as last read (every few seconds). */
  fleet: {
    events: number;
    oldest_at: string | null;
    newest_at: string | null;
    boxes: { box_id: string; events: number; newest_at: string | null }[];
  } | null;
  last_retention: { at: string; by_age: number; by_count: number } | null;
}

/**
 * Fleet mode: copies this box's event history into PostgreSQL. The local SQLite history stays the
 * durable queue (a box that loses the database keeps recording there); this copies rows after
 * `event_forward.forwarded_seq`, in order, in batches, with `ON CONFLICT (id) DO NOTHING` (a crash
 * between PostgreSQL's commit and the local cursor update repeats a batch harmlessly), then moves the
 * cursor. After an outage it catches up from the cursor: nothing acknowledged is lost. One chain runs
 * every PostgreSQL step (and the history API's deletes), so a delete cannot race a copy of the same row.
 */
export class EventForwarder implements HistoryOutput {
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private kickTimer: NodeJS.Timeout | null = null;
  private closed = false;
  private lastStats = 0;
  private lastRetention = 0;
  /** Rows copied while their picture was still pending: updated once it settles. */
  private readonly pendingCopied = new Set<string>();
  /** Whether this process has read back the rows an earlier one left pending in the fleet history. */
  private recovered = false;
  private readonly state: ForwarderStatus = {
    database: 'disconnected',
    since: new Date().toISOString(),
    last_error: null,
    forwarded_seq: 0,
    backlog: 0,
    forwarded: 0,
    last_forward_at: null,
    fleet: null,
    last_retention: null,
  };
  /** Called after each pass that copied rows (tests observe it). */
  onForwarded: ((rows: number) => void) | null = null;

  constructor(
    private readonly store: HistoryStore,
    private readonly pg: PgHistory,
    private readonly o: ForwarderOptions,
    private readonly log: Logger,
  ) {}

  /** [events] retention changed while the daemon runs: the fleet's next retention pass uses it. */
  setRetention(r: ForwarderOptions['retention']): void {
    this.o.retention = { ...r };
  }

  get connected(): boolean {
    return this.state.database === 'connected';
  }

  // ---- HistoryOutput: a committed batch wakes the forwarder ----

  recorded(): void {
    this.kick();
  }

  snapshotReady(e: StoredEvent): void {
    if (this.pendingCopied.has(e.id)) this.kick();
  }

  start(): void {
    this.timer = setInterval(() => this.kick(0), this.o.intervalMs);
    this.timer.unref();
    this.kick(0);
  }

  private kick(delayMs = 20): void {
    if (this.closed || this.kickTimer) return;
    this.kickTimer = setTimeout(() => {
      this.kickTimer = null;
      void this.run(() => this.pass()).catch(() => undefined);
    }, delayMs);
  }

  /** Runs fn after every PostgreSQL step queued before it (one at a time). */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.chain.catch(() => undefined).then(fn);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private setState(ok: boolean, error?: unknown): void {
    if (error !== undefined) this.state.last_error = error instanceof Error ? error.message : String(error);
    const next = ok ? 'connected' : 'disconnected';
    if (this.state.database === next) return;
    this.state.database = next;
    this.state.since = new Date().toISOString();
    if (ok) this.log.info('fleet: forwarding the event history to the database');
    else
      this.log.warn(
        { error: this.state.last_error },
        'fleet: the event database is unreachable; events are kept in the local history and forwarded when it returns',
      );
  }

  /** Copies every ready row after the cursor; one pass. Never throws (failures are the status). */
  async pass(): Promise<number> {
    let copied = 0;
    try {
      const batch = this.o.batch ?? 500,
        wait = this.o.pendingWaitMs ?? 30_000;
      if (!this.recovered) {
        // pendingCopied lives in memory: after a crash or restart, the rows this box copied while their
        // picture was still pending are found in the fleet history and settled from the local rows (which
        // the local history itself settled at startup).
        for (const id of await this.pg.pendingIds(this.o.boxId)) this.pendingCopied.add(id);
        this.recovered = true;
      }
      let seq = this.store.forwardedSeq();
      for (;;) {
        const rows = this.store.after(seq, batch);
        const now = Date.now();
        let n = 0;
        while (n < rows.length && !(rows[n]!.snapshot === 'pending' && now - rows[n]!.occurred_ms < wait)) n++;
        const send = rows.slice(0, n);
        if (send.length) {
          copied += await this.pg.insert(send);
          seq = send[send.length - 1]!.seq;
          this.store.setForwardedSeq(seq);
          for (const r of send) if (r.snapshot === 'pending') this.pendingCopied.add(r.id);
        }
        if (n < rows.length || rows.length < batch) break;
      }
      for (const id of [...this.pendingCopied]) {
        const r = this.store.get(id);
        if (r && r.snapshot === 'pending') continue;
        // A local row that is gone (removed by retention) has no picture to serve any more.
        await this.pg.setSnapshot(
          r ?? {
            id,
            snapshot: 'expired',
            snapshot_path: null,
            snapshot_bytes: 0,
            snapshot_width: null,
            snapshot_height: null,
            crop_width: null,
            crop_height: null,
          },
        );
        this.pendingCopied.delete(id);
      }
      this.state.forwarded_seq = seq;
      this.setState(true);
      if (copied) {
        this.state.forwarded += copied;
        this.state.last_forward_at = new Date().toISOString();
      }
      await this.housekeeping();
    } catch (e) {
      this.setState(false, e);
      // A box started while the database was down gets the tables when the gallery follower connects
      // (it applies pending migrations); until then this pass fails and the next one retries.
      if (!isConnectionError(e) && (e as { code?: string }).code !== '42P01')
        this.log.error({ err: e }, 'fleet: forwarding events failed; retried on the next pass');
    }
    this.state.backlog = this.store.countAfter(this.state.forwarded_seq || this.store.forwardedSeq());
    if (copied) this.onForwarded?.(copied);
    return copied;
  }

  /** The fleet's retention (one box per interval) and the cached fleet stats. */
  private async housekeeping(): Promise<void> {
    const now = Date.now();
    if (now - this.lastRetention >= this.o.retention.intervalMs) {
      this.lastRetention = now;
      const r = await this.pg.retention(this.o.boxId, this.o.retention, now);
      if (r) {
        this.state.last_retention = { at: new Date(now).toISOString(), by_age: r.byAge, by_count: r.byCount };
        if (r.byAge + r.byCount)
          this.log.info({ by_age: r.byAge, by_count: r.byCount }, 'fleet event retention applied');
      }
    }
    if (now - this.lastStats >= 5000) {
      this.lastStats = now;
      this.state.fleet = await this.pg.stats();
    }
  }

  snapshot(): ForwarderStatus {
    return { ...this.state, backlog: this.store.countAfter(this.store.forwardedSeq()) };
  }

  /** A last pass (what the history wrote while closing), then stop. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.kickTimer) clearTimeout(this.kickTimer);
    await this.run(() => this.pass()).catch(() => undefined);
  }
}
