/**
 * CPU time of a process from Linux's /proc, for the benches that run the daemon, gst-launch or raw
 * pipelines in processes of their own: utime + stime, in seconds (clock ticks of USER_HZ = 100).
 */
import { readdirSync, readFileSync } from 'node:fs';

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
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = tid === String(pid) ? 'main' : st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')).replace(/\d+$/, '#');
      out.set(name, (out.get(name) ?? 0) + statSeconds(st));
    } catch { /* the thread ended */ }
  }
  return out;
}
