import test from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createBackup } from '../../src/cli/backup.js';
import { EXIT } from '../../src/cli/exitCodes.js';
import { REPO, TEST_KEY } from '../helpers/daemon.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemonProcess.js';
import { tempDir } from '../helpers/tempDir.js';

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
