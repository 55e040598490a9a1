import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { modelsDirWith, TEST_KEY } from './daemon.js';
import { REPO } from './shared.js';
import { fileTempDir } from './tempDir.js';

/**
 * The daemon as its own process (`vigil serve`), with everything it prints kept: for tests that look at
 * the real log output, or restart the daemon under a client (same port, same data dir).
 */
export interface DaemonProcess {
  url: string;
  key: string;
  auth: Record<string, string>;
  /** stdout + stderr of every start so far. */
  output(): string;
  stop(): Promise<void>;
  /** SIGKILL: no shutdown code runs. */
  kill(): Promise<void>;
  restart(): Promise<void>;
  /** Starts it again after stop() or kill() (same port, same data dir). */
  start(): Promise<void>;
  dataDir: string;
  /** The running process's id (CPU time from /proc: bench/procStat.ts). */
  pid(): number;
}

export async function startDaemonProcess(opts: { toml?: string; logLevel?: string } = {}): Promise<DaemonProcess> {
  // stop() and start() keep the data dir; it goes when the test process exits.
  const dir = fileTempDir('vigil-proc-');
  const modelsDir = await modelsDirWith('edge_s');
  const file = join(dir, 'server.toml');
  let out = '';
  let child: ChildProcess | null = null;
  let port = 0;
  const write = () =>
    writeFileSync(
      file,
      [
        '[server]',
        'host = "127.0.0.1"',
        `port = ${port}`,
        `data_dir = ${JSON.stringify(join(dir, 'data'))}`,
        `models_dir = ${JSON.stringify(modelsDir)}`,
        `log_level = "${opts.logLevel ?? 'trace'}"`,
        opts.toml ?? '',
      ].join('\n'),
    );

  const start = async () => {
    write();
    const c = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'src/cli/main.ts'), 'serve', '--config', file], {
      cwd: REPO,
      env: { ...process.env, VIGIL_API_KEY: TEST_KEY, UV_THREADPOOL_SIZE: '16' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = c;
    c.stderr!.on('data', (b: Buffer) => {
      out += b.toString();
    });
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`daemon did not start:\n${out}`)), 60_000);
      c.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
        const m = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"listening"/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      c.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`daemon exited with ${code}:\n${out}`));
      });
    });
    port = Number(new URL(url).port);
    for (let i = 0; i < 600; i++) {
      const health = await fetch(`${url}/v1/health`)
        .then((r) => r.json() as Promise<{ status: string }>)
        .catch(() => null);
      if (health?.status === 'ready') return url;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`daemon not ready:\n${out}`);
  };
  const stop = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGTERM');
    const t = setTimeout(() => c.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  };
  const url = await start();
  return {
    url,
    key: TEST_KEY,
    auth: { Authorization: `Bearer ${TEST_KEY}` },
    output: () => out,
    pid: () => (child as ChildProcess | null)?.pid ?? 0,
    stop,
    dataDir: join(dir, 'data'),
    async kill() {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise<void>((r) => c.once('exit', () => r()));
      c.kill('SIGKILL');
      await exited;
    },
    async start() {
      await start();
    },
    async restart() {
      await stop();
      await start();
    },
  };
}

/**
 * `vigil serve --config FILE` as a child process (VIGIL_API_KEY = TEST_KEY, plus `env`); `url` resolves when
 * it logs "listening".
 */
export function startChild(config: string, env: NodeJS.ProcessEnv = {}): { child: ChildProcess; url: Promise<string> } {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(REPO, 'src/cli/main.ts'), 'serve', '--config', config],
    {
      cwd: REPO,
      env: { ...process.env, VIGIL_API_KEY: TEST_KEY, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const url = new Promise<string>((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buf += chunk.toString();
      for (const line of buf.split('\n')) {
        try {
          const rec = JSON.parse(line) as { msg?: string; url?: string };
          if (rec.msg === 'listening' && rec.url) resolve(rec.url);
        } catch {
          /* partial line */
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`daemon exited with ${code}`)));
  });
  return { child, url };
}
