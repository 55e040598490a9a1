/** File helpers for the installer: streaming hashes, capped copies, and crash-safe publishing. */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { open, readdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fsyncDir, removeQuietly, tempPathFor } from '../config/durableFile.js';
import { isProcessAlive } from '../system/processes.js';

export { fsyncDir, removeQuietly, tempPathFor };

export interface Digest {
  sha256: string;
  size: number;
}

/** Raised when a stream exceeds its byte cap (a hostile or wrong source must not fill the disk). */
export class TooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`exceeds the ${formatBytes(limit)} limit`);
    this.name = 'TooLargeError';
  }
}

export async function hashFile(path: string): Promise<Digest> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { sha256: hash.digest('hex'), size };
}

/** Hashes, counts and caps bytes as they pass through. */
export function meter(limit: number, onBytes?: (total: number) => void): Transform & { digest(): Digest } {
  const hash = createHash('sha256');
  let size = 0;
  const transform = new Transform({
    transform(chunk: Buffer, _enc, done) {
      size += chunk.length;
      if (size > limit) return done(new TooLargeError(limit));
      hash.update(chunk);
      onBytes?.(size);
      done(null, chunk);
    },
  });
  return Object.assign(transform, { digest: (): Digest => ({ sha256: hash.digest('hex'), size }) });
}

/** Writes a stream to `dest` (truncating), fsyncs it, and returns what was written. */
export async function streamToFile(
  source: Readable | AsyncIterable<Uint8Array>,
  dest: string,
  limit: number,
  onBytes?: (total: number) => void,
): Promise<Digest> {
  const m = meter(limit, onBytes);
  await pipeline(source, m, createWriteStream(dest));
  await fsyncFile(dest);
  return m.digest();
}

export async function fsyncFile(path: string): Promise<void> {
  const fh = await open(path, 'r+');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Matches names made by tempPathFor; the pid tells whether the run that made it is still alive. */
const TEMP_NAME = /^\..+\.(\d+)-[0-9a-f]{8}\.(part|tmp|download)$/;

/** Removes temp files left by interrupted runs (Ctrl-C, crash), but not those of a run in progress. */
export async function removeStaleTemps(dir: string): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const match = TEMP_NAME.exec(name);
    if (match && !isProcessAlive(Number(match[1]))) await removeQuietly(join(dir, name));
  }
}

/** Renames a verified temp file over its final name and makes that durable. */
export async function publish(tempPath: string, finalPath: string): Promise<void> {
  await rename(tempPath, finalPath);
  await fsyncDir(dirname(finalPath));
}

/** tmp + fsync + rename + fsync dir: readers see the old file or the new one, never half of one. */
export async function writeFileAtomic(path: string, data: string): Promise<void> {
  const tmp = tempPathFor(path, 'tmp');
  try {
    await writeFile(tmp, data, { mode: 0o644 });
    await fsyncFile(tmp);
    await publish(tmp, path);
  } catch (err) {
    await removeQuietly(tmp);
    throw err;
  }
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
}
