import test from 'ava';
import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/database.js';
import { databaseSpace, nextStepSize, worthReclaiming } from '../../src/store/spaceReclaimer.js';
import { fileTempDir } from '../helpers/tempDir.js';

const root = fileTempDir('vigil-space-');
let n = 0;
const freshDir = () => join(root, `data-${n++}`);

/** 4000 rows of 2 KiB in a table of their own, then every other one deleted: ~8 MiB of free pages. */
function fillAndDelete(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS blobs (id INTEGER PRIMARY KEY, v BLOB)');
  const insert = db.prepare('INSERT INTO blobs (v) VALUES (randomblob(2048))');
  db.transaction(() => {
    for (let i = 0; i < 4000; i++) insert.run();
  })();
  db.prepare('DELETE FROM blobs WHERE id % 2 = 0').run();
}

test('nextStepSize keeps a step near its time budget: at most doubled or halved, within bounds', (t) => {
  t.is(nextStepSize(100, 10, 20, 1, 1000), 200, 'twice as fast as the budget: doubled');
  t.is(nextStepSize(100, 80, 20, 1, 1000), 50, 'four times too slow: halved, not quartered');
  t.is(nextStepSize(100, 25, 20, 1, 1000), 80);
  t.is(nextStepSize(100, 0, 20, 1, 1000), 200, 'an instant step doubles');
  t.is(nextStepSize(800, 1, 20, 1, 1000), 1000, 'never above max');
  t.is(nextStepSize(20, 1000, 20, 16, 1000), 16, 'never below min');
});

test('a new database has incremental vacuum, and the reclaimer gives deleted pages back and empties the WAL', async (t) => {
  const opened = openDatabase(freshDir());
  try {
    t.is(opened.space.space().auto_vacuum, 'incremental');
    t.is(opened.db.pragma('journal_size_limit', { simple: true }), 64 * 1024 * 1024);
    fillAndDelete(opened.db);
    const before = opened.space.space();
    t.true(before.freelist_bytes > 4 * 1024 * 1024, JSON.stringify(before));
    await opened.space.request();
    const after = opened.space.space();
    t.true(after.freelist_bytes <= 256 * after.page_size, JSON.stringify(after));
    t.true(before.file_bytes - after.file_bytes >= before.freelist_bytes - 256 * after.page_size);
    t.is(after.wal_bytes, 0, 'the TRUNCATE checkpoint emptied the WAL');
    t.true(opened.space.steps > 1, 'in several short steps');
  } finally {
    opened.close();
  }
});

test('a database made before incremental vacuum is converted at open when small enough, known good and with room', (t) => {
  const dir = freshDir();
  const path = join(dir, 'vigil.db');
  const old = openDatabase(dir);
  old.close();
  // As earlier versions made it: auto_vacuum NONE.
  const raw = new Database(path);
  raw.pragma('auto_vacuum = NONE');
  raw.exec('VACUUM');
  fillAndDelete(raw);
  raw.close();
  const sizeBefore = statSync(path).size;

  const tooBig = openDatabase(dir, undefined, { compactAtStartMaxBytes: 1024 });
  t.like(tooBig.compaction, { done: false, reason: 'too_big' });
  t.is(tooBig.space.space().auto_vacuum, 'none');
  tooBig.db.close(); // as a crash leaves it: no clean-shutdown marker
  tooBig.close();
  const unchecked = openDatabase(dir, undefined, { integrity: 'background', compactAtStartMaxBytes: 1 << 30 });
  t.like(unchecked.compaction, { done: false, reason: 'not_verified' }, 'a file not known good is not rewritten');
  unchecked.close();

  const converted = openDatabase(dir, undefined, { compactAtStartMaxBytes: 1 << 30 });
  try {
    t.like(converted.compaction, { done: true });
    const space = databaseSpace(converted.db, path);
    t.is(space.auto_vacuum, 'incremental');
    t.true(space.file_bytes < sizeBefore - 4 * 1024 * 1024, `${space.file_bytes} < ${sizeBefore}`);
    t.is(space.wal_bytes, 0);
    t.is((converted.db.prepare('SELECT count(*) AS n FROM blobs').get() as { n: number }).n, 2000);
  } finally {
    converted.close();
  }
  const again = openDatabase(dir, undefined, { compactAtStartMaxBytes: 1 << 30 });
  t.is(again.compaction, null, 'once converted, nothing to do');
  again.close();
});

test('worthReclaiming: at least 16 MiB and 2 % of the file, on a file with incremental vacuum', (t) => {
  const MiB = 1024 * 1024;
  const space = (free: number, file: number, av: 'none' | 'incremental' = 'incremental') => ({
    file_bytes: file,
    wal_bytes: 0,
    freelist_bytes: free,
    page_size: 4096,
    auto_vacuum: av,
  });
  t.false(worthReclaiming(space(8 * MiB, 20 * MiB)), 'under 16 MiB');
  t.true(worthReclaiming(space(16 * MiB, 100 * MiB)));
  t.false(worthReclaiming(space(20 * MiB, 2000 * MiB)), 'under 2 % of a large file');
  t.true(worthReclaiming(space(50 * MiB, 2000 * MiB)));
  t.false(worthReclaiming(space(50 * MiB, 100 * MiB, 'none')), 'nothing to give back without incremental vacuum');
});

test('the periodic look gives back free pages that no delete asked about (event retention, persons)', async (t) => {
  const opened = openDatabase(freshDir());
  try {
    opened.db.exec('CREATE TABLE blobs (id INTEGER PRIMARY KEY, v BLOB)');
    const insert = opened.db.prepare('INSERT INTO blobs (v) VALUES (randomblob(4096))');
    opened.db.transaction(() => {
      for (let i = 0; i < 6000; i++) insert.run();
    })();
    opened.db.prepare('DELETE FROM blobs WHERE id % 3 != 0').run();
    t.true(worthReclaiming(opened.space.space()));
    opened.space.every(50);
    for (let i = 0; i < 400 && worthReclaiming(opened.space.space()); i++) await new Promise((r) => setTimeout(r, 50));
    await opened.space.idle();
    t.false(worthReclaiming(opened.space.space()));
    t.true(opened.space.reclaimedBytes >= 16 * 1024 * 1024);
  } finally {
    opened.close();
  }
});
