/**
 * Crash-safe file replacement, shared by the model installer (src/models/fsutil.ts re-exports these) and the
 * config file writer: a hidden temp sibling, fsync, rename, fsync of the directory.
 */
import { randomBytes } from 'node:crypto';
import { open, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Makes a rename durable; some platforms cannot open directories, and that is not worth failing for. */
export async function fsyncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    // best effort
  } finally {
    await fh?.close();
  }
}

/** A hidden, unique sibling name, so partial files never look like real ones and runs never collide. */
export function tempPathFor(target: string, suffix = 'part'): string {
  return join(dirname(target), `.${basename(target)}.${process.pid}-${randomBytes(4).toString('hex')}.${suffix}`);
}

export async function removeQuietly(path: string): Promise<void> {
  await rm(path, { force: true }).catch(() => undefined);
}
