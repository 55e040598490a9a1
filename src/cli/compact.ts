import { statfsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/load.js';
import { Errors } from '../contract/errors.js';
import { openDatabase } from '../store/database.js';
import { compactNow, databaseSpace } from '../store/spaceReclaimer.js';
import type { CliIo } from './workspaces.js';

export const COMPACT_USAGE = `Usage:
  vigil store compact [--config FILE] [--json]
      gives the database's free pages back to the file system and turns on incremental vacuum, so that
      deleted data shrinks the file from then on (the daemon does this itself at start for databases up to
      [server] compact_at_start_max_bytes). Checks the file (quick_check), then rewrites its live data with
      VACUUM: 50-100 MB/s, and it needs twice the live data free in data_dir. Stop the daemon first
      (the data directory is locked).
`;

/** `vigil store compact`: the one-time conversion to incremental vacuum (one VACUUM) on a stopped box. */
export async function runCompactCommand(argv: string[], io: CliIo = process): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        config: { type: 'string', short: 'c' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (e) {
    throw Errors.usageError(`${(e as Error).message.split('. To specify')[0]} (see vigil store compact --help)`);
  }
  if (values.help) {
    io.stdout.write(COMPACT_USAGE);
    return 0;
  }
  const { config } = loadConfig(values.config);
  const db = openDatabase(config.server.data_dir);
  try {
    if (db.integrity !== 'ok') throw Errors.databaseNotVerified(db.integrity);
    const before = databaseSpace(db.db, db.path);
    const live = before.file_bytes - before.freelist_bytes;
    const fs = statfsSync(config.server.data_dir);
    if (fs.bavail * fs.bsize < 2 * live)
      throw Errors.dataDirUnusable(
        config.server.data_dir,
        `compacting needs ${2 * live} bytes free (twice the live data); ${fs.bavail * fs.bsize} are`,
      );
    db.db.pragma(`temp_store_directory = '${config.server.data_dir.replaceAll("'", "''")}'`);
    const done = compactNow(db.db, db.path);
    const after = databaseSpace(db.db, db.path);
    const report = { ...done, auto_vacuum: after.auto_vacuum, freelist_bytes: after.freelist_bytes };
    io.stdout.write(
      values.json
        ? `${JSON.stringify(report)}\n`
        : `compacted ${db.path}: ${done.bytes_before} -> ${done.bytes_after} bytes in ${(done.ms / 1000).toFixed(1)} s; auto_vacuum ${after.auto_vacuum}\n`,
    );
    return 0;
  } finally {
    db.close();
  }
}
