import test from 'ava';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { EXIT } from '../../src/cli/exitCodes.js';
import { modelsDirWith, REPO, TEST_KEY } from '../helpers/daemon.js';
import { fileTempDir, tempDir } from '../helpers/tempDir.js';

/**
 * `vigil` as a user runs it: every command and subcommand answers --help, and each start-up mistake is
 * one line on stderr (no stack) with its own exit code, before the daemon listens.
 */
const MAIN = join(REPO, 'src/cli/main.ts');

function vigil(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 60_000,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, VIGIL_API_KEY: TEST_KEY, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function config(lines: string[]): string {
  const dir = fileTempDir('vigil-cli-');
  const file = join(dir, 'server.toml');
  // Defaults for [server] keys the case does not set itself (TOML refuses a key twice).
  const defaults = [
    'host = "127.0.0.1"',
    'log_level = "info"',
    `data_dir = ${JSON.stringify(join(dir, 'data'))}`,
  ].filter((d) => !lines.some((l) => l.startsWith(d.split(' ')[0]! + ' ')));
  writeFileSync(file, ['[server]', ...defaults, ...lines].join('\n'));
  return file;
}

const NO_STACK = /^\s+at /m;

test('--help on every command and subcommand: usage on stdout, exit 0, no TypeError', (t) => {
  for (const args of [
    ['--help'],
    ['serve', '--help'],
    ['serve', '-h'],
    ['models', '--help'],
    ['models', 'list', '--help'],
    ['models', 'install', '--help'],
    ['addons', '--help'],
    ['addons', 'install', '--help'],
    ['workspaces', '--help'],
    ['workspaces', 'create', '--help'],
    ['keys', '--help'],
    ['keys', 'create', '--help'],
    ['kiosk', '--help'],
    ['kiosk', 'create', '--help'],
    ['backup', '--help'],
    ['restore', '--help'],
    ['gallery', '--help'],
    ['gallery', 'import', '--help'],
    ['mcp', '--help'],
  ]) {
    const r = vigil(args);
    t.is(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    t.regex(r.stdout, /Usage/, args.join(' '));
    t.notRegex(r.stdout + r.stderr, /TypeError|ERR_PARSE_ARGS/, args.join(' '));
  }
});

test('a wrong option is one usage line with exit 2', (t) => {
  for (const args of [
    ['serve', '--bogus'],
    ['gallery', 'import', 'c', 'f', '--nope'],
    ['mcp', '--frob'],
    ['models', 'list', '--bogus'],
  ]) {
    const r = vigil(args);
    t.is(r.code, EXIT.usage, args.join(' '));
    t.is(r.stderr.trim().split('\n').length, 1, r.stderr);
    t.regex(r.stderr, /usage_error: .*--help/);
    t.notRegex(r.stderr, NO_STACK);
  }
});

test('serve: config errors, unknown model_pack, missing models and an unusable data dir are one line and distinct exit codes, before listening', async (t) => {
  const models = await modelsDirWith('edge_s');
  const cases: [string, string[], number, RegExp][] = [
    [
      'unknown key',
      ['port = 0', '[inference]', 'model_pakc = "edge_s"'],
      EXIT.config,
      /config_invalid: .*unknown key "inference.model_pakc"/,
    ],
    ['bad TOML', ['port = = 1'], EXIT.config, /config_invalid: .*not valid TOML/],
    [
      'unknown pack',
      ['port = 0', `models_dir = ${JSON.stringify(models)}`, '[inference]', 'model_pack = "edge_xl"'],
      EXIT.unknownPack,
      /model_pack_unknown: unknown model pack "edge_xl" \(known packs: .*edge_s/,
    ],
    [
      'missing models',
      ['port = 0', `models_dir = ${JSON.stringify(tempDir(t, 'vigil-empty-models-'))}`],
      EXIT.modelsMissing,
      /model_not_installed: .*vigil models install edge_s/,
    ],
    [
      'data dir under a file',
      ['port = 0', 'data_dir = "/dev/null/vigil"', `models_dir = ${JSON.stringify(models)}`],
      EXIT.dataDir,
      /data_dir_unusable: The data directory \/dev\/null\/vigil is not usable: a part of the path is not a directory/,
    ],
  ];
  for (const [what, lines, code, re] of cases) {
    const r = vigil(['serve', '--config', config(lines)]);
    t.is(r.code, code, `${what}: ${r.stderr}`);
    t.is(r.stderr.trim().split('\n').length, 1, `${what}: ${r.stderr}`);
    t.regex(r.stderr, re, what);
    t.notRegex(r.stderr, NO_STACK, what);
    t.notRegex(r.stdout, /"listening"/, `${what}: never listened`);
  }
  const missingConfig = vigil(['serve', '--config', '/nonexistent/server.toml']);
  t.is(missingConfig.code, EXIT.config);
  t.regex(
    missingConfig.stderr,
    /^vigil: error: config_unreadable: Cannot read config file \/nonexistent\/server.toml: ENOENT\n$/,
  );
  // The line every command prints, and VIGIL_DEBUG=1 adds the stack for a bug report (exit-codes.md).
  const debug = vigil(['serve', '--config', '/nonexistent/server.toml'], { VIGIL_DEBUG: '1' });
  t.is(debug.code, EXIT.config);
  t.regex(debug.stderr, /^vigil: error: config_unreadable: .*\n.*\n\s+at /);
});

test('serve: a data dir this user cannot write is exit 13', (t) => {
  if (process.getuid?.() !== 0 || spawnSync('runuser', ['--help']).status !== 0)
    return t.pass('needs root and runuser');
  const dir = tempDir(t, 'vigil-ro-');
  const file = join(dir, 'server.toml');
  writeFileSync(file, ['[server]', 'port = 0', `data_dir = ${JSON.stringify(join(dir, 'data'))}`].join('\n'));
  // nobody may read the config but not create the data dir in root's 0755 directory.
  chmodSync(dir, 0o755);
  chmodSync(file, 0o644);
  const r = spawnSync(
    'runuser',
    ['-u', 'nobody', '--', process.execPath, '--import', 'tsx', MAIN, 'serve', '--config', file],
    {
      cwd: REPO,
      encoding: 'utf8',
      env: { PATH: process.env.PATH, VIGIL_API_KEY: TEST_KEY, HOME: '/tmp' },
    },
  );
  if (/Cannot find|ERR_MODULE_NOT_FOUND|EACCES.*node_modules/.test(r.stderr))
    return t.pass('nobody cannot read the checkout');
  t.is(r.status, EXIT.dataDir, r.stderr);
  t.regex(r.stderr, /data_dir_unusable: .*permission denied/);
});

test('serve: the port in use is one line and exit 14', async (t) => {
  const models = await modelsDirWith('edge_s');
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  const port = (blocker.address() as { port: number }).port;
  try {
    const r = vigil([
      'serve',
      '--config',
      config([`port = ${port}`, `models_dir = ${JSON.stringify(models)}`, 'log_level = "silent"']),
    ]);
    t.is(r.code, EXIT.portInUse, r.stderr);
    t.regex(
      r.stderr,
      new RegExp(
        `^vigil: error: port_in_use: Cannot listen on 127.0.0.1:${port}: the address is already in use\\. .*\\n$`,
      ),
    );
  } finally {
    blocker.close();
  }
});

test('serve under systemd: READY=1 reaches NOTIFY_SOCKET once the models are loaded (systemd-notify)', async (t) => {
  const models = await modelsDirWith('edge_s');
  const dir = tempDir(t, 'vigil-notify-');
  const socket = join(dir, 'notify.sock');
  const received = join(dir, 'received.txt');
  // A unix datagram receiver standing in for systemd (Node cannot bind one).
  const receiver = spawn(
    'python3',
    [
      '-c',
      `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("bound", flush=True)
with open(sys.argv[2], "w") as f:
    while True:
        data = s.recv(4096).decode()
        f.write(data + "\\n---\\n"); f.flush()
        if "READY=1" in data: break
`,
      socket,
      received,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise<void>((r) => receiver.stdout!.once('data', () => r()));
  const daemon = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      MAIN,
      'serve',
      '--config',
      config(['port = 0', `models_dir = ${JSON.stringify(models)}`, 'log_level = "silent"']),
    ],
    {
      cwd: REPO,
      env: { PATH: process.env.PATH, VIGIL_API_KEY: TEST_KEY, NOTIFY_SOCKET: socket },
      stdio: 'ignore',
    },
  );
  try {
    const exit = await new Promise<number | null>((resolve) => receiver.once('exit', resolve));
    t.is(exit, 0);
    const text = readFileSync(received, 'utf8');
    t.regex(text, /READY=1/);
    t.regex(text, new RegExp(`MAINPID=${daemon.pid}`));
  } finally {
    daemon.kill('SIGTERM');
    receiver.kill();
  }
});
