import { createRequire } from 'node:module';
import type { HalfKind, ScanResult } from 'vigil-vector-scan';

/**
 * The native fp16/bf16 kernel (native/vector-scan, built by `npm ci` with node-gyp): an exact top-k
 * inner-product scan that widens 16-bit rows in SIMD registers, and fp16/bf16 encoders. usearch's
 * exactSearch cannot scan 16-bit rows, and decoding them in JS made fp16 12x slower than fp32.
 */
const native = createRequire(import.meta.url)('vigil-vector-scan') as typeof import('vigil-vector-scan');

export type { HalfKind };
export const HALF_F16: HalfKind = 0;
export const HALF_BF16: HalfKind = 1;

export function scanHalfTopK(
  data: Uint16Array,
  rows: number,
  dim: number,
  query: Float32Array,
  k: number,
  kind: HalfKind,
  threads: number,
): ScanResult {
  return native.scanTopK(data, rows, dim, query, k, kind, threads);
}

export function encodeHalfInto(src: Float32Array, dst: Uint16Array, offset: number, kind: HalfKind): void {
  native.encodeHalf(src, dst, offset, kind);
}

export function decodeHalfInto(src: Uint16Array, offset: number, dst: Float32Array, kind: HalfKind): void {
  native.decodeHalf(src, offset, dst, kind);
}

/** The kernel in use on this CPU ("avx2-f16c", "neon" or "scalar"), for /v1/system and the bench. */
export const halfKernel = (): string => native.kernel();

/**
 * A file range as an ArrayBuffer backed by a private memory map (native mapFile): pages come from the
 * page cache on first touch (or all at once with `populate`), writes stay in this process.
 */
export function mapFileRange(path: string, offset: number, length: number, populate: boolean): ArrayBuffer {
  return native.mapFile(path, offset, length, populate);
}
