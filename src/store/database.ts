import Database from 'better-sqlite3';
import {
  accessSync,
  constants,
  mkdirSync,
  readdirSync,
  readFileSync,
  chmodSync,
  existsSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Errors, type OperatorError } from '../contract/errors.js';
import { acquireDataDirLock } from './dataDirLock.js';
import { StorageGuard } from './storageGuard.js';
import { convertToIncrementalVacuum, SpaceReclaimer, type Compaction } from './spaceReclaimer.js';
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
  /** The highest migration applied: the schema version /v1/system, backups and upgrades speak of. */
  schemaVersion: number;
  /** The migration files this open applied (the start-up log names them). */
  migrationsApplied: string[];
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
  /**
   * What established `integrity`: 'clean_shutdown' (the marker the last lock holder wrote when it closed
   * the file in order, see takeCleanShutdown), 'new_file' (created by this open), 'quick_check', or null
   * while nothing has yet.
   */
  integrityProof: IntegrityProof | null;
  /** Gives free pages back to the file system in the background (incremental vacuum, then a WAL truncate). */
  space: SpaceReclaimer;
  /** The one-time conversion to incremental vacuum at open: what it did or why not; null when not needed. */
  compaction: Compaction | null;
  close(): void;
}

export type IntegrityProof = 'clean_shutdown' | 'new_file' | 'quick_check';

export const INTEGRITY_PENDING = 'pending';
/** The WAL file is cut back to this whenever a checkpoint empties it. */
const JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024;

export interface OpenOptions {
  lock?: boolean;
  /**
   * 'open' (default for a lock holder): quick_check before returning. 'background': a file the last lock
   * holder closed in order (its clean-shutdown marker) is taken as checked; any other gets quick_check in a
   * worker thread after returning. 'none' (default with `lock: false`): an admin command on the daemon's
   * file leaves checking it to the daemon (quick_check reads the whole file: 105 s at 13 GB).
   */
  integrity?: 'open' | 'background' | 'none';
  /**
   * 'background' only: the check starts when this settles (the daemon passes "ready": nothing waits for
   * the check, and on a 2-core box it took a core from the model load the first search waits for).
   */
  integrityAfter?: Promise<unknown>;
  /** Bytes of the data dir's space reserve (StorageGuard); the default when not given. */
  reserveBytes?: number;
  /**
   * The daemon: a file made before incremental vacuum is converted at open (one VACUUM) when its live data
   * is at most this many bytes and it is known good (convertToIncrementalVacuum). Absent: never at open.
   */
  compactAtStartMaxBytes?: number;
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
  let cleanStop = false;
  let fresh = false;
  let compaction: Compaction | null = null;
  let migrationsApplied: string[] = [];
  try {
    fresh = !existsSync(path);
    db = new Database(path);
    // Before anything writes (the clean-shutdown marker, a compaction, migrations): a file a newer build
    // migrated is left as it is, so installing that build again (or restoring its backup) still works.
    assertSchemaKnown(db, migrationsDir, path);
    if (fresh) chmodSync(path, 0o600);
    // Before the first table: only an empty file takes it without a VACUUM. Deleted rows' pages can then be
    // given back to the file system (SpaceReclaimer): 13.2 GB stayed on disk for 4.26 GB of live data.
    if (fresh) db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('journal_mode = WAL');
    // A checkpoint that empties the WAL also cuts the file back to this (it grew to 10.5 GB and stayed).
    db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT}`);
    db.pragma('foreign_keys = ON');
    // FULL: an acknowledged write survives a power cut too (WAL + NORMAL only survives a process crash).
    // Measured 0.47 ms vs 0.07 ms per registration commit, against ~100 ms of inference per image.
    db.pragma('synchronous = FULL');
    db.pragma('busy_timeout = 15000');
    // Read and cleared before anything (migrations included) writes: a process that dies from now on
    // leaves no marker, so the next start checks the file.
    if (opts.lock !== false) cleanStop = takeCleanShutdown(db, path);
    if (opts.compactAtStartMaxBytes !== undefined) {
      // VACUUM's temporary copy goes beside the file, not to a /tmp that may be in memory.
      db.pragma(`temp_store_directory = '${dataDir.replaceAll("'", "''")}'`);
      compaction = convertToIncrementalVacuum(db, path, {
        maxBytes: opts.compactAtStartMaxBytes,
        verified: cleanStop || opts.integrity !== 'background',
      });
    }
    migrationsApplied = migrate(db, migrationsDir);
  } catch (e) {
    if (db?.open) db.close();
    releaseLock();
    throw e;
  }
  const migrationCount = (db.prepare('SELECT count(*) AS n FROM schema_migrations').get() as { n: number }).n;
  const schemaVersion = appliedSchemaVersion(db) ?? 0;
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
    schemaVersion,
    migrationsApplied,
    integrity: INTEGRITY_PENDING,
    integrityChecked: Promise.resolve(INTEGRITY_PENDING),
    integrityProof: null,
    storage,
    space: new SpaceReclaimer(opened, path),
    compaction,
    close() {
      stopCheck();
      result.space.close();
      // Only a file known good is handed on as checked: a check still running or failed leaves no marker.
      if (opened.open && opts.lock !== false && result.integrity === 'ok') writeCleanShutdown(opened);
      if (opened.open) opened.close();
      releaseLock();
    },
  };
  if (opts.integrity === 'background' && (cleanStop || fresh)) {
    result.integrity = 'ok';
    result.integrityProof = fresh ? 'new_file' : 'clean_shutdown';
    result.integrityChecked = Promise.resolve('ok');
  } else if (opts.integrity === 'background') {
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
          if (result.integrity === INTEGRITY_PENDING) {
            result.integrity = value;
            result.integrityProof = 'quick_check';
          }
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
  } else if ((opts.integrity ?? (opts.lock === false ? 'none' : 'open')) === 'open') {
    result.integrity = quickCheck(opened);
    result.integrityProof = 'quick_check';
    result.integrityChecked = Promise.resolve(result.integrity);
  }
  // Moving pages about a file that may be damaged could spread the damage: reclaiming waits for the check.
  result.space.after(result.integrityChecked.then((r) => r === 'ok'));
  return result;
}

