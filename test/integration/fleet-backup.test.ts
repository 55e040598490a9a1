import test from 'ava';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runBackupCommand, verifyBackup } from '../../src/cli/backup.js';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { fleetStoreToml, startPostgres, type PgCluster } from '../helpers/postgres.js';
import { eventually, Sink } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Backups of a fleet box: `vigil backup` archives the box's own data dir, whose gallery is a replica of
 * PostgreSQL, and says so in the manifest and its output; the fleet's database is backed up with pg_dump
 * and restored with pg_restore as docs/operations/backup-restore.md shows, after which a box copies the
 * restored gallery afresh and takes new writes.
 */
let cluster: PgCluster;
test.before(async () => {
  cluster = await startPostgres();
});
test.after.always(() => {
  cluster?.stop();
});

/** A PostgreSQL client program against the test cluster, as the operator runs it (the password in PGPASSWORD). */
function pgTool(tool: string, args: string[]): string {
  const r = spawnSync(tool, ['-h', '127.0.0.1', '-p', String(cluster.port), '-U', 'vigil', ...args], {
    encoding: 'utf8',
    env: { ...process.env, PGPASSWORD: cluster.password },
  });
  if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const search = async (d: TestDaemon, image: string) =>
  (await post(d, '/v1/collections/site/search', form({ image: face(image), limit: '1' }))).json.matches?.[0]?.person
    ?.id as string | undefined;

test('a fleet box backs up its local replica and says so; PostgreSQL comes back from pg_dump and pg_restore as documented', async (t) => {
  const db = `fleetbk_${process.pid}`;
  const url = cluster.createDatabase(db);
  const dir = tempDir(t, 'vigil-fleet-backup-');
  const toml = fleetStoreToml(url);
  let box = await startTestDaemon({ dir, toml });
  const archive = join(dir, 'box.tar.gz');
  const dump = join(dir, 'vigil-pg.dump');
  try {
    t.is((await call(box, 'POST', '/v1/collections', { id: 'site', name: 'Site' })).status, 201);
    const obama = await post(
      box,
      '/v1/collections/site/persons',
      form({ id: 'obama', images: [face('identities/obama/2.jpg')] }),
    );
    t.is(obama.res.status, 201);

    // vigil backup, with the box's config: the manifest marks the archive as the local replica.
    const config = join(dir, 'server.toml');
    const out = new Sink();
    t.is(
      await runBackupCommand('backup', [archive, '--config', config], undefined, { stdout: out, stderr: out } as never),
      0,
    );
    t.regex(out.text, /local replica/);
    t.regex(out.text, /pg_dump/);
    const manifest = await verifyBackup(archive, tempDir(t, 'vigil-fleet-verify-'));
    t.deepEqual(manifest.store, {
      kind: 'postgres',
      scope: 'local_replica',
      database: `127.0.0.1:${cluster.port}/${db}`,
    });
    t.false(readFileSync(archive).includes(cluster.password), 'no database password in the archive');
    t.false(out.text.includes(cluster.password));

    // The fleet's database: pg_dump (custom format), then a write the dump does not have.
    pgTool('pg_dump', ['-Fc', '-d', db, '-f', dump]);
    const biden = await post(
      box,
      '/v1/collections/site/persons',
      form({ id: 'biden', images: [face('identities/biden/2.jpg')] }),
    );
    t.is(biden.res.status, 201);
  } finally {
    await box.close();
  }

  // The database is lost; every box stopped, it is re-created and restored, and the boxes told to copy afresh.
  pgTool('dropdb', [db]);
  pgTool('createdb', ['-O', 'vigil', db]);
  pgTool('pg_restore', ['--no-owner', '-d', db, dump]);
  pgTool('psql', [
    '-d',
    db,
    '-v',
    'ON_ERROR_STOP=1',
    '-c',
    'UPDATE collections SET index_epoch = md5(random()::text || clock_timestamp()::text)',
  ]);

  box = await startTestDaemon({ dir, toml });
  try {
    // The box copies the restored gallery: what the dump had is there, the later write is not.
    const status = await eventually(
      () => call(box, 'GET', '/v1/system'),
      (r) => r.json.fleet?.full_copies >= 1,
    );
    t.true(status.json.fleet.full_copies >= 1, JSON.stringify(status.json.fleet));
    t.is(await search(box, 'identities/obama/1.jpg'), 'obama');
    t.is((await call(box, 'GET', '/v1/collections/site/persons/biden')).status, 404);
    // New writes take new sequence numbers after the restored ones.
    const again = await post(
      box,
      '/v1/collections/site/persons',
      form({ id: 'biden', images: [face('identities/biden/2.jpg')] }),
    );
    t.is(again.res.status, 201, JSON.stringify(again.json));
    t.is(await search(box, 'identities/biden/1.jpg'), 'biden');
  } finally {
    await box.close();
  }
});
