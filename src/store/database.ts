import Database from 'better-sqlite3';
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, chmodSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Errors } from '../contract/errors.js';
import { acquireDataDirLock } from './dataDirLock.js';
import { StorageGuard } from './storageGuard.js';
import { startModuleWorker } from '../system/workerThread.js';

const ERRNO_WHY: Record<string, string> = {
  ENOENT: 'a parent directory does not exist',
  ENOTDIR: 'a part of the path is not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'the file system is read-only',
  ENOSPC: 'the disk is full',
  EEXIST: 'it exists and is not a directory',
};

/** Why a data-dir operation failed, in words (the reason of data_dir_unusable). */
export function errnoReason(e: unknown): string {
  return ERRNO_WHY[(e as NodeJS.ErrnoException).code ?? ''] ?? (e as Error).message;
}

export type Db = Database.Database;

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
/** The data dir's space reserve, released on a full disk so deletes can still run (see StorageGuard). */
export const DEFAULT_RESERVE_BYTES = 8 * 1024 * 1024;
const MIGRATION_FILE = /^(\d{4})_[a-z0-9_]+\.sql$/;

export interface OpenedDatabase {
  db: Db;
  path: string;
  migrationCount: number;
  /**
   * PRAGMA quick_check ('ok' when healthy). Run once: it reads the whole file, too slow per request.
   * With `integrity: 'background'` it is `'pending'` until the check, run in a worker thread on its own
   * read-only connection, reports; then 'ok' or what the check found.
   */
  integrity: string;
  /** Full-disk handling of the data dir (its space reserve, 507 while full). */
  storage: StorageGuard;
  /** Resolves with the final integrity result (at once for a check run at open). */
  integrityChecked: Promise<string>;
  close(): void;
}

export const INTEGRITY_PENDING = 'pending';

export interface OpenOptions {
  lock?: boolean;
  /** 'open' (default): quick_check before returning; 'background': in a worker thread after returning. */
  integrity?: 'open' | 'background';
  /**
   * 'background' only: the check starts when this settles (the daemon passes "models loaded": on a
   * 2-core box quick_check of a 1M-face database took a core from the model load the first search waits for).
   */
  integrityAfter?: Promise<unknown>;
  /** Bytes of the data dir's space reserve (StorageGuard); the default when not given. */
  reserveBytes?: number;
}

/**
 * Opens (creating if needed) the service database: WAL, foreign keys, NORMAL sync, a busy timeout, and
 * every pending numbered migration, each in its own transaction and recorded. A kernel-released lock on
 * the data directory makes a second daemon refuse to start instead of corrupting state.
 */
export function openDatabase(dataDir: string, migrationsDir = MIGRATIONS_DIR, opts: OpenOptions = {}): OpenedDatabase {
  const path = join(dataDir, 'vigil.db');
  assertWritableDataDir(dataDir, path);
  // Admin CLI commands (workspaces, keys) share the file with a running daemon: SQLite's own locking
  // keeps their small transactions safe; only a second daemon is refused.
  const releaseLock = opts.lock === false ? () => undefined : acquireDataDirLock(dataDir);
  // The pid lock file of earlier versions means nothing now (the lock above is the kernel's).
  if (opts.lock !== false) rmSync(`${path}.lock`, { force: true });
  let db: Db | undefined;
  try {
    const fresh = !existsSync(path);
    db = new Database(path);
    if (fresh) chmodSync(path, 0o600);
    db.pragma('journal_mode = WAL');
    db.pragma('foreign_keys = ON');
    // FULL: an acknowledged write survives a power cut too (WAL + NORMAL only survives a process crash).
    // Measured 0.47 ms vs 0.07 ms per registration commit, against ~100 ms of inference per image.
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 15000');
    migrate(db, migrationsDir);
  } catch (e) {
    if (db?.open) db.close();
    releaseLock();
    throw e;
  }
  const migrationCount = (db.prepare('SELECT count(*) AS n FROM schema_migrations').get() as { n: number }).n;
  const opened = db;
  // Only the daemon (the lock holder) keeps the data dir's space reserve; admin commands share its file.
  const storage = new StorageGuard(dataDir, {
    reserveBytes: opts.lock === false ? 0 : (opts.reserveBytes ?? DEFAULT_RESERVE_BYTES),
  });
  if (opts.lock !== false) storage.init();
  let stopCheck = () => undefined as unknown;
  const result: OpenedDatabase = {
    db: opened,
    path,
    migrationCount,
    integrity: INTEGRITY_PENDING,
    integrityChecked: Promise.resolve(INTEGRITY_PENDING),
    storage,
    close() {
      stopCheck();
      if (opened.open) opened.close();
      releaseLock();
    },
  };
  if (opts.integrity === 'background') {
    result.integrityChecked = new Promise<string>((resolve) => {
      let stopped = false;
      stopCheck = () => {
        stopped = true;
        resolve(result.integrity);
      };
      const run = () => {
        if (stopped) return;
        const worker = startModuleWorker(import.meta.url, 'integrityWorker', { path });
        const settle = (value: string) => {
          // The first answer wins; a worker stopped by close() leaves the result pending.
          if (result.integrity === INTEGRITY_PENDING) result.integrity = value;
          resolve(result.integrity);
        };
        worker.once('message', (m: string) => settle(m));
        worker.once('error', (e) => settle(`quick_check could not run: ${e.message}`));
        worker.once('exit', () => resolve(result.integrity));
        stopCheck = () => void worker.terminate();
      };
      if (opts.integrityAfter) void opts.integrityAfter.then(run, run);
      else run();
    });
  } else {
    result.integrity = quickCheck(opened);
    result.integrityChecked = Promise.resolve(result.integrity);
  }
  return result;
}

/** The numbered migration files of one engine's folder, in order (shared by the SQLite and PostgreSQL runners). */
export function migrationFiles(dir: string): { version: number; file: string }[] {
  return readdirSync(dir)
    .filter((f) => MIGRATION_FILE.test(f))
    .sort()
    .map((file) => ({ version: Number(MIGRATION_FILE.exec(file)![1]), file }));
}

export function migrate(db: Db, dir: string): number {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version),
  );
  let count = 0;
  for (const { version, file } of migrationFiles(dir)) {
    if (applied.has(version)) continue;
    const sql = readFileSync(join(dir, file), 'utf8');
    db.transaction(() => {
      db.exec(sql);
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        version,
        file,
        new Date().toISOString(),
      );
    })();
    count++;
  }
  return count;
}

/** PRAGMA quick_check, as readiness requires. */
export function quickCheck(db: Db): string {
  const rows = db.pragma('quick_check') as { quick_check: string }[];
  return rows.map((r) => r.quick_check).join('; ');
}

/**
 * The data directory (created if missing) and the database file must be writable: a read-only mount or
 * wrong ownership is one clear operator error at start, not an SQLite stack from deep inside start-up.
 */
function assertWritableDataDir(dataDir: string, dbPath: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    accessSync(dataDir, constants.W_OK | constants.X_OK);
    if (existsSync(dbPath)) accessSync(dbPath, constants.R_OK | constants.W_OK);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST'].includes(err.code ?? ''))
      throw Errors.dataDirUnusable(dataDir, errnoReason(err));
    throw e;
  }
}
