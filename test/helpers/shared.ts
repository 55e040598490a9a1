import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Paths and small helpers every test file can use without starting a daemon. */
export const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
/** ../shared beside the checkout (CI has it there too); VIGIL_SHARED_DIR overrides. */
export const SHARED = process.env.VIGIL_SHARED_DIR ?? resolve(REPO, '../shared');
/** Read-only and flat: the layout of a model mirror. */
export const MODELS_MIRROR = resolve(SHARED, 'models');
/** With a trailing slash, so `FACES + 'identities/…'` works. */
export const FACES = `${resolve(SHARED, 'fixtures/faces')}/`;

/** A writable stream stand-in that keeps what was written (for CLI and progress output). */
export class Sink {
  text = '';
  constructor(readonly isTTY = false) {}
  write(chunk: string): boolean {
    this.text += chunk;
    return true;
  }
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE), as PNG chunks and zip members need it. */
export function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
