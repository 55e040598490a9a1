/** 0 = IEEE binary16, 1 = bfloat16. */
export type HalfKind = 0 | 1;
export interface ScanResult {
  rows: Uint32Array;
  scores: Float32Array;
}
/**
 * The `k` rows of `data` (`rows` x `dim` 16-bit values) with the largest inner product with `query`
 * (float32, `dim` values), best first; ties go to the lower row. `threads` 0 = all cores.
 */
export function scanTopK(
  data: Uint16Array,
  rows: number,
  dim: number,
  query: Float32Array,
  k: number,
  kind: HalfKind,
  threads: number,
): ScanResult;
/** Encodes float32 values into 16-bit floats, round to nearest even (same results as the JS encoders). */
export function encodeHalf(src: Float32Array, dst: Uint16Array, dstOffset: number, kind: HalfKind): void;
/** Decodes 16-bit floats into float32. */
export function decodeHalf(src: Uint16Array, srcOffset: number, dst: Float32Array, kind: HalfKind): void;
/** Which kernel runs on this CPU: "avx2-f16c", "neon" or "scalar". */
export function kernel(): string;
/**
 * A file range as an ArrayBuffer backed by a private memory map (MAP_PRIVATE, read/write: writes stay in
 * this process, the file is never changed). `populate` maps every page before returning (read faults only,
 * MADV_POPULATE_READ); else pages are faulted in on first touch. The file must not be truncated while mapped.
 */
export function mapFile(path: string, offset: number, length: number, populate: boolean): ArrayBuffer;
