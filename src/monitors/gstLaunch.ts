import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

/**
 * Which of `launches` gst_parse_launch builds (null) or refuses (its message, e.g. `no element "X"`), or
 * `{ error }` when the GStreamer binding does not load. In a child process: GStreamer and the binding print
 * their own warnings for a refused launch on stderr, and a daemon's event loop never waits for it.
 */
export function parseLaunches(launches: string[], timeoutMs = 30_000): Promise<(string | null)[] | { error: string }> {
  let binding: string;
  try {
    binding = createRequire(import.meta.url).resolve('gstreamer-superficial');
  } catch (e) {
    return Promise.resolve({ error: e instanceof Error ? e.message : String(e) });
  }
  const script = `const gst = require(${JSON.stringify(binding)});
const out = JSON.parse(require('fs').readFileSync(0, 'utf8')).map((l) => {
  try { const p = new gst.Pipeline(l); if (p.dispose) p.dispose(); return null; } catch (e) { return String(e.message || e); }
});
process.stdout.write(JSON.stringify(out));`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'ignore'], timeout: timeoutMs });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.once('error', (e) => resolve({ error: e.message }));
    child.once('close', (code, signal) => {
      try {
        resolve(JSON.parse(out) as (string | null)[]);
      } catch {
        resolve({ error: `the GStreamer binding does not load (exit ${code ?? signal})` });
      }
    });
    child.stdin.end(JSON.stringify(launches));
  });
}

/** A pipeline template with its placeholders filled the way a monitor fills them. */
export function exampleLaunch(template: string, maxSide: number): string {
  return template
    .replaceAll('{latency_ms}', '200')
    .replaceAll('{max_fps}', '6')
    .replaceAll('{max_side}', String(maxSide))
    .replaceAll('{motion_height}', '90')
    .replaceAll('{record}', '');
}
