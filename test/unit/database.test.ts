import test from 'ava';
import { EXIT, exitCodeFor } from '../../src/cli/exitCodes.js';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { OperatorError } from '../../src/contract/errors.js';
import { migrate, openDatabase, quickCheck, schemaVersionOf } from '../../src/store/database.js';
import { fileTempDir } from '../helpers/tempDir.js';

const root = fileTempDir('vigil-db-test-');
let n = 0;
const freshDir = () => join(root, `data-${n++}`);

test('openDatabase creates the file with WAL, foreign keys and the initial migration', (t) => {
  const dir = freshDir();
  const opened = openDatabase(dir);
  try {
    t.is(opened.path, join(dir, 'vigil.db'));
    t.true(existsSync(opened.path));
    t.is(statSync(opened.path).mode & 0o777, 0o600);
    t.is(opened.db.pragma('journal_mode', { simple: true }), 'wal');
    t.is(opened.db.pragma('foreign_keys', { simple: true }), 1);
    t.is(opened.db.pragma('synchronous', { simple: true }), 2); // FULL
    t.true(opened.migrationCount >= 1);
    const rows = opened.db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all() as {
      version: number;
      name: string;
    }[];
    t.is(rows.length, opened.migrationCount);
    t.deepEqual(rows[0], { version: 1, name: '0001_initial.sql' });
    t.truthy(opened.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'api_keys'").get());
    t.is(quickCheck(opened.db), 'ok');
    t.is(opened.integrity, 'ok', 'the integrity result that health and system report is taken at open');
    t.true(existsSync(join(dir, 'vigil.lock')));
    t.is(readFileSync(join(dir, 'vigil.lock.pid'), 'utf8'), String(process.pid));
  } finally {
    opened.close();
  }
  t.false(existsSync(join(dir, 'vigil.lock.pid')), 'close() removes the pid note');
});

test('migrations are idempotent: opening twice keeps the same migration count', (t) => {
  const dir = freshDir();
  const first = openDatabase(dir);
  const count = first.migrationCount;
  first.db
    .prepare("INSERT INTO api_keys (label, salt, digest, active, created_at) VALUES ('x', x'00', x'00', 1, 'now')")
    .run();
  first.close();
  const second = openDatabase(dir);
  try {
    t.is(second.migrationCount, count);
    t.is(
      (second.db.prepare('SELECT count(*) AS n FROM api_keys').get() as { n: number }).n,
      1,
      'data survives reopening',
    );
    t.deepEqual(migrate(second.db, join(process.cwd(), 'src/store/migrations')), []);
  } finally {
    second.close();
  }
});

test('migrate applies numbered files in order, once, and ignores other files', (t) => {
  const dir = freshDir();
  const mig = join(root, `migrations-${n++}`);
  mkdirSync(mig);
  writeFileSync(join(mig, '0002_second.sql'), 'INSERT INTO t (v) VALUES (2);');
  writeFileSync(join(mig, '0001_first.sql'), 'CREATE TABLE t (v INTEGER);');
  writeFileSync(join(mig, 'README.md'), 'not sql');
  writeFileSync(join(mig, '3_bad_name.sql'), 'DROP TABLE t;');
  const opened = openDatabase(dir, mig);
  try {
    t.is(opened.migrationCount, 2);
    t.deepEqual(opened.db.prepare('SELECT v FROM t').all(), [{ v: 2 }]);
    writeFileSync(join(mig, '0003_third.sql'), 'INSERT INTO t (v) VALUES (3);');
    t.deepEqual(migrate(opened.db, mig), ['0003_third.sql']);
    t.deepEqual(migrate(opened.db, mig), []);
    t.deepEqual(opened.db.prepare('SELECT v FROM t ORDER BY v').all(), [{ v: 2 }, { v: 3 }]);
  } finally {
    opened.close();
  }
});

test('a failing migration is rolled back and the lock is released', (t) => {
  const dir = freshDir();
  const mig = join(root, `migrations-${n++}`);
  mkdirSync(mig);
  writeFileSync(join(mig, '0001_ok.sql'), 'CREATE TABLE a (v INTEGER);');
  writeFileSync(join(mig, '0002_broken.sql'), 'CREATE TABLE b (v INTEGER); THIS IS NOT SQL;');
  // better-sqlite3's SqliteError is not a native Error for ava's t.throws, so catch it by hand.
  let threw: unknown = null;
  try {
    openDatabase(dir, mig).close();
  } catch (e) {
    threw = e;
  }
  t.regex(String((threw as { message?: string } | null)?.message), /syntax error/);
  // The lock was released: the next open takes it.
  writeFileSync(join(mig, '0002_broken.sql'), 'CREATE TABLE b (v INTEGER);');
  const opened = openDatabase(dir, mig);
  try {
    t.is(opened.migrationCount, 2);
  } finally {
    opened.close();
  }
});

test('a second openDatabase on the same dir while the first is open throws data_dir_locked', (t) => {
  const dir = freshDir();
  const first = openDatabase(dir);
  try {
    const err = t.throws(() => openDatabase(dir));
    t.true(err instanceof OperatorError);
    t.is((err as OperatorError).code, 'data_dir_locked');
    t.is(exitCodeFor(err), EXIT.dataDirLocked);
    t.regex((err as Error).message, /This process already holds/);
    // The failed attempt must not have removed the holder's note.
    t.is(readFileSync(join(dir, 'vigil.lock.pid'), 'utf8'), String(process.pid));
  } finally {
    first.close();
  }
  const again = openDatabase(dir);
  t.is(readFileSync(join(dir, 'vigil.lock.pid'), 'utf8'), String(process.pid), 'reopened once the first closed');
  again.close();
});

test('a lock held by another running process is refused with its pid', async (t) => {
  const dir = freshDir();
  openDatabase(dir).close();
  // Another process holds the data dir (the same module, in a child). The child drops its handle and
  // collects garbage first: the lock must outlive the handle (better-sqlite3 closes collected connections).
  const child = spawn(
    process.execPath,
    [
      '--expose-gc',
      '--import',
      'tsx',
      '-e',
      `
    const { openDatabase } = await import(${JSON.stringify(join(process.cwd(), 'src/store/database.ts'))});
    openDatabase(${JSON.stringify(dir)}); globalThis.gc(); await new Promise((r) => setTimeout(r, 50)); globalThis.gc();
    console.log('held'); setInterval(() => {}, 1000);`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (b: Buffer) => {
        if (b.toString().includes('held')) resolve();
      });
      child.once('exit', (c) => reject(new Error(`holder exited ${c}`)));
    });
    const err = t.throws(() => openDatabase(dir));
    t.is((err as OperatorError).code, 'data_dir_locked');
    t.is((err as OperatorError).details.pid, child.pid);
    t.regex((err as Error).message, new RegExp(`pid ${child.pid}`));
    // SIGKILL: no release code runs, yet the kernel drops the lock with the process.
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    const opened = openDatabase(dir);
    t.is(readFileSync(join(dir, 'vigil.lock.pid'), 'utf8'), String(process.pid));
    opened.close();
  } finally {
    child.kill('SIGKILL');
  }
});

