import test, { type ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createBackup, restoreBackup } from '../../src/cli/backup.js';
import { EXIT } from '../../src/cli/exitCodes.js';
import { knownSchemaVersion, schemaVersionOf } from '../../src/store/database.js';
import { PG_MIGRATIONS_DIR } from '../../src/store/postgres.js';
import { call, modelsDirWith, REPO, serverLines, startTestDaemon, TEST_KEY } from '../helpers/daemon.js';
import { pgAvailable, pgStoreToml, startPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Upgrades that cannot hurt the data: a build refuses, with one line and exit 17 (which the unit does not
 * restart), a data dir, a backup or a fleet database that a newer build migrated, and changes nothing; the
 * schema version is in /v1/system, the backup manifest and the start-up log.
 */
const MAIN = join(REPO, 'src/cli/main.ts');
const FUTURE = 9999;

/** `vigil serve` as systemd runs it, expected to stop by itself. */
function serve(file: string, env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, 'serve', '--config', file], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 90_000,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, VIGIL_API_KEY: TEST_KEY, ...env },
  });
  return { code: r.status, stderr: r.stderr };
}

/** A migration a newer build applied, recorded as it records its own. */
function addFutureMigration(dbFile: string): void {
  const db = new Database(dbFile);
  try {
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
      FUTURE,
      `${FUTURE}_from_a_newer_build.sql`,
      new Date().toISOString(),
    );
  } finally {
    db.close();
  }
}

/** A data dir a real daemon made (and stopped in order), with its server.toml. */
async function dataDirOfADaemon(t: ExecutionContext) {
  const dir = tempDir(t, 'vigil-upgrade-');
  const d = await startTestDaemon({ dir });
  const system = await call(d, 'GET', '/v1/system');
  await d.close();
  return { dir, data: join(dir, 'data'), file: join(dir, 'server.toml'), system: system.json };
}

test('/v1/system reports the schema version this build migrated the data dir to', async (t) => {
  const { system } = await dataDirOfADaemon(t);
  t.is(system.database.schema_version, knownSchemaVersion());
});

test('a data dir a newer build migrated: vigil serve exits 17 with one schema_too_new line and leaves the file as it was', async (t) => {
  const { data, file } = await dataDirOfADaemon(t);
  addFutureMigration(join(data, 'vigil.db'));
  const before = readFileSync(join(data, 'vigil.db'));
  const r = serve(file);
  t.is(r.code, EXIT.schemaTooNew, r.stderr);
  const lines = r.stderr.trim().split('\n');
  t.is(lines.length, 1, r.stderr);
  t.regex(lines[0]!, new RegExp(`schema_too_new: .*schema version ${FUTURE}.*knows up to ${knownSchemaVersion()}`));
  t.deepEqual(readFileSync(join(data, 'vigil.db')), before);
});

test('a backup of a newer build is refused before anything in the target is touched; manifests carry the schema version', async (t) => {
  const { data } = await dataDirOfADaemon(t);
  const work = tempDir(t, 'vigil-upgrade-backup-');
  const current = join(work, 'current.tar.gz');
  const manifest = await createBackup(data, current);
  t.is(manifest.schema_version, knownSchemaVersion());

  addFutureMigration(join(data, 'vigil.db'));
  const newer = join(work, 'newer.tar.gz');
  t.is((await createBackup(data, newer)).schema_version, FUTURE);
  const target = join(work, 'target');
  const err = await t.throwsAsync(restoreBackup(target, newer));
  t.is((err as { code?: string }).code, 'schema_too_new');
  t.regex(err!.message, /The backup .*newer\.tar\.gz has schema version 9999/);
  t.deepEqual(
    readdirSync(target).filter((n) => !n.startsWith('vigil.lock')),
    [],
    'nothing restored',
  );
  // The same target takes this build's own backup.
  await restoreBackup(target, current);
  t.true(readdirSync(target).includes('vigil.db'));
});

test.serial('a fleet database a newer box migrated: vigil serve exits 17 and applies nothing', async (t) => {
  if (!pgAvailable()) return t.pass('PostgreSQL is not installed');
  const cluster = await startPostgres();
  try {
    const name = `upgrade_${process.pid}`;
    cluster.createDatabase(name);
    const url = cluster.urlWithoutPassword(name);
    // This build's schema, then one migration of a newer build.
    const client = new pg.Client({ connectionString: cluster.url.replace(/\/[^/]*$/, `/${name}`) });
    await client.connect();
    try {
      await client.query(
        'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
      );
      await client.query('INSERT INTO schema_migrations VALUES ($1, $2, $3)', [FUTURE, 'future.sql', 'x']);
      const dir = tempDir(t, 'vigil-upgrade-fleet-');
      const file = join(dir, 'server.toml');
      const models = await modelsDirWith('edge_s');
      writeFileSync(
        file,
        [...serverLines({ dataDir: join(dir, 'data'), modelsDir: models, logLevel: 'info' }), pgStoreToml(url)].join(
          '\n',
        ),
      );
      const r = serve(file, { VIGIL_STORE_PASSWORD: cluster.password });
      t.is(r.code, EXIT.schemaTooNew, r.stderr);
      t.regex(
        r.stderr,
        new RegExp(`schema_too_new: The fleet database .*knows up to ${schemaVersionOf(PG_MIGRATIONS_DIR)}`),
      );
      const tables = await client.query("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'");
      t.is(tables.rows[0].n, 1, 'no migration of this build was applied');
    } finally {
      await client.end();
    }
  } finally {
    cluster.stop();
  }
});
