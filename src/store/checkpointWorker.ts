/**
 * Worker thread entry: WAL checkpoints of the service database, each on a connection of its own that is
 * closed again at once. A bulk gallery import turns the main connection's automatic checkpoint off while
 * its batches commit and asks for one here after each: copying a batch's pages (tens of MiB) from the WAL
 * into the database file and syncing it then runs beside the import instead of inside its commit on the
 * event loop. PASSIVE never waits for or blocks a writer or reader. TRUNCATE (after space was reclaimed)
 * also empties the WAL file; it waits for no one (busy_timeout 0), since while it waits it holds off the
 * daemon's writers: a busy database answers busy = 1 and the next one tries again. Replies with SQLite's
 * result row or the error's message.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

const { path } = workerData as { path: string };
parentPort!.on('message', (mode: 'PASSIVE' | 'TRUNCATE') => {
  let reply: { busy: number; log: number; checkpointed: number } | { error: string };
  try {
    const db = new Database(path, { fileMustExist: true });
    try {
      db.pragma(`busy_timeout = ${mode === 'TRUNCATE' ? 0 : 15000}`);
      reply = (
        db.pragma(`wal_checkpoint(${mode === 'TRUNCATE' ? 'TRUNCATE' : 'PASSIVE'})`) as {
          busy: number;
          log: number;
          checkpointed: number;
        }[]
      )[0]!;
    } finally {
      db.close();
    }
  } catch (e) {
    reply = { error: e instanceof Error ? e.message : String(e) };
  }
  parentPort!.postMessage(reply);
});