test('a pid note or a legacy pid lock file naming a live process (even this one) does not block a start', (t) => {
  const dir = freshDir();
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'vigil.db.lock'), String(process.pid));
  writeFileSync(join(dir, 'vigil.lock.pid'), String(process.ppid));
  const opened = openDatabase(dir);
  try {
    t.is(readFileSync(join(dir, 'vigil.lock.pid'), 'utf8'), String(process.pid));
    t.false(existsSync(join(dir, 'vigil.db.lock')), 'the legacy pid lock file is removed');
  } finally {
    opened.close();
  }
});

test('a read-only data dir is one operator error (data_dir_unusable, exit code 13)', (t) => {
  if (process.getuid?.() === 0) {
    // root ignores mode bits: use a read-only bind of a tmpfs where mounting is permitted, else skip.
    t.log(
      'running as root: mode bits do not stop root; the read-only case is covered by the read-only mount test in test/integration/crash-start.test.ts',
    );
    t.pass();
    return;
  }
  const dir = freshDir();
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o500);
  const err = t.throws(() => openDatabase(dir));
  t.is((err as OperatorError).code, 'data_dir_unusable');
  t.is(exitCodeFor(err), EXIT.dataDir);
  chmodSync(dir, 0o700);
});

/** A database file left as a crash leaves it: made, then its connection gone without the orderly close. */
function crashedFile(): string {
  const dir = freshDir();
  const first = openDatabase(dir);
  first.db.close();
  first.close();
  return dir;
}

