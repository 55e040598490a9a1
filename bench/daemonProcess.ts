import { spawnSync } from 'node:child_process';
import { withDaemonAllocator } from '../src/system/allocator.js';

/**
 * Runs this bench script again, once, in a process started the way the daemon is: on its allocator
 * (BENCH_MALLOC=glibc: glibc's malloc, for comparisons), with `nodeFlags` and `env` added. Returns only in
 * that second process; the first exits with its status. Children the bench starts inherit the marker and
 * the allocator, so they are not started twice.
 */
export function rerunAsDaemon(opts: { nodeFlags?: readonly string[]; env?: NodeJS.ProcessEnv } = {}): void {
  if (process.env.VIGIL_BENCH_STARTED) return;
  const env = { ...process.env, ...opts.env, VIGIL_BENCH_STARTED: '1' };
  const r = spawnSync(process.execPath, [...(opts.nodeFlags ?? []), ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: process.env.BENCH_MALLOC === 'glibc' ? env : withDaemonAllocator(env),
  });
  process.exit(r.status ?? 1);
}
