import { closeSync, openSync, readFileSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { isProcessAlive } from './processes.js';

/**
 * A non-blocking O_EXCL lock file holding our pid; returns its release function, or the holder's pid
 * when another live process holds it. A stale file (its pid no longer runs) is taken over, so a crash
 * never leaves a lock behind for good.
 */
export function tryLockFile(lockPath: string): { release: () => void } | { heldBy: number } {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return {
        release: () => {
          try {
            if (readFileSync(lockPath, 'utf8') === String(process.pid)) unlinkSync(lockPath);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = readPid(lockPath);
      if (holder !== null && (holder === process.pid || isProcessAlive(holder))) return { heldBy: holder };
      try {
        unlinkSync(lockPath);
      } catch {
        /* someone else took it over first */
      }
    }
  }
  return { heldBy: readPid(lockPath) ?? -1 };
}

function readPid(path: string): number | null {
  try {
    const fd = openSync(path, 'r');
    const buf = Buffer.alloc(32);
    const n = readSync(fd, buf, 0, 32, 0);
    closeSync(fd);
    const pid = Number(buf.subarray(0, n).toString().trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
