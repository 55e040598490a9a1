/**
 * CPU time of a process from Linux's /proc, for the benches that run the daemon, gst-launch or raw
 * pipelines in processes of their own: utime + stime, in seconds (clock ticks of USER_HZ = 100).
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Seconds of CPU from the fields after the command name (it may hold spaces and parentheses). */
function statSeconds(stat: string): number {
  const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** CPU seconds of a whole process so far (every thread, ended ones included). */
export function processCpuSeconds(pid: number): number {
  return statSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/**
 * CPU seconds per thread name (comm) of a process's live threads: `main` is the main thread (the event
 * loop), trailing digits become `#` (GStreamer's task1, task2 ... as one), others as named (node: workers,
 * libuv's pool, V8's helpers; libvips worker; GStreamer's rtpjitterbuffer ...).
 */
export function threadCpuSeconds(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const [tid, { name, seconds }] of threadCpuByTid(pid)) {
    const key = tid === pid ? 'main' : name.replace(/\d+$/, '#');
    out.set(key, (out.get(key) ?? 0) + seconds);
  }
  return out;
}

/** CPU seconds and name (comm) per live thread id of a process. */
export function threadCpuByTid(pid: number): Map<number, { name: string; seconds: number }> {
  const out = new Map<number, { name: string; seconds: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      out.set(Number(tid), { name: st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')), seconds: statSeconds(st) });
    } catch {
      /* the thread ended */
    }
  }
  return out;
}

/**
 * What each thread of a Node process is, from one snapshot of its stacks (gdb, a second's pause; null
 * without gdb or when it cannot attach). Node's own threads are all named "node": this tells V8's platform
 * threads (GC, compilation), libuv's pool, worker threads' JS threads and ONNX Runtime's pools apart.
 */
export function threadRoles(pid: number): Map<number, string> | null {
  // Into a file, not a pipe: when `pid` is this process, its threads are stopped while gdb writes, and a
  // full pipe that nobody reads would stop gdb too.
  const dir = mkdtempSync(join(tmpdir(), 'vigil-roles-'));
  let stacks = '';
  try {
    const fd = openSync(join(dir, 'bt.txt'), 'w');
    const r = spawnSync('gdb', ['-p', String(pid), '-batch', '-nx', '-ex', 'thread apply all bt'], {
      stdio: ['ignore', fd, 'ignore'],
      timeout: 60_000,
    });
    closeSync(fd);
    if (r.status !== 0) return null;
    stacks = readFileSync(join(dir, 'bt.txt'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const roles = new Map<number, string>();
  for (const block of stacks.split(/\n(?=Thread \d+ )/)) {
    const m = /^Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\) "([^"]*)"\)/.exec(block);
    if (!m) continue;
    const tid = Number(m[1]);
    roles.set(
      tid,
      tid === pid
        ? 'main'
        : /Worker::Run\b/.test(block)
          ? 'worker thread JS'
          : /PlatformWorkerThread|DelayedTaskScheduler/.test(block)
            ? 'v8 platform (GC, compile)'
            : /threadpool\.c/.test(block)
              ? 'libuv pool'
              : /libonnxruntime/.test(block)
                ? 'onnxruntime pool'
                : /inspector/.test(block)
                  ? 'inspector'
                  : m[2]!.replace(/\d+$/, '#'),
    );
  }
  return roles;
}