test('the background integrity check runs off the opening path and reports a healthy file as ok', async (t) => {
  const dir = crashedFile();
  const opened = openDatabase(dir, undefined, { integrity: 'background' });
  try {
    t.is(opened.integrity, 'pending', 'openDatabase returns before quick_check has run');
    t.is(await opened.integrityChecked, 'ok');
    t.is(opened.integrity, 'ok');
  } finally {
    opened.close();
  }
});

test('the background integrity check detects a corrupted database file', async (t) => {
  const dir = freshDir();
  const first = openDatabase(dir);
  first.db.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, v BLOB)');
  const insert = first.db.prepare('INSERT INTO filler (v) VALUES (randomblob(300))');
  first.db.transaction(() => {
    for (let i = 0; i < 3000; i++) insert.run();
  })();
  first.db.pragma('wal_checkpoint(TRUNCATE)');
  const pageSize = first.db.pragma('page_size', { simple: true }) as number;
  // Left as a crash leaves it (no orderly close, so no clean-shutdown marker): the next start checks.
  first.db.close();
  first.close();
  // Garbage over two b-tree pages near the end of the file (the filler table's), far from the schema
  // and migration pages that opening reads: the file opens, only the check can tell.
  const path = join(dir, 'vigil.db');
  const bytes = readFileSync(path);
  const pages = bytes.length / pageSize;
  bytes.fill(0x5a, (pages - 3) * pageSize, (pages - 1) * pageSize);
  writeFileSync(path, bytes);
  const opened = openDatabase(dir, undefined, { integrity: 'background' });
  try {
    t.is(opened.integrity, 'pending');
    const result = await opened.integrityChecked;
    t.not(result, 'ok');
    t.is(opened.integrity, result);
    t.regex(result, /malformed|corrupt|page|btree|Tree/i, 'the check names the damage');
  } finally {
    opened.close();
  }
});

test('a file closed in order is taken as checked at the next start: no quick_check, proven by the clean-shutdown marker', async (t) => {
  const dir = freshDir();
  const first = openDatabase(dir, undefined, { integrity: 'background' });
  t.is(await first.integrityChecked, 'ok');
  t.is(first.integrityProof, 'new_file', 'a file made by this open has nothing to check');
  first.close();
  const second = openDatabase(dir, undefined, { integrity: 'background' });
  try {
    t.is(second.integrity, 'ok', 'known good at open, before any check could have run');
    t.is(second.integrityProof, 'clean_shutdown');
    t.is(await second.integrityChecked, 'ok');
  } finally {
    second.close();
  }
});

test('a file whose last holder died (no orderly close) is checked again at the next start', async (t) => {
  const dir = freshDir();
  const first = openDatabase(dir, undefined, { integrity: 'background' });
  t.is(await first.integrityChecked, 'ok');
  first.close();
  const crashed = openDatabase(dir, undefined, { integrity: 'background' });
  t.is(crashed.integrityProof, 'clean_shutdown');
  // What a SIGKILL leaves: the connection gone without the close that writes the marker.
  crashed.db.close();
  crashed.close();
  const third = openDatabase(dir, undefined, { integrity: 'background' });
  try {
    t.is(third.integrity, 'pending');
    t.is(await third.integrityChecked, 'ok');
    t.is(third.integrityProof, 'quick_check');
  } finally {
    third.close();
  }
});

