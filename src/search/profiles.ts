import type { SearchProfile } from '../contract/collections.js';
import { decodeHalfInto, encodeHalfInto, HALF_BF16, HALF_F16 } from './halfScan.js';

/**
 * Search profiles are the quantisation contract of a collection (§4): how a stored vector is encoded and
 * how a score is computed. Rows and persons are ordered by the unclipped score; only the public value is
 * clipped to [-1, 1].
 */

export type Storage = 'f32' | 'f16' | 'bf16' | 'i8';
export type StoredVectors = Float32Array | Uint16Array | Int8Array;

export interface ProfileCodec {
  profile: SearchProfile;
  storage: Storage;
  /** INT8 scale S: q = clamp(round_half_away(x*S), -128, 127), score = int_dot / S^2. */
  scale: number;
  bytesPerScalar: number;
  /**
   * 'f16': every row is also kept as fp16 (2 bytes per value), and the scan's candidates are re-ranked by
   * the float32 query against it (the int8 profiles: their scan score is ~5e-4 off the true cosine, more
   * than the gaps between look-alikes in a large gallery). null: the scan score is the answer.
   */
  rerank: 'f16' | null;
}

/** Re-ranking is the default of the int8 profiles; `rerank: false` keeps their scan score as the answer. */
export function profileCodec(profile: SearchProfile, opts: { rerank?: boolean } = {}): ProfileCodec {
  const int8 = (scale: number): ProfileCodec => ({
    profile,
    storage: 'i8',
    scale,
    bytesPerScalar: 1,
    rerank: (opts.rerank ?? true) ? 'f16' : null,
  });
  switch (profile) {
    case 'fp32_v1':
      return { profile, storage: 'f32', scale: 1, bytesPerScalar: 4, rerank: null };
    case 'fp16_v1':
      return { profile, storage: 'f16', scale: 1, bytesPerScalar: 2, rerank: null };
    case 'bf16_v1':
      return { profile, storage: 'bf16', scale: 1, bytesPerScalar: 2, rerank: null };
    case 'int8_x736_v1':
      return int8(736);
    case 'int8_x1000_v1':
      return int8(1000);
  }
}

/** The codec of a re-rank copy (fp16 rows, scored as stored). */
export const RERANK_F16: ProfileCodec = {
  profile: 'fp16_v1',
  storage: 'f16',
  scale: 1,
  bytesPerScalar: 2,
  rerank: null,
};

/**
 * How far an int8 scan score may be from the float32 cosine and still be expected: 6 standard deviations
 * of the rounding error of query and row (each value off by at most 0.5/S, uniformly: sd 1/(S*sqrt(12)),
 * so the dot of two unit vectors is off by sqrt(2)/(S*sqrt(12)) in sd). A row that scanned below the
 * weakest candidate by more than this cannot outrank the candidates once re-ranked.
 */
export const scanErrorBound = (codec: ProfileCodec): number =>
  codec.storage === 'i8' ? (6 * Math.SQRT2) / (codec.scale * Math.sqrt(12)) : 0;

/** The dot product of a float32 query with an fp16 row (re-ranking), in double precision. */
export function dotHalf(query: Float32Array, row: Uint16Array, offset: number): number {
  const t = halfTable();
  let dot = 0;
  for (let i = 0; i < query.length; i++) dot += query[i]! * t[row[offset + i]!]!;
  return dot;
}

export function allocate(storage: Storage, length: number): StoredVectors {
  switch (storage) {
    case 'f32':
      return new Float32Array(length);
    case 'f16':
    case 'bf16':
      return new Uint16Array(length);
    case 'i8':
      return new Int8Array(length);
  }
}

const roundHalfAway = (x: number) => (x < 0 ? -Math.round(-x) : Math.round(x));

/** Writes `v` encoded for `codec` into `out` at `offset`. */
export function encodeInto(codec: ProfileCodec, v: Float32Array, out: StoredVectors, offset: number): void {
  const n = v.length;
  switch (codec.storage) {
    case 'f32':
      (out as Float32Array).set(v, offset);
      return;
    case 'f16':
    case 'bf16':
      // Native (F16C where available); the same rounding as toHalf/toBfloat16 below (unit-tested).
      encodeHalfInto(v, out as Uint16Array, offset, codec.storage === 'f16' ? HALF_F16 : HALF_BF16);
      return;
    case 'i8':
      for (let i = 0; i < n; i++) out[offset + i] = Math.max(-128, Math.min(127, roundHalfAway(v[i]! * codec.scale)));
      return;
  }
}

export function encode(codec: ProfileCodec, v: Float32Array): StoredVectors {
  const out = allocate(codec.storage, v.length);
  encodeInto(codec, v, out, 0);
  return out;
}

/** Decodes an encoded 16-bit vector into float32 (the query of the native fp16/bf16 scan). */
export function decodeHalfVector(codec: ProfileCodec, data: Uint16Array): Float32Array {
  const out = new Float32Array(data.length);
  decodeHalfInto(data, 0, out, codec.storage === 'f16' ? HALF_F16 : HALF_BF16);
  return out;
}

/** The profile score of two encoded vectors (unclipped). */
export function score(
  codec: ProfileCodec,
  a: StoredVectors,
  aOffset: number,
  b: StoredVectors,
  bOffset: number,
  dim: number,
): number {
  let dot = 0;
  switch (codec.storage) {
    case 'f32':
    case 'i8':
      for (let i = 0; i < dim; i++) dot += a[aOffset + i]! * b[bOffset + i]!;
      return codec.storage === 'i8' ? dot / (codec.scale * codec.scale) : dot;
    case 'f16': {
      const t = halfTable();
      for (let i = 0; i < dim; i++) dot += t[a[aOffset + i]!]! * t[b[bOffset + i]!]!;
      return dot;
    }
    case 'bf16':
      for (let i = 0; i < dim; i++) dot += bfloat16ToFloat(a[aOffset + i]!) * bfloat16ToFloat(b[bOffset + i]!);
      return dot;
  }
}

export const clipSimilarity = (s: number) => Math.min(1, Math.max(-1, s));

// ---- 16-bit floats ----

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 binary16, round to nearest even. */
export function toHalf(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let m = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && m & 1)) m++;
    return sign | m;
  }
  let m = mant >>> 13;
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && m & 1)) {
    m++;
    if (m === 0x400) {
      m = 0;
      e++;
      if (e >= 0x1f) return sign | 0x7c00;
    }
  }
  return sign | (e << 10) | m;
}

export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

let halfLut: Float32Array | null = null;
function halfTable(): Float32Array {
  if (!halfLut) {
    halfLut = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) halfLut[h] = halfToFloat(h);
  }
  return halfLut;
}

/** bfloat16: the top 16 bits of a float32, round to nearest even. */
export function toBfloat16(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  if ((bits & 0x7f800000) === 0x7f800000 && bits & 0x7fffff) return (bits >>> 16) | 0x40;
  const rounded = bits + 0x7fff + ((bits >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

export function bfloat16ToFloat(b: number): number {
  u32[0] = b << 16;
  return f32[0]!;
}
