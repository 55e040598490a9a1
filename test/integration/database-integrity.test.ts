import test from 'ava';
import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, startTestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/tempDir.js';

test('a database that fails the background quick_check never serves: health not_ready, reads and writes 503', async (t) => {
  const dir = tempDir(t, 'vigil-integrity-');
  let d = await startTestDaemon({ dir });
  try {
    t.is((await call(d, 'POST', '/v1/collections', { id: 'c1', name: 'c1' })).status, 201);
  } finally {
    await d.close();
  }
  // Pages of a filler table near the end of the file get garbage: the daemon opens and migrates, only quick_check can tell.
  const path = join(dir, 'data', 'vigil.db');
  const raw = new Database(path);
  raw.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, v BLOB)');
  const insert = raw.prepare('INSERT INTO filler (v) VALUES (randomblob(300))');
  raw.transaction(() => {
    for (let i = 0; i < 3000; i++) insert.run();
  })();
  raw.pragma('wal_checkpoint(TRUNCATE)');
  const pageSize = raw.pragma('page_size', { simple: true }) as number;
  raw.close();
  const bytes = readFileSync(path);
  const pages = bytes.length / pageSize;
  bytes.fill(0x5a, (pages - 3) * pageSize, (pages - 1) * pageSize);
  writeFileSync(path, bytes);

  d = await startTestDaemon({ dir });
  try {
    const result = await d.runtime.db.integrityChecked;
    t.not(result, 'ok');
    const health = await call(d, 'GET', '/v1/health');
    t.is(health.status, 503);
    t.is(health.json.status, 'not_ready');
    const sys = await call(d, 'GET', '/v1/system');
    t.is(sys.status, 200);
    t.is(sys.json.database.quick_check, result);
    for (const r of [
      await call(d, 'GET', '/v1/collections'),
      await call(d, 'POST', '/v1/collections', { id: 'c2', name: 'c2' }),
      await call(d, 'DELETE', '/v1/collections/c1?force=true'),
    ]) {
      t.is(r.status, 503);
      t.is(r.json.error.code, 'database_not_verified');
      t.is(r.json.error.details.quick_check, result);
    }
  } finally {
    await d.close();
  }
});