const CLEAN_SHUTDOWN = 'clean_shutdown';

/** Small facts of the store itself (the clean-shutdown marker), made here so any migrations folder has it. */
function ensureStateTable(db: Db): void {
  db.exec('CREATE TABLE IF NOT EXISTS store_state (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID');
}

interface CleanShutdown {
  at: string;
  page_size: number;
  page_count: number;
}

/**
 * Written by close() after the last write of an orderly stop, when the file was known good (checked
 * or itself handed on this way). quick_check reads the whole file (105 s at 13 GB), and SQLite with
 * synchronous=FULL does not damage a file that is closed in order; what a check finds after a crash or a
 * power cut is what the storage did to the pages being written then.
 */
function writeCleanShutdown(db: Db): void {
  try {
    ensureStateTable(db);
    const marker: CleanShutdown = {
      at: new Date().toISOString(),
      page_size: db.pragma('page_size', { simple: true }) as number,
      page_count: db.pragma('page_count', { simple: true }) as number,
    };
    db.prepare('INSERT OR REPLACE INTO store_state (key, value) VALUES (?, ?)').run(
      CLEAN_SHUTDOWN,
      JSON.stringify(marker),
    );
  } catch {
    // A full disk or a closing error: no marker, so the next start checks the file.
  }
}

/**
 * Whether the last lock holder closed the file in order, with the marker removed again (this process
 * is the holder now). The marker must also fit the file: the same page size and page count, and with no
 * write-ahead log left over, a file exactly that long (a truncated or swapped file is checked).
 */
function takeCleanShutdown(db: Db, path: string): boolean {
  ensureStateTable(db);
  const row = db.prepare('SELECT value FROM store_state WHERE key = ?').get(CLEAN_SHUTDOWN) as
    { value: string } | undefined;
  if (!row) return false;
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pageCount = db.pragma('page_count', { simple: true }) as number;
  const wal = `${path}-wal`;
  const walBytes = existsSync(wal) ? statSync(wal).size : 0;
  const fileFits = walBytes > 0 || statSync(path).size === pageSize * pageCount;
  db.prepare('DELETE FROM store_state WHERE key = ?').run(CLEAN_SHUTDOWN);
  try {
    const marker = JSON.parse(row.value) as Partial<CleanShutdown>;
    return fileFits && marker.page_size === pageSize && marker.page_count === pageCount;
  } catch {
    return false;
  }
}

/** The numbered migration files of one engine's folder, in order (shared by the SQLite and PostgreSQL runners). */
export function migrationFiles(dir: string): { version: number; file: string }[] {
  return readdirSync(dir)
    .filter((f) => MIGRATION_FILE.test(f))
    .sort()
    .map((file) => ({ version: Number(MIGRATION_FILE.exec(file)![1]), file }));
}

/** The SQLite schema version this build knows (its highest migration). */
export const knownSchemaVersion = (): number => schemaVersionOf(MIGRATIONS_DIR);

/** The highest migration version of a migrations folder: the schema version this build knows. */
export function schemaVersionOf(dir: string): number {
  return migrationFiles(dir).reduce((max, m) => Math.max(max, m.version), 0);
}

/**
 * The rule of upgrades and downgrades: a store that holds a migration above the highest this build knows
 * was written by a newer build, which may have changed tables this one would misread or damage. Returns
 * the refusal, or null when this build may open the store. Shared by SQLite, PostgreSQL and backups.
 */
export function schemaTooNew(what: string, applied: number | null, known: number): OperatorError | null {
  return applied !== null && applied > known ? Errors.schemaTooNew(what, applied, known) : null;
}

/** The highest applied migration, or null for a file no migration ran on; reads only. */
export function appliedSchemaVersion(db: Db): number | null {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!table) return null;
  return (db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null }).v;
}

function assertSchemaKnown(db: Db, dir: string, path: string): void {
  const refusal = schemaTooNew(path, appliedSchemaVersion(db), schemaVersionOf(dir));
  if (refusal) throw refusal;
}

/** Applies the pending numbered migrations, each in its own transaction; returns the files applied. */
export function migrate(db: Db, dir: string): string[] {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
  );
  const applied = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as { version: number }[]).map((r) => r.version),
  );
  const done: string[] = [];
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
    done.push(file);
  }
  return done;
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
