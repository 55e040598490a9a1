import { existsSync, statfsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Db } from './database.js';
import { CoalescingRun } from '../system/coalescingRun.js';
import { WalCheckpointer } from './walCheckpointer.js';

export type AutoVacuum = 'none' | 'full' | 'incremental';
const AUTO_VACUUM: AutoVacuum[] = ['none', 'full', 'incremental'];

/** The database's size on disk (/metrics, /v1/system). */
export interface DatabaseSpace {
  file_bytes: number;
  wal_bytes: number;
  /** Pages of the file that hold nothing (given back by incremental vacuum, else reused by later writes). */
  freelist_bytes: number;
  page_size: number;
  auto_vacuum: AutoVacuum;
}

const fileBytes = (path: string) => (existsSync(path) ? statSync(path).size : 0);

export function databaseSpace(db: Db, path: string): DatabaseSpace {
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  return {
    file_bytes: fileBytes(path),
    wal_bytes: fileBytes(`${path}-wal`),
    freelist_bytes: (db.pragma('freelist_count', { simple: true }) as number) * pageSize,
    page_size: pageSize,
    auto_vacuum: AUTO_VACUUM[db.pragma('auto_vacuum', { simple: true }) as number] ?? 'none',
  };
}

/** What the one-time conversion to incremental vacuum did at open (or why it did not run). */
export interface Compacted {
  done: true;
  ms: number;
  bytes_before: number;
  bytes_after: number;
}
export type Compaction =
  | Compacted
  | { done: false; reason: 'too_big' | 'no_room' | 'not_verified'; live_bytes: number }
  | { done: false; reason: 'failed'; live_bytes: number; error: string };

/**
 * Turns a file made before incremental vacuum into one that has it: `auto_vacuum` can only change by a
 * VACUUM, which rewrites every live page (50-100 MB/s on the 2-core VM, bench/storage.ts; writes go through the
 * WAL, so it needs the live bytes free twice) and holds the write lock throughout. So it runs at open,
 * before anything else uses the file, and only when the live data is at most `maxBytes` (a larger file
 * waits for `vigil store compact` on a stopped box, see the log line at start). Returns null when the file
 * already has it.
 */
export function convertToIncrementalVacuum(
  db: Db,
  path: string,
  opts: { maxBytes: number; verified: boolean },
): Compaction | null {
  const space = databaseSpace(db, path);
  if (space.auto_vacuum === 'incremental') return null;
  const live = space.file_bytes - space.freelist_bytes;
  if (!opts.verified) return { done: false, reason: 'not_verified', live_bytes: live };
  if (live > opts.maxBytes) return { done: false, reason: 'too_big', live_bytes: live };
  const free = statfsSync(dirname(path));
  if (free.bavail * free.bsize < 2 * live) return { done: false, reason: 'no_room', live_bytes: live };
  try {
    return compactNow(db, path);
  } catch (e) {
    // SQLite rolled it back (a full disk, a damaged page): the file is as it was, the start goes on.
    return { done: false, reason: 'failed', live_bytes: live, error: e instanceof Error ? e.message : String(e) };
  }
}

/** PRAGMA auto_vacuum = INCREMENTAL, VACUUM, and the WAL the VACUUM filled truncated again. */
export function compactNow(db: Db, path: string): Compacted {
  const before = fileBytes(path);
  const t0 = performance.now();
  db.pragma('auto_vacuum = INCREMENTAL');
  db.exec('VACUUM');
  db.pragma('wal_checkpoint(TRUNCATE)');
  return { done: true, ms: Math.round(performance.now() - t0), bytes_before: before, bytes_after: fileBytes(path) };
}

/**
 * The next step's size in pages or rows: steps of background maintenance run on the daemon's one
 * connection, between requests, so each should take about `targetMs`; the size follows the last
 * step's time (halved at most, doubled at most), within [min, max].
 */
export function nextStepSize(size: number, elapsedMs: number, targetMs: number, min: number, max: number): number {
  const ratio = elapsedMs > 0 ? targetMs / elapsedMs : 2;
  return Math.round(Math.min(max, Math.max(min, size * Math.min(2, Math.max(0.5, ratio)))));
}

