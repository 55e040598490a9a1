import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';

/**
 * A 32-byte secret in the data dir: created once (0600, O_EXCL, so two starts cannot both write one),
 * then only read. The caller judges what it read, because a lost key means different things to each.
 */
export function readOrCreateSecretKey(path: string): Buffer {
  try {
    const fd = openSync(path, 'wx', 0o600);
    try {
      writeSync(fd, randomBytes(32));
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  return readFileSync(path);
}
