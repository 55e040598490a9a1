import test from 'ava';
import Database from 'better-sqlite3';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCompactCommand } from '../../src/cli/compact.js';
import { openDatabase } from '../../src/store/database.js';
import { Sink } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';

test('vigil store compact turns an old database to incremental vacuum and gives its free pages back; refused under a running daemon', async (t) => {
  const root = tempDir(t, 'vigil-compact-');
  const dataDir = join(root, 'data');
  openDatabase(dataDir).close();
  // As an earlier version left it: no incremental vacuum, and deleted rows' pages still in the file.
  const path = join(dataDir, 'vigil.db');
  const raw = new Database(path);
  raw.pragma('auto_vacuum = NONE');
  raw.exec('VACUUM; CREATE TABLE blobs (id INTEGER PRIMARY KEY, v BLOB)');
  const insert = raw.prepare('INSERT INTO blobs (v) VALUES (randomblob(4096))');
  raw.transaction(() => {
    for (let i = 0; i < 3000; i++) insert.run();
  })();
  raw.prepare('DELETE FROM blobs WHERE id % 2 = 0').run();
  raw.close();
  const before = statSync(path).size;
  const config = join(root, 'server.toml');
  writeFileSync(config, `[server]\ndata_dir = ${JSON.stringify(dataDir)}\nmodels_dir = ${JSON.stringify(root)}\n`);

  const daemon = openDatabase(dataDir);
  const refused = await runCompactCommand(['--config', config], { stdout: new Sink(), stderr: new Sink() } as never)
    .then(() => null)
    .catch((e: { code: string }) => e.code);
  daemon.close();
  t.is(refused, 'data_dir_locked');

  const out = new Sink();
  t.is(await runCompactCommand(['--config', config, '--json'], { stdout: out, stderr: new Sink() } as never), 0);
  const report = JSON.parse(out.text) as {
    done: boolean;
    auto_vacuum: string;
    bytes_before: number;
    bytes_after: number;
  };
  t.like(report, { done: true, auto_vacuum: 'incremental' });
  t.true(report.bytes_after < before - 4 * 1024 * 1024, `${before} -> ${report.bytes_after}`);
  t.is(statSync(path).size, report.bytes_after);
});
