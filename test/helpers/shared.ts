import { createServer } from 'node:net';
import { deflateSync } from 'node:zlib';
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

/** A 24-bit bottom-up BMP of an RGB buffer, to test the BMP path end to end. */
export function encodeBmp24(rgb: Uint8Array, width: number, height: number): Buffer {
  const rowBytes = Math.ceil((width * 3) / 4) * 4;
  const out = Buffer.alloc(54 + rowBytes * height);
  out.write('BM', 0);
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54, 10);
  out.writeUInt32LE(40, 14);
  out.writeInt32LE(width, 18);
  out.writeInt32LE(height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(24, 28);
  out.writeUInt32LE(rowBytes * height, 34);
  for (let y = 0; y < height; y++) {
    const row = 54 + (height - 1 - y) * rowBytes;
    for (let x = 0; x < width; x++) {
      const s = (y * width + x) * 3;
      out[row + x * 3] = rgb[s + 2]!;
      out[row + x * 3 + 1] = rgb[s + 1]!;
      out[row + x * 3 + 2] = rgb[s]!;
    }
  }
  return out;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const td = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

/**
 * An all-black 1-bit greyscale PNG written by hand, so sharp never has to produce it: 20000x20000 is
 * 400 Mpx in ~50 KB (a decompression bomb); 1 x 39,000,000 is ~150 KB and slow for libpng to walk.
 */
export function oneBitPng(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 1; // bit depth; colour type 0 = greyscale
  const raw = Buffer.alloc((1 + Math.ceil(width / 8)) * height); // filter byte 0 + zero bits per row
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw, { level: 9 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A loopback port free right now (for servers that must be told their port: mosquitto, PostgreSQL, a restarted daemon). */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Polls `fn` every 50 ms until `ok` holds or `tries` run out, and returns the last value (the caller asserts on it). */
export async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, tries = 400): Promise<T> {
  let v = await fn();
  for (let i = 0; i < tries && !ok(v); i++) {
    await new Promise((r) => setTimeout(r, 50));
    v = await fn();
  }
  return v;
}
