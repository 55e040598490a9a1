import { closeSync, existsSync, fsyncSync, fstatSync, openSync, readSync, renameSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { CollectionIndex, type Plane } from './collectionIndex.js';
import { mapFileRange } from './halfScan.js';
import type { ProfileCodec, StoredVectors } from './profiles.js';

/**
 * A persisted snapshot of one collection's exact index, so a restart does not rebuild it row by row from
 * SQLite: `<dir>/<collection>.vectors` =
 *   4096-byte header (magic `VIGILVS1`, u32 JSON length, JSON SnapshotHeader, zero padding)
 *   face keys (float64 × rows) · person keys (float64 × rows) · encoded rows (the profile's storage, row-major)
 *   · with `rerank` "f16", the re-rank copy of the rows (fp16, row-major).
 * It is derived data: used only when its revision, collection incarnation, profile, dimension and row
 * count equal what SQLite says now, else the index is built from SQLite as before. Written to a temp
 * file, fsynced, renamed. The keys' CRC-32 is checked at load (a wrong key would name a wrong person);
 * the rows' CRC-32 (seconds at a million rows) is checked afterwards, off the event loop, by
 * snapshotVerifyWorker.ts reading the file back.
 */
export interface SnapshotHeader {
  format: 1;
  collection_id: string;
  index_epoch: string;
  /** The collection's search_revision the rows are exactly. */
  revision: number;
  profile: string;
  /** The re-rank copy the file holds after the rows (absent in files written before there was one: none). */
  rerank?: 'f16' | null;
  dimension: number;
  rows: number;
  keys_crc32: number;
  rows_crc32: number;
  written_at: string;
}

export interface SnapshotExpectation {
  collectionId: string;
  epoch: string;
  revision: number;
  profile: string;
  dimension: number;
  rows: number;
}

const MAGIC = 'VIGILVS1';
const HEADER_BYTES = 4096;
/** Bytes per write/CRC step of a background write: short event-loop slices. */
const CHUNK = 32 * 2 ** 20;

export const snapshotPath = (dir: string, collectionId: string) => join(dir, `${collectionId}.vectors`);

export function removeSnapshot(dir: string, collectionId: string): void {
  rmSync(snapshotPath(dir, collectionId), { force: true });
}

const bytesOf = (v: ArrayBufferView) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

function headerBytes(h: SnapshotHeader): Uint8Array {
  const json = Buffer.from(JSON.stringify(h));
  if (json.length > HEADER_BYTES - 12) throw new Error('snapshot header too long');
  const out = Buffer.alloc(HEADER_BYTES);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(json.length, 8);
  json.copy(out, 12);
  return out;
}

/** The index's parts in file order; the key arrays and row views are the index's own memory (no copies). */
function parts(index: CollectionIndex): { keys: Uint8Array[]; rows: Uint8Array[] } {
  const k = index.keyArrays();
  return {
    keys: [bytesOf(k.faceKeys), bytesOf(k.personKeys)],
    rows: [...index.encodedRowViews('rows'), ...index.encodedRowViews('rerank')].map(bytesOf),
  };
}

/**
 * Writes the snapshot of `index` (at `meta.revision`) in the background: 32 MiB steps, each a CRC update
 * and an async write, so the event loop keeps serving. `stillValid()` is asked at the end: when the
 * index changed meanwhile (rows were moved in memory under the writer) the temp file is dropped.
 * Resolves with the header written, or null when dropped.
 */
export async function writeSnapshot(
  dir: string,
  index: CollectionIndex,
  meta: Omit<SnapshotHeader, 'format' | 'rows' | 'keys_crc32' | 'rows_crc32' | 'written_at' | 'profile' | 'dimension'>,
  stillValid: () => boolean,
): Promise<SnapshotHeader | null> {
  const path = snapshotPath(dir, meta.collection_id);
  const tmp = `${path}.${process.pid}.tmp`;
  const { keys, rows } = parts(index);
  let keysCrc = 0;
  for (const k of keys) keysCrc = crc32(k, keysCrc);
  const header: SnapshotHeader = {
    format: 1,
    ...meta,
    profile: index.codec.profile,
    rerank: index.codec.rerank,
    dimension: index.dimension,
    rows: index.size,
    keys_crc32: keysCrc,
    rows_crc32: 0,
    written_at: new Date().toISOString(),
  };
  const fh = await open(tmp, 'w', 0o600);
  let ok = false;
  try {
    let pos = HEADER_BYTES;
    for (const k of keys) {
      await fh.write(k, 0, k.length, pos);
      pos += k.length;
    }
    let rowsCrc = 0;
    for (const r of rows) {
      for (let at = 0; at < r.length; at += CHUNK) {
        const part = r.subarray(at, Math.min(r.length, at + CHUNK));
        rowsCrc = crc32(part, rowsCrc);
        await fh.write(part, 0, part.length, pos);
        pos += part.length;
      }
    }
    header.rows_crc32 = rowsCrc;
    await fh.write(headerBytes(header), 0, HEADER_BYTES, 0);
    await fh.sync();
    ok = stillValid();
  } finally {
    await fh.close();
    if (!ok) rmSync(tmp, { force: true });
  }
  if (!ok) return null;
  renameSync(tmp, path);
  const d = openSync(dir, 'r');
  try {
    fsyncSync(d);
  } finally {
    closeSync(d);
  }
  return header;
}

function readFully(fd: number, into: Uint8Array, position: number): void {
  for (let done = 0; done < into.length;) {
    const n = readSync(fd, into, done, into.length - done, position + done);
    if (n === 0) throw new Error('the snapshot file ended early');
    done += n;
  }
}

function readHeader(fd: number): SnapshotHeader {
  const head = Buffer.alloc(HEADER_BYTES);
  readFully(fd, head, 0);
  if (head.toString('latin1', 0, 8) !== MAGIC) throw new Error('not a vector snapshot');
  const len = head.readUInt32LE(8);
  if (len > HEADER_BYTES - 12) throw new Error('bad header length');
  return JSON.parse(head.toString('utf8', 12, 12 + len)) as SnapshotHeader;
}

/** Why a snapshot cannot stand for the collection as SQLite has it now, or null. */
export function snapshotProblem(h: SnapshotHeader, want: SnapshotExpectation): string | null {
  if (h.format !== 1) return `unknown format ${String(h.format)}`;
  if (h.collection_id !== want.collectionId || h.index_epoch !== want.epoch)
    return 'the file belongs to another incarnation of the collection';
  if (h.profile !== want.profile || h.dimension !== want.dimension) return 'profile or dimension differs';
  if (h.revision !== want.revision) return `the file is revision ${h.revision}, the database ${want.revision}`;
  if (h.rows !== want.rows) return `the file holds ${h.rows} rows, the database ${want.rows}`;
  return null;
}

export type LoadedSnapshot = { index: CollectionIndex; header: SnapshotHeader } | { problem: string };

/**
 * Reads a snapshot that matches `want` into an exactly sized index: the keys into their Float64Arrays
 * (checked against their CRC), the rows either memory-mapped (`rows: 'map'`, the default: each block a
 * private map of its range of the file, nothing read or copied up front; measured at 1M fp32 rows ~0.1 s
 * instead of seconds) or read into fresh blocks (`rows: 'read'`, one read each). Either way the rows'
 * CRC is checked afterwards by snapshotVerifyWorker.ts.
 */
export function readSnapshot(
  dir: string,
  want: SnapshotExpectation,
  codec: ProfileCodec,
  capacityRows: number,
  threads: number,
  opts: { rows?: 'map' | 'read'; populate?: boolean } = {},
): LoadedSnapshot {
  const path = snapshotPath(dir, want.collectionId);
  if (!existsSync(path)) return { problem: 'no snapshot file' };
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    return { problem: `cannot open the snapshot: ${(e as Error).message}` };
  }
  try {
    const h = readHeader(fd);
    const problem =
      snapshotProblem(h, want) ?? ((h.rerank ?? null) !== codec.rerank ? 'the re-rank copy differs' : null);
    if (problem) return { problem };
    const rowBytes = h.dimension * codec.bytesPerScalar;
    const fineBytes = codec.rerank ? h.dimension * 2 : 0;
    const size = HEADER_BYTES + h.rows * 16 + h.rows * (rowBytes + fineBytes);
    if (fstatSync(fd).size !== size) return { problem: 'the snapshot file has the wrong size' };
    const faceKeys = new Float64Array(h.rows),
      personKeys = new Float64Array(h.rows);
    readFully(fd, bytesOf(faceKeys), HEADER_BYTES);
    readFully(fd, bytesOf(personKeys), HEADER_BYTES + h.rows * 8);
    if (crc32(bytesOf(personKeys), crc32(bytesOf(faceKeys))) !== h.keys_crc32)
      return { problem: 'the snapshot keys fail their checksum' };
    const rowsAt = HEADER_BYTES + h.rows * 16;
    // Where a plane's block starts in the file, and its bytes: the re-rank copy follows all the rows.
    const range = (firstRow: number, rows: number, plane: Plane) =>
      plane === 'rows'
        ? { at: rowsAt + firstRow * rowBytes, bytes: rows * rowBytes }
        : { at: rowsAt + h.rows * rowBytes + firstRow * fineBytes, bytes: rows * fineBytes };
    const index =
      (opts.rows ?? 'map') === 'map'
        ? CollectionIndex.fromBlocks(
            codec,
            h.dimension,
            Math.max(capacityRows, h.rows),
            threads,
            faceKeys,
            personKeys,
            (firstRow, rows, plane) => {
              const r = range(firstRow, rows, plane);
              const ab = mapFileRange(path, r.at, r.bytes, opts.populate ?? false);
              return plane === 'rows' ? typedView(codec, ab) : new Uint16Array(ab);
            },
            undefined,
            true,
          )
        : CollectionIndex.fromEncoded(
            codec,
            h.dimension,
            Math.max(capacityRows, h.rows),
            threads,
            faceKeys,
            personKeys,
            (block, firstRow, rows, plane) => {
              const r = range(firstRow, rows, plane);
              readFully(fd, bytesOf(block).subarray(0, r.bytes), r.at);
            },
          );
    return { index, header: h };
  } catch (e) {
    return { problem: `unreadable snapshot: ${(e as Error).message}` };
  } finally {
    closeSync(fd);
  }
}

function typedView(codec: ProfileCodec, ab: ArrayBuffer): StoredVectors {
  switch (codec.storage) {
    case 'f32':
      return new Float32Array(ab);
    case 'f16':
    case 'bf16':
      return new Uint16Array(ab);
    case 'i8':
      return new Int8Array(ab);
  }
}

/** Where a snapshot's rows (and the re-rank copy after them) are in its file (the verify worker reads them back). */
export function snapshotRowsRange(h: SnapshotHeader, codec: ProfileCodec): { offset: number; length: number } {
  const perRow = h.dimension * (codec.bytesPerScalar + (h.rerank ? 2 : 0));
  return { offset: HEADER_BYTES + h.rows * 16, length: h.rows * perRow };
}

/** Test helper: a snapshot's header as stored. */
export function snapshotHeader(dir: string, collectionId: string): SnapshotHeader | null {
  const path = snapshotPath(dir, collectionId);
  if (!existsSync(path)) return null;
  const fd = openSync(path, 'r');
  try {
    return readHeader(fd);
  } finally {
    closeSync(fd);
  }
}
