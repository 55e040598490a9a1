/**
 * Worker thread entry: `PRAGMA quick_check` of the service database on its own read-only connection,
 * so the check (it reads the whole file: seconds at a million faces) runs off the port-opening path and
 * off the event loop. WAL lets it read while the daemon serves; it reports the joined result rows.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

const { path } = workerData as { path: string };
let result: string;
try {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 15000');
    result = (db.pragma('quick_check') as { quick_check: string }[]).map((r) => r.quick_check).join('; ');
  } finally {
    db.close();
  }
} catch (e) {
  // A file that cannot even be opened or read is as unusable as one that fails the check.
  result = `quick_check could not run: ${e instanceof Error ? e.message : String(e)}`;
}
parentPort!.postMessage(result);
