import type { ExecutionContext } from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Temp directories for tests and helpers: made under the system temp dir (TMPDIR) and removed again, so a
 * run of the suite leaves nothing behind (`make test` runs it with a fresh TMPDIR and fails on leftovers).
 */

/** rm -rf: a dir that is already gone (a second close) is fine. */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * A fresh dir removed when test `t` ends, passed or failed. ava runs teardowns last-in first-out, so a
 * daemon started on it afterwards and closed in a later `t.teardown` is closed before the dir goes.
 */
export function tempDir(t: ExecutionContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => removeDir(dir));
  return dir;
}

const atExit = new Set<string>();
let exitHook = false;

/**
 * A fresh dir removed when this test file's process exits (after its `test.after.always` hooks): for dirs
 * made at file scope or in `test.before`, which `t.teardown` cannot reach, and for helpers' dirs that
 * outlive one start (a restartable broker, a models dir shared by every daemon of the file).
 */
export function fileTempDir(prefix: string): string {
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => {
      for (const dir of atExit) removeDir(dir);
    });
  }
  const dir = mkdtempSync(join(tmpdir(), prefix));
  atExit.add(dir);
  return dir;
}
