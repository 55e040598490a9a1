import test from 'ava';
import Database from 'better-sqlite3';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as tar from 'tar';
import { createBackup, restoreBackup } from '../../src/cli/backup.js';
import { EXIT } from '../../src/cli/exitCodes.js';
import { runGalleryExport } from '../../src/cli/gallery.js';
import { REPO, TEST_KEY } from '../helpers/daemon.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemonProcess.js';
import { waitFor } from '../helpers/monitors.js';
import { Sink } from '../helpers/shared.js';
import { tempDir } from '../helpers/tempDir.js';
import { startReceiver } from '../helpers/webhookReceiver.js';

/**
 * Backup and restore against a real daemon process (its own pid, the kernel lock it holds on the data dir):
 * a restore never runs under it, --force included, and what the daemon acknowledges stays.
 */
let d: DaemonProcess;
test.before(async () => {
  d = await startDaemonProcess({ logLevel: 'info' });
});
test.after.always(async () => {
  await d?.stop();
});

const MAIN = join(REPO, 'src/cli/main.ts');
const vigil = (args: string[]) => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 60_000,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, VIGIL_API_KEY: TEST_KEY },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};
const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${d.url}${path}`, {
    method,
    headers: { ...d.auth, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, json: (await res.json().catch(() => null)) as any };
};

test.serial(
  'restore refuses while a daemon holds the data dir, --force included: data_dir_locked, exit 15, nothing moved, later writes kept',
  async (t) => {
    const config = join(dirname(d.dataDir), 'server.toml');
    t.is((await api('POST', '/v1/collections', { id: 'before', name: 'before' })).status, 201);
    const archive = join(tempDir(t, 'vigil-live-backup-'), 'box.tar.gz');
    await createBackup(d.dataDir, archive);
    const live = readdirSync(d.dataDir).sort();

    for (const force of [false, true]) {
      const r = vigil(['restore', archive, '--config', config, ...(force ? ['--force'] : [])]);
      t.is(r.code, EXIT.dataDirLocked, `--force ${force}: ${r.stderr}`);
      t.regex(r.stderr, /data_dir_locked/);
      t.regex(r.stderr, /daemon .*is running/i);
      t.regex(r.stderr, /stop it first/);
      t.notRegex(r.stderr, /^\s+at /m);
    }
    // The daemon's files are where they were: nothing moved aside, no second lock file.
    t.deepEqual(readdirSync(d.dataDir).sort(), live);
    t.false(readdirSync(d.dataDir).some((n) => n.startsWith('.before-restore-')));
    t.true(existsSync(join(d.dataDir, 'vigil.db')));

    // The daemon keeps acknowledging writes, and they survive its restart (no file was swapped under it).
    t.is((await api('POST', '/v1/collections', { id: 'after', name: 'after' })).status, 201);
    await d.restart();
    const ids = (await api('GET', '/v1/collections')).json.collections.map((c: { id: string }) => c.id);
    t.true(ids.includes('before') && ids.includes('after'), JSON.stringify(ids));
  },
);

test.serial(
  'backups and gallery exports are 0600 under umask 022; restored files get the modes of the source',
  async (t) => {
    const previous = process.umask(0o022);
    try {
      t.is((await api('POST', '/v1/collections', { id: 'modes', name: 'modes' })).status, 201);
      const dir = tempDir(t, 'vigil-modes-');
      const archive = join(dir, 'box.tar.gz');
      await createBackup(d.dataDir, archive);
      t.is(statSync(archive).mode & 0o777, 0o600);
      const exported = join(dir, 'modes.ndjson');
      t.is(
        await runGalleryExport({ url: d.url, key: TEST_KEY, collection: 'modes', file: exported }, new Sink() as never),
        0,
      );
      t.is(statSync(exported).mode & 0o777, 0o600);

      const target = join(dir, 'restored');
      const manifest = await restoreBackup(target, archive);
      for (const f of manifest.files) {
        const source = statSync(join(d.dataDir, f.path)).mode & 0o777;
        t.is(statSync(join(target, f.path)).mode & 0o777, source, f.path);
      }
      t.is(statSync(join(target, 'vigil.db')).mode & 0o777, 0o600);
      t.is(statSync(join(target, 'monitor-credentials.key')).mode & 0o777, 0o600);
    } finally {
      process.umask(previous);
    }
  },
);

test.serial(
  'webhook signing secrets are encrypted at rest with the box key, plaintext ones of an older box are encrypted at start, backups carry ciphertext only',
  async (t) => {
    const receiver = await startReceiver();
    t.teardown(() => receiver.close());
    const db = () => new Database(join(d.dataDir, 'vigil.db'), { readonly: true });
    const stored = (id: string) => {
      const conn = db();
      try {
        return (conn.prepare('SELECT secret FROM webhook_endpoints WHERE id = ?').get(id) as { secret: string }).secret;
      } finally {
        conn.close();
      }
    };
    const delivered = async (id: string, secret: string) => {
      receiver.secret = secret;
      const before = receiver.received.length;
      t.is((await api('POST', `/v1/webhooks/${id}/test`)).status, 202);
      await waitFor('the test delivery', async () => (receiver.received.length > before ? true : undefined), 15_000);
      t.is(receiver.rejected, 0, 'every delivery is signed with the secret the endpoint was given');
    };

    const hook = await api('POST', '/v1/webhooks', { url: `${receiver.url}/hook` });
    t.is(hook.status, 201, JSON.stringify(hook.json));
    const id = hook.json.webhook.id as string;
    const secret = hook.json.secret as string;
    t.regex(stored(id), /^v1\./);
    t.false(stored(id).includes(secret.slice('whsec_'.length)));
    await delivered(id, secret);

    // An older box kept the secret in plaintext: the next start encrypts it and deliveries keep their signature.
    const old = `whsec_${randomBytes(32).toString('base64')}`;
    await d.stop();
    const rw = new Database(join(d.dataDir, 'vigil.db'));
    rw.prepare('UPDATE webhook_endpoints SET secret = ? WHERE id = ?').run(old, id);
    rw.close();
    await d.start();
    t.regex(stored(id), /^v1\./);
    await delivered(id, old);

    // The backup's database holds neither secret anywhere in its bytes (free space included).
    const dir = tempDir(t, 'vigil-secret-backup-');
    await createBackup(d.dataDir, join(dir, 'box.tar.gz'));
    await tar.x({ file: join(dir, 'box.tar.gz'), cwd: dir });
    const bytes = readFileSync(join(dir, 'vigil.db'));
    for (const s of [secret, old])
      t.false(bytes.includes(s.slice('whsec_'.length)), 'no plaintext secret in the backup');
  },
);

test.serial(
  'a backup killed mid-way leaves its database copy in a recognisable folder, removed at the next start',
  async (t) => {
    // A database big enough that its online copy takes a while (the test's own table, 96 MB).
    await d.stop();
    const rw = new Database(join(d.dataDir, 'vigil.db'));
    rw.exec('CREATE TABLE IF NOT EXISTS test_filler (b BLOB)');
    const insert = rw.prepare('INSERT INTO test_filler VALUES (?)');
    for (let i = 0; i < 96; i++) insert.run(randomBytes(1024 * 1024));
    rw.close();

    const archive = join(tempDir(t, 'vigil-killed-backup-'), 'box.tar.gz');
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `const { createBackup } = await import(${JSON.stringify(join(REPO, 'src/cli/backup.ts'))}); await createBackup(process.argv[1], process.argv[2]);`,
        d.dataDir,
        archive,
      ],
      { cwd: REPO, stdio: 'ignore' },
    );
    const exited = new Promise((r) => child.once('exit', r));
    const staging = () => readdirSync(d.dataDir).filter((n) => n.startsWith('.backup-staging-'));
    // Killed while it copies the database into its staging folder.
    const copying = await waitFor(
      'the backup copying the database',
      async () => {
        const dirs = staging();
        const copy = dirs.length ? join(d.dataDir, dirs[0]!, 'vigil.db') : null;
        return copy && existsSync(copy) && statSync(copy).size > 0 ? dirs[0] : undefined;
      },
      60_000,
      5,
    );
    child.kill('SIGKILL');
    await exited;
    t.true(existsSync(join(d.dataDir, copying)), 'the killed backup left its staging folder');
    t.false(existsSync(archive));
    // And one of an earlier version's name, of a process that is gone too.
    const legacy = join(d.dataDir, `.backup-${child.pid}-1700000000000`);
    mkdirSync(legacy);
    writeFileSync(join(legacy, 'vigil.db'), 'x');

    await d.start();
    t.deepEqual(staging(), []);
    t.false(existsSync(legacy));
    t.regex(d.output(), /removed the staging folders of unfinished backups/);
  },
);
