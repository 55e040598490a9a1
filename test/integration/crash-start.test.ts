import test from 'ava';
import { EXIT } from '../../src/cli/exitCodes.js';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { modelsDirWith, TEST_KEY } from '../helpers/daemon.js';
import { REPO } from '../helpers/shared.js';
import { fileTempDir, tempDir } from '../helpers/tempDir.js';

const canUnshare = spawnSync('unshare', ['--pid', '--fork', 'true']).status === 0;
const canMount = (() => {
  const dir = fileTempDir('vigil-mnt-probe-');
  const ok = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir]).status === 0;
  if (ok) spawnSync('umount', [dir]);
  return ok;
})();

function configFile(dataDir: string, modelsDir: string): string {
  const dir = fileTempDir('vigil-crash-');
  const file = join(dir, 'server.toml');
  writeFileSync(
    file,
    [
      '[server]',
      'host = "127.0.0.1"',
      'port = 0',
      `data_dir = ${JSON.stringify(dataDir)}`,
      `models_dir = ${JSON.stringify(modelsDir)}`,
      'log_level = "info"',
    ].join('\n'),
  );
  return file;
}

const serveArgs = (file: string) => [
  process.execPath,
  '--import',
  'tsx',
  join(REPO, 'src/cli/main.ts'),
  'serve',
  '--config',
  file,
];

/** Resolves with the output once the daemon logs "listening"; rejects with it if the process exits first. */
function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no "listening" in 60 s:\n${out}`)), 60_000);
    const onData = (b: Buffer) => {
      out += b.toString();
      if (/"msg":"listening"/.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code ?? signal}:\n${out}`));
    });
  });
}

/** The pid (in our namespace) of the process `unshare --fork` started as PID 1 of its new namespace. */
function namespaceInit(unsharePid: number): number {
  for (let i = 0; i < 100; i++) {
    const kids = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
    if (kids.length) return kids[0]!;
  }
  throw new Error('unshare has no child');
}

test('a daemon SIGKILLed as PID 1 of a PID namespace starts again as PID 1 (the lock dies with the process)', async (t) => {
  if (!canUnshare) {
    t.log('SKIPPED: unshare --pid --fork is not permitted here');
    t.pass();
    return;
  }
  const dataDir = join(tempDir(t, 'vigil-crash-data-'), 'data');
  const file = configFile(dataDir, await modelsDirWith('edge_s'));
  for (let round = 0; round < 3; round++) {
    const child = spawn('unshare', ['--pid', '--fork', '--kill-child', ...serveArgs(file)], {
      cwd: REPO,
      env: { ...process.env, VIGIL_API_KEY: TEST_KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const out = await listening(child);
      t.notRegex(out, /data_dir_locked/, `round ${round}`);
      t.is(readFileSync(join(dataDir, 'vigil.lock.pid'), 'utf8'), '1', 'the daemon is PID 1 in its namespace');
      const exited = new Promise((r) => child.once('exit', r));
      process.kill(namespaceInit(child.pid!), 'SIGKILL');
      await exited;
    } finally {
      child.kill('SIGKILL');
    }
  }
});

test('a read-only data dir at start is one line on stderr, exit code 13 (a data-dir problem), no stack', async (t) => {
  if (!canMount) {
    t.log('SKIPPED: mounting a tmpfs is not permitted here');
    t.pass();
    return;
  }
  const mnt = tempDir(t, 'vigil-ro-');
  t.is(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]).status, 0);
  try {
    mkdirSync(join(mnt, 'data'));
    t.is(spawnSync('mount', ['-o', 'remount,ro', mnt]).status, 0);
    const file = configFile(join(mnt, 'data'), await modelsDirWith('edge_s'));
    const r = spawnSync(serveArgs(file)[0]!, serveArgs(file).slice(1), {
      cwd: REPO,
      env: { ...process.env, VIGIL_API_KEY: TEST_KEY },
      encoding: 'utf8',
      timeout: 60_000,
    });
    t.is(r.status, EXIT.dataDir, r.stderr);
    const lines = r.stderr.trim().split('\n');
    t.is(lines.length, 1, r.stderr);
    t.regex(
      lines[0]!,
      /^vigil: error: data_dir_unusable: The data directory .* is not usable: the file system is read-only/,
    );
    t.notRegex(r.stderr, /\n\s+at /);
  } finally {
    spawnSync('umount', [mnt]);
  }
});
