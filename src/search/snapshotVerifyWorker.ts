/**
 * Worker thread entry: the CRC-32 of a vector snapshot's rows, read back from the file in 32 MiB steps,
 * compared with its header (vectorSnapshot.ts). Runs after the snapshot was loaded and is serving, so a
 * damaged file costs no start-up time and is still caught.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { crc32 } from 'node:zlib';

/** fd: the file as it was loaded (opened by the parent at load; a snapshot written since replaced the path). */
const job = workerData as { path: string; fd?: number; offset: number; length: number; expected: number };
let result: boolean;
try {
  const fd = job.fd ?? openSync(job.path, 'r');
  try {
    const buf = Buffer.allocUnsafe(32 * 2 ** 20);
    let crc = 0;
    for (let done = 0; done < job.length;) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, job.length - done), job.offset + done);
      if (n === 0) break;
      crc = crc32(buf.subarray(0, n), crc);
      done += n;
    }
    result = crc === job.expected;
  } finally {
    if (job.fd === undefined) closeSync(fd);
  }
} catch {
  result = false;
}
parentPort!.postMessage(result);