/**
 * Whether the free pages are worth a reclaim run on their own (the periodic look; large deletes ask for one
 * directly): at least 16 MiB and 2 % of the file, so event retention's steady trickle is given back in
 * chunks and a small file is left alone.
 */
export function worthReclaiming(space: DatabaseSpace): boolean {
  return (
    space.auto_vacuum === 'incremental' &&
    space.freelist_bytes >= 16 * 1024 * 1024 &&
    space.freelist_bytes >= 0.02 * space.file_bytes
  );
}

export interface ReclaimOptions {
  /** Free pages left alone (below this, reclaiming is not worth a transaction). Default 256 (1 MiB at 4 KiB). */
  minFreePages?: number;
  /** About how long one incremental_vacuum step may hold the connection. Default 20 ms. */
  stepMs?: number;
}

/**
 * Gives the file's free pages back to the file system (PRAGMA incremental_vacuum) in short steps on the
 * daemon's connection, each followed by a pause as long as the step (the box keeps half of a core for
 * serving), once the database is known good. Then a TRUNCATE checkpoint in a worker (it gives up at once
 * if a reader or writer is busy; journal_size_limit bounds the WAL meanwhile). request() after a large
 * delete; a no-op on files without incremental vacuum.
 */
export class SpaceReclaimer {
  private readonly runs = new CoalescingRun(() => this.run());
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  private verified: Promise<boolean> = Promise.resolve(true);
  private checkpointer: WalCheckpointer | null = null;
  /** Bytes given back since start, steps taken and the longest one (tests, the bench). */
  reclaimedBytes = 0;
  steps = 0;
  longestStepMs = 0;

  constructor(
    private readonly db: Db,
    private readonly path: string,
    private readonly opts: ReclaimOptions = {},
  ) {}

  /** Nothing is reclaimed before this resolves true (the integrity check after an unclean stop). */
  after(verified: Promise<boolean>): void {
    this.verified = verified;
  }

  space(): DatabaseSpace {
    return databaseSpace(this.db, this.path);
  }

  /** Reclaims now (in the background), or once more after the run in progress. Resolves when done. */
  request(): Promise<void> {
    return this.runs.request();
  }

  idle(): Promise<void> {
    return this.runs.idle();
  }

  /**
   * Looks every `ms` whether the free pages are worth a run (worthReclaiming): deletes other than a
   * collection's (event retention, persons) ask for none themselves.
   */
  every(ms: number): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = setInterval(() => {
      if (!this.closed && this.db.open && worthReclaiming(this.space())) void this.request();
    }, ms).unref();
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.checkpointer?.close();
  }

  private async run(): Promise<void> {
    if (!(await this.verified) || this.closed || !this.db.open) return;
    if (this.space().auto_vacuum !== 'incremental') return;
    const minFree = this.opts.minFreePages ?? 256;
    const targetMs = this.opts.stepMs ?? 20;
    let pages = 256;
    let vacuumed = false;
    while (!this.closed && this.db.open) {
      const free = this.db.pragma('freelist_count', { simple: true }) as number;
      if (free <= minFree) break;
      const pageSize = this.db.pragma('page_size', { simple: true }) as number;
      const t0 = performance.now();
      this.db.pragma(`incremental_vacuum(${Math.min(pages, free)})`);
      const elapsed = performance.now() - t0;
      this.steps++;
      this.longestStepMs = Math.max(this.longestStepMs, elapsed);
      vacuumed = true;
      this.reclaimedBytes += (free - (this.db.pragma('freelist_count', { simple: true }) as number)) * pageSize;
      pages = nextStepSize(pages, elapsed, targetMs, 32, 65_536);
      await new Promise((r) => setTimeout(r, Math.max(1, elapsed)));
    }
    if (vacuumed) await this.truncateWal();
  }

  /** A TRUNCATE checkpoint, tried again a few times while readers or writers keep it from emptying the WAL. */
  private async truncateWal(): Promise<void> {
    this.checkpointer ??= new WalCheckpointer(this.path);
    for (let attempt = 0; attempt < 5 && !this.closed; attempt++) {
      this.checkpointer.request('TRUNCATE');
      await this.checkpointer.idle();
      const last = this.checkpointer.last;
      if (last && 'busy' in last && last.busy === 0) return;
      await new Promise((r) => setTimeout(r, 1000 * (attempt + 1)).unref());
    }
  }
}
