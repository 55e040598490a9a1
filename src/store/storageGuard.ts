import { rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Error codes that mean "the disk (or quota) is full": SQLite's and the file system's. */
const FULL_CODES = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT']);

export function isStorageFull(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && FULL_CODES.has(code);
}

export interface StorageStatus {
  writable: boolean;
  free_bytes: number | null;
  reserve_bytes: number;
  reason: string | null;
}

/**
 * Keeps the daemon usable on a full disk. A reserve file of `reserveBytes` sits in the data dir; the
 * first write that fails for lack of space releases it, so deletes (SQLite needs WAL room to delete
 * anything) can free space, and marks the storage full: writes that would grow the data answer 507
 * until the file system has room for the reserve again plus `minFreeBytes`, which is re-checked at
 * most once a second on demand (health, a write). Nothing needs a restart.
 */
export class StorageGuard {
  private full = false;
  private reason: string | null = null;
  private checkedAt = 0;
  private readonly reservePath: string;

  constructor(
    private readonly dataDir: string,
    private readonly opts: { reserveBytes: number; minFreeBytes?: number; now?: () => number },
  ) {
    this.reservePath = join(dataDir, '.vigil-reserve');
  }

  /** Creates the reserve (start-up). A disk already too full to hold it starts in the full state. */
  init(): void {
    if (!this.createReserve()) this.markFull('the data directory has no room for its space reserve');
  }

  /** A write failed for lack of space: release the reserve so deletes can run, and refuse growth. */
  markFull(reason = 'a write failed: no space left in the data directory'): void {
    if (!this.full) {
      rmSync(this.reservePath, { force: true });
      this.full = true;
    }
    this.reason = reason;
    this.checkedAt = this.now();
  }

  /** Whether writes that grow the data are refused now (re-checks the disk at most once a second). */
  isFull(): boolean {
    if (!this.full) return false;
    const now = this.now();
    if (now - this.checkedAt < 1000) return true;
    this.checkedAt = now;
    const free = this.freeBytes();
    if (
      free !== null &&
      free >= this.opts.reserveBytes + (this.opts.minFreeBytes ?? 1024 * 1024) &&
      this.createReserve()
    ) {
      this.full = false;
      this.reason = null;
    }
    return this.full;
  }

  status(): StorageStatus {
    const full = this.isFull();
    return {
      writable: !full,
      free_bytes: this.freeBytes(),
      reserve_bytes: this.opts.reserveBytes,
      reason: full ? this.reason : null,
    };
  }

  private now(): number {
    return this.opts.now?.() ?? Date.now();
  }

  private freeBytes(): number | null {
    try {
      const s = statfsSync(this.dataDir);
      return s.bavail * s.bsize;
    } catch {
      return null;
    }
  }

  private createReserve(): boolean {
    if (this.opts.reserveBytes <= 0) return true;
    try {
      writeFileSync(this.reservePath, Buffer.alloc(this.opts.reserveBytes), { mode: 0o600 });
      return true;
    } catch (e) {
      rmSync(this.reservePath, { force: true });
      if (isStorageFull(e)) return false;
      throw e;
    }
  }
}