test('a stop while the check runs, or a marker that does not fit the file, leaves the next start checking', async (t) => {
  const dir = crashedFile();
  const first = openDatabase(dir, undefined, { integrity: 'background', integrityAfter: new Promise(() => undefined) });
  t.is(first.integrity, 'pending');
  first.close(); // the check never ran: nothing is handed on as checked
  const second = openDatabase(dir, undefined, { integrity: 'background' });
  t.is(second.integrity, 'pending');
  t.is(await second.integrityChecked, 'ok');
  second.close();
  // The marker names the page count at the close; a file that grew since (here another program) is not taken on trust.
  const raw = new Database(join(dir, 'vigil.db'));
  raw.exec('CREATE TABLE grown (v BLOB); INSERT INTO grown VALUES (randomblob(100000))');
  raw.close();
  const third = openDatabase(dir, undefined, { integrity: 'background' });
  try {
    t.is(third.integrity, 'pending');
    t.is(third.integrityProof, null);
    t.is(await third.integrityChecked, 'ok');
    t.is(third.integrityProof, 'quick_check');
  } finally {
    third.close();
  }
});

test('an admin command on the daemon file (lock: false) neither reads the whole file nor takes the clean-shutdown marker', async (t) => {
  const dir = freshDir();
  openDatabase(dir).close(); // an orderly stop: the marker is there
  const admin = openDatabase(dir, undefined, { lock: false });
  t.is(admin.integrity, 'pending', 'no quick_check: the daemon checks its file');
  t.is(admin.integrityProof, null);
  admin.close();
  const daemon = openDatabase(dir, undefined, { integrity: 'background' });
  try {
    t.is(daemon.integrityProof, 'clean_shutdown', 'the marker is still the daemon’s');
  } finally {
    daemon.close();
  }
});

test('a data dir holding a migration this build does not know is refused before anything is written (schema_too_new, exit 17)', (t) => {
  const dir = freshDir();
  const mig = join(root, `migrations-${n++}`);
  mkdirSync(mig);
  writeFileSync(join(mig, '0001_first.sql'), 'CREATE TABLE t (v INTEGER);');
  writeFileSync(join(mig, '0002_second.sql'), 'INSERT INTO t (v) VALUES (2);');
  openDatabase(dir, mig).close();
  // A newer build's migration, recorded as a newer build would have.
  const newer = new Database(join(dir, 'vigil.db'));
  newer.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (7, '0007_future.sql', 'x')").run();
  newer.close();
  const before = readFileSync(join(dir, 'vigil.db'));
  rmSync(join(dir, 'vigil.db-wal'), { force: true });
  const err = t.throws(() => openDatabase(dir, mig));
  t.true(err instanceof OperatorError);
  t.is((err as OperatorError).code, 'schema_too_new');
  t.is(exitCodeFor(err), EXIT.schemaTooNew);
  t.deepEqual((err as OperatorError).details, { schema_version: 7, known_schema_version: 2 });
  t.regex((err as Error).message, /schema version 7.*knows up to 2/);
  t.deepEqual(readFileSync(join(dir, 'vigil.db')), before, 'the refused file is left exactly as it was');
  // The lock was released: the newer build (here: the same folder with its migration) still opens it.
  writeFileSync(join(mig, '0007_future.sql'), 'INSERT INTO t (v) VALUES (7);');
  const opened = openDatabase(dir, mig);
  try {
    t.is(opened.schemaVersion, 7);
    t.deepEqual(opened.migrationsApplied, [], '0007 was already applied by the newer build');
  } finally {
    opened.close();
  }
});

test('openDatabase reports the schema version and the migrations this open applied', (t) => {
  const dir = freshDir();
  const mig = join(root, `migrations-${n++}`);
  mkdirSync(mig);
  writeFileSync(join(mig, '0001_first.sql'), 'CREATE TABLE t (v INTEGER);');
  const first = openDatabase(dir, mig);
  t.is(first.schemaVersion, 1);
  t.deepEqual(first.migrationsApplied, ['0001_first.sql']);
  first.close();
  writeFileSync(join(mig, '0003_third.sql'), 'INSERT INTO t (v) VALUES (3);');
  const second = openDatabase(dir, mig);
  try {
    t.is(second.schemaVersion, 3);
    t.deepEqual(second.migrationsApplied, ['0003_third.sql']);
    t.is(schemaVersionOf(mig), 3, 'the highest migration this build knows');
  } finally {
    second.close();
  }
});
