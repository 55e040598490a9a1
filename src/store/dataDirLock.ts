import Database from 'better-sqlite3';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Errors } from '../contract/errors.js';

/** The lock file of a data directory: an SQLite database held in exclusive locking mode. */
export const LOCK_FILE = 'vigil.lock';

/**
 * Every lock this process holds, until released. better-sqlite3 closes a connection when its object is
 * garbage collected, which would silently drop the lock of a caller that let go of the database handle.
 */
const held = new Set<Database.Database>();

/**
 * Takes the data directory for this process with a lock the kernel releases when the process dies:
 * SQLite's own POSIX advisory lock (fcntl) on a small database held in `locking_mode = EXCLUSIVE`
 * with an open write transaction. Nothing is inferred from pids, so a SIGKILLed daemon, a power cut,
 * or a daemon that is PID 1 in a container again after a restart never finds a stale lock. A second
 * connection in the same process is refused too (SQLite tracks locks per file across connections).
 * The holder's pid goes to a side file for the message only.
 */
export function acquireDataDirLock(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE);
  const pidFile = `${path}.pid`;
  const db = new Database(path, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = MEMORY');
    db.exec('BEGIN EXCLUSIVE');
    db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL, since TEXT NOT NULL)');
  } catch (e) {
    db.close();
    if ((e as { code?: string }).code === 'SQLITE_BUSY') {
      const pid = readPid(pidFile);
      const who =
        pid === process.pid
          ? 'This process already holds'
          : `Another Vigil process${pid === null ? '' : ` (pid ${pid})`} is using this data directory:`;
      throw Errors.dataDirLocked(`${who} ${path}.`, pid);
    }
    throw e;
  }
  writeFileSync(pidFile, String(process.pid), { mode: 0o600 });
  held.add(db);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    held.delete(db);
    try {
      if (readPid(pidFile) === process.pid) rmSync(pidFile, { force: true });
    } catch {
      /* informational only */
    }
    if (db.open) db.close();
  };
}

function readPid(path: string): number | null {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/**
 * The pid of the process that holds the data directory's lock (a running daemon), -1 when one holds it but
 * its pid file is gone, or null when none does (a pid file left by a killed process does not count). Creates
 * nothing: a CLI run as root must not leave root's files in the service's directory.
 */
export function dataDirHolder(dataDir: string): number | null {
  const path = join(dataDir, LOCK_FILE);
  if (!existsSync(path)) return null;
  let db: Database.Database;
  try {
    db = new Database(path, { timeout: 0, fileMustExist: true });
  } catch {
    return null;
  }
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    db.exec('ROLLBACK');
    return null;
  } catch (e) {
    if ((e as { code?: string }).code !== 'SQLITE_BUSY') return null;
    return readPid(`${path}.pid`) ?? -1;
  } finally {
    db.close();
  }
}
