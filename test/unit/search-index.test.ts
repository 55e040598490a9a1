import test from 'ava';
import { CollectionIndex, type IndexRow, type RowHit } from '../../src/search/collectionIndex.js';
import { SEARCH_PROFILES, type SearchProfile } from '../../src/contract/collections.js';
import {
  bfloat16ToFloat,
  clipSimilarity,
  encode,
  halfToFloat,
  profileCodec,
  score,
  toBfloat16,
  toHalf,
} from '../../src/search/profiles.js';
import { seededRandom } from '../../bench/seededRandom.js';

// ---- helpers ----

const prng = seededRandom;

function gaussian(rand: () => number): number {
  const u = Math.max(rand(), 1e-12),
    v = rand();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

function normalize(v: Float32Array): Float32Array {
  let sq = 0;
  for (const x of v) sq += x * x;
  const n = Math.sqrt(sq);
  return v.map((x) => x / n);
}

function randomUnit(rand: () => number, dim: number): Float32Array {
  const v = new Float32Array(dim);
  for (let i = 0; i < dim; i++) v[i] = gaussian(rand);
  return normalize(v);
}

const dot = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
};

/** Best face per person by `scoreOf`, best first (ties: lower person key), at most `limit` persons. */
function bruteForce(rows: IndexRow[], scoreOf: (v: Float32Array) => number, limit: number, exclude?: number): RowHit[] {
  const best = new Map<number, RowHit>();
  for (const r of rows) {
    if (r.personKey === exclude) continue;
    const s = scoreOf(r.vector);
    const prev = best.get(r.personKey);
    if (!prev || s > prev.score || (s === prev.score && r.faceKey < prev.faceKey))
      best.set(r.personKey, { faceKey: r.faceKey, personKey: r.personKey, score: s });
  }
  return [...best.values()].sort((a, b) => b.score - a.score || a.personKey - b.personKey).slice(0, limit);
}

/** Independent reference of the INT8 encoding: clamp(round_half_away_from_zero(float32(x) * S), -128, 127). */
function refInt8(x: number, scale: number): number {
  const y = Math.fround(x) * scale;
  const r = Math.sign(y) * Math.floor(Math.abs(y) + 0.5);
  return Math.max(-128, Math.min(127, r)) + 0; // + 0 turns -0 into 0
}

const i8 = (profile: SearchProfile, values: number[]) =>
  Array.from(encode(profileCodec(profile), Float32Array.from(values)) as Int8Array);

const f32bits = (x: number) => new Uint32Array(Float32Array.of(x).buffer)[0]!;
const fromBits = (bits: number) => new Float32Array(Uint32Array.of(bits).buffer)[0]!;

// ---- profile codecs ----

test('profileCodec: storage, scale and bytes per scalar of every profile', (t) => {
  t.deepEqual(SEARCH_PROFILES, ['fp32_v1', 'fp16_v1', 'bf16_v1', 'int8_x736_v1', 'int8_x1000_v1']);
  const none = { rerank: null };
  t.deepEqual(profileCodec('fp32_v1'), { profile: 'fp32_v1', storage: 'f32', scale: 1, bytesPerScalar: 4, ...none });
  t.deepEqual(profileCodec('fp16_v1'), { profile: 'fp16_v1', storage: 'f16', scale: 1, bytesPerScalar: 2, ...none });
  t.deepEqual(profileCodec('bf16_v1'), { profile: 'bf16_v1', storage: 'bf16', scale: 1, bytesPerScalar: 2, ...none });
  // The int8 profiles keep an fp16 re-rank copy unless told not to.
  t.deepEqual(profileCodec('int8_x736_v1'), {
    profile: 'int8_x736_v1',
    storage: 'i8',
    scale: 736,
    bytesPerScalar: 1,
    rerank: 'f16',
  });
  t.deepEqual(profileCodec('int8_x1000_v1', { rerank: false }), {
    profile: 'int8_x1000_v1',
    storage: 'i8',
    scale: 1000,
    bytesPerScalar: 1,
    rerank: null,
  });
  t.true(encode(profileCodec('int8_x736_v1'), new Float32Array(3)) instanceof Int8Array);
  t.true(encode(profileCodec('fp16_v1'), new Float32Array(3)) instanceof Uint16Array);
  t.true(encode(profileCodec('bf16_v1'), new Float32Array(3)) instanceof Uint16Array);
  t.true(encode(profileCodec('fp32_v1'), new Float32Array(3)) instanceof Float32Array);
});

test('int8_x736: exact half cases round away from zero in both signs', (t) => {
  // 1/64 * 736 = 11.5, 3/64 * 736 = 34.5, 5/64 * 736 = 57.5, 7/64 * 736 = 80.5 (all exact in float32 and double).
  t.deepEqual(
    i8('int8_x736_v1', [1 / 64, -1 / 64, 3 / 64, -3 / 64, 5 / 64, -5 / 64, 7 / 64, -7 / 64]),
    [12, -12, 35, -35, 58, -58, 81, -81],
  );
  // Just either side of a half.
  t.deepEqual(i8('int8_x736_v1', [10.49 / 736, 10.51 / 736, -10.49 / 736, -10.51 / 736]), [10, 11, -10, -11]);
  t.deepEqual(i8('int8_x736_v1', [0, -0, 0.49 / 736, -0.49 / 736]), [0, 0, 0, 0]);
});

test('int8_x736: saturates at -128 and 127', (t) => {
  t.deepEqual(i8('int8_x736_v1', [1, -1, 0.5, -0.5]), [127, -128, 127, -128]);
  t.deepEqual(
    i8('int8_x736_v1', [127 / 736, 128 / 736, -128 / 736, -129 / 736, 127.4 / 736, -128.4 / 736]),
    [127, 127, -128, -128, 127, -128],
  );
  t.deepEqual(i8('int8_x736_v1', [126.6 / 736, -127.6 / 736]), [127, -128]);
});

test('int8_x1000: half cases and saturation with scale 1000', (t) => {
  // 1/16 * 1000 = 62.5 exactly; round-half-even would give 62.
  t.deepEqual(
    i8('int8_x1000_v1', [1 / 16, -1 / 16, 0.01, -0.01, 0.127, 0.128, -0.128, -0.129, 1, -1]),
    [63, -63, 10, -10, 127, 127, -128, -128, 127, -128],
  );
});

test('int8 encoding matches the reference formula on random values', (t) => {
  const rand = prng(11);
  for (const profile of ['int8_x736_v1', 'int8_x1000_v1'] as const) {
    const S = profileCodec(profile).scale;
    const xs = Array.from({ length: 2000 }, () => (rand() * 2 - 1) * 0.2);
    const got = i8(profile, xs);
    t.deepEqual(
      got,
      xs.map((x) => refInt8(x, S)),
      profile,
    );
  }
});

test('int8 scores divide the integer dot product by S^2 (541696 and 1,000,000)', (t) => {
  const c736 = profileCodec('int8_x736_v1');
  const a = encode(c736, Float32Array.from([10 / 736, 20 / 736, -3 / 736]));
  const b = encode(c736, Float32Array.from([5 / 736, -7 / 736, 11 / 736]));
  t.deepEqual(Array.from(a), [10, 20, -3]);
  t.deepEqual(Array.from(b), [5, -7, 11]);
  // 50 - 140 - 33 = -123
  t.is(score(c736, a, 0, b, 0, 3), -123 / 541696);
  t.is(score(c736, a, 0, a, 0, 3), 509 / 541696);
  const c1000 = profileCodec('int8_x1000_v1');
  const p = encode(c1000, Float32Array.from([0.01, 0.02, -0.003]));
  const q = encode(c1000, Float32Array.from([0.005, -0.007, 0.011]));
  t.deepEqual(Array.from(p), [10, 20, -3]);
  t.is(score(c1000, p, 0, q, 0, 3), -123 / 1_000_000);
  // Offsets select rows of a matrix.
  const m = encode(c736, Float32Array.from([0, 0, 0, 10 / 736, 20 / 736, -3 / 736]));
  t.is(score(c736, m, 3, b, 0, 3), -123 / 541696);
  // The same through an index without a re-rank copy: scorePair quantises both sides.
  const idx = new CollectionIndex(profileCodec('int8_x736_v1', { rerank: false }), 3, 10);
  t.is(
    idx.scorePair(Float32Array.from([10 / 736, 20 / 736, -3 / 736]), Float32Array.from([5 / 736, -7 / 736, 11 / 736])),
    -123 / 541696,
  );
});

test('clipSimilarity clamps to [-1, 1]', (t) => {
  t.is(clipSimilarity(1.0000001), 1);
  t.is(clipSimilarity(-1.5), -1);
  t.is(clipSimilarity(0.25), 0.25);
});

// ---- 16-bit floats ----

test('toHalf: representative values', (t) => {
  const cases: [number, number][] = [
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-1, 0xbc00],
    [2, 0x4000],
    [-2, 0xc000],
    [0.5, 0x3800],
    [0.1, 0x2e66],
    [1 / 3, 0x3555],
    [65504, 0x7bff],
    [-65504, 0xfbff],
    [2 ** -14, 0x0400],
    [2 ** -24, 0x0001],
    [-(2 ** -24), 0x8001],
    [1023 * 2 ** -24, 0x03ff],
    [512 * 2 ** -24, 0x0200],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
  ];
  for (const [x, h] of cases) t.is(toHalf(x), h, `toHalf(${x})`);
  t.is(toHalf(NaN) & 0x7c00, 0x7c00);
  t.not(toHalf(NaN) & 0x03ff, 0, 'NaN stays NaN');
  t.true(Number.isNaN(halfToFloat(toHalf(NaN))));
});

test('toHalf: round to nearest, ties to even (normal and subnormal)', (t) => {
  // Between 1 (m=0) and 1+2^-10 (m=1): tie -> even (m=0).
  t.is(toHalf(1 + 2 ** -11), 0x3c00);
  // Between 1+2^-10 (m=1) and 1+2^-9 (m=2): tie -> even (m=2).
  t.is(toHalf(1 + 3 * 2 ** -11), 0x3c02);
  // Just above / below a tie.
  t.is(toHalf(1 + 2 ** -11 + 2 ** -20), 0x3c01);
  t.is(toHalf(1 + 3 * 2 ** -11 - 2 ** -20), 0x3c01);
  // Mantissa carry into the exponent: 2 - 2^-11 is a tie between 0x3bff (odd) and 2.0.
  t.is(toHalf(2 - 2 ** -11), 0x4000);
  // Subnormals: 2^-25 is a tie between 0 and 2^-24 -> 0; 3*2^-25 a tie between 1 and 2 ulps -> 2.
  t.is(toHalf(2 ** -25), 0x0000);
  t.is(toHalf(-(2 ** -25)), 0x8000);
  t.is(toHalf(3 * 2 ** -25), 0x0002);
  t.is(toHalf(1.5 * 2 ** -25), 0x0001);
  t.is(toHalf(2 ** -26), 0x0000);
  t.is(toHalf(5 * 2 ** -25), 0x0002, '2.5 ulps -> 2 (even)');
  t.is(toHalf(7 * 2 ** -25), 0x0004, '3.5 ulps -> 4 (even)');
  // Largest subnormal + half ulp carries into the smallest normal.
  t.is(toHalf(1023.5 * 2 ** -24), 0x0400);
  t.is(toHalf(1022.5 * 2 ** -24), 0x03fe);
});

test('toHalf: overflow to infinity', (t) => {
  t.is(toHalf(65519), 0x7bff, 'below the tie stays at max');
  t.is(toHalf(65520), 0x7c00, 'tie between 65504 (odd) and 65536 -> Inf');
  t.is(toHalf(-65520), 0xfc00);
  t.is(toHalf(70000), 0x7c00);
  t.is(toHalf(1e30), 0x7c00);
  t.is(toHalf(-1e30), 0xfc00);
  t.is(halfToFloat(0x7c00), Infinity);
  t.is(halfToFloat(0xfc00), -Infinity);
});

test('halfToFloat: representative values and exhaustive round trip of every non-NaN half', (t) => {
  t.is(halfToFloat(0x3c00), 1);
  t.is(halfToFloat(0x3555), 0.333251953125);
  t.is(halfToFloat(0x7bff), 65504);
  t.is(halfToFloat(0x0001), 2 ** -24);
  t.is(halfToFloat(0x03ff), 1023 * 2 ** -24);
  t.is(halfToFloat(0x0400), 2 ** -14);
  t.true(Object.is(halfToFloat(0x8000), -0));
  t.true(Number.isNaN(halfToFloat(0x7e00)));
  t.true(Number.isNaN(halfToFloat(0x7c01)));
  let bad = 0;
  for (let h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) === 0x7c00 && h & 0x3ff) continue; // NaN
    if (toHalf(halfToFloat(h)) !== h) bad++;
  }
  t.is(bad, 0);
});

test('toHalf picks the nearest half for random floats (ties to even)', (t) => {
  const rand = prng(5);
  let bad = 0;
  for (let i = 0; i < 20000; i++) {
    const x = Math.fround((rand() * 2 - 1) * 2 ** Math.floor(rand() * 40 - 26));
    const h = toHalf(x);
    const v = halfToFloat(h);
    const mag = h & 0x7fff;
    const err = Math.abs(x - v);
    for (const nb of [mag - 1, mag + 1]) {
      if (nb < 0 || nb > 0x7bff) continue;
      const w = halfToFloat((h & 0x8000) | nb);
      const e2 = Math.abs(x - w);
      if (e2 < err || (e2 === err && (mag & 1) === 1)) bad++;
    }
  }
  t.is(bad, 0);
});

test('toBfloat16: truncation to the top 16 bits with round to nearest even', (t) => {
  t.is(toBfloat16(1), 0x3f80);
  t.is(toBfloat16(-1), 0xbf80);
  t.is(toBfloat16(0), 0x0000);
  t.is(toBfloat16(-0), 0x8000);
  // Ties: 1 + 2^-8 lies between 0x3f80 (even) and 0x3f81 -> 0x3f80; 1 + 3*2^-8 between 0x3f81 (odd) and 0x3f82 -> 0x3f82.
  t.is(toBfloat16(1 + 2 ** -8), 0x3f80);
  t.is(toBfloat16(1 + 3 * 2 ** -8), 0x3f82);
  t.is(toBfloat16(-(1 + 3 * 2 ** -8)), 0xbf82);
  t.is(toBfloat16(fromBits(0x3f808001)), 0x3f81, 'just above a tie rounds up');
  t.is(toBfloat16(fromBits(0x3f817fff)), 0x3f81, 'just below a tie rounds down');
  t.is(toBfloat16(Infinity), 0x7f80);
  t.is(toBfloat16(-Infinity), 0xff80);
  t.is(toBfloat16(fromBits(0x7f7fffff)), 0x7f80, 'float32 max rounds to infinity');
  t.true(Number.isNaN(bfloat16ToFloat(toBfloat16(NaN))));
  t.true(Number.isNaN(bfloat16ToFloat(toBfloat16(fromBits(0x7f800001)))), 'a NaN with only low payload bits stays NaN');
  t.is(bfloat16ToFloat(0x3f80), 1);
  t.is(bfloat16ToFloat(0xbf82), -(1 + 2 ** -6));
  t.is(bfloat16ToFloat(0x0001), fromBits(0x00010000));
});

test('toBfloat16 picks the nearest bfloat16 for random floats (ties to even)', (t) => {
  const rand = prng(9);
  let bad = 0;
  for (let i = 0; i < 20000; i++) {
    const x = Math.fround((rand() * 2 - 1) * 2 ** Math.floor(rand() * 60 - 30));
    const bits = f32bits(x);
    const b = toBfloat16(x);
    const lower = bits >>> 16,
      rest = bits & 0xffff;
    const expected = rest > 0x8000 || (rest === 0x8000 && (lower & 1) === 1) ? lower + 1 : lower;
    if (b !== expected) bad++;
  }
  t.is(bad, 0);
});

// ---- CollectionIndex ----

const unitAxis = (dim: number, i: number, s = 1) => {
  const v = new Float32Array(dim);
  v[i] = s;
  return v;
};
/** a*e0 + sqrt(1-a^2)*e_j: scores exactly `a` against e0 in fp32 (up to float32 rounding of the components). */
const atCos = (dim: number, a: number, j: number) => {
  const v = new Float32Array(dim);
  v[0] = a;
  v[j] = Math.sqrt(1 - a * a);
  return v;
};

test('new index: empty, allocation min(capacity, 256)', (t) => {
  const small = new CollectionIndex(profileCodec('fp32_v1'), 8, 10);
  t.is(small.size, 0);
  t.is(small.capacity, 10);
  t.is(small.allocatedRows, 10);
  t.deepEqual(small.searchPersons(unitAxis(8, 0), 5), []);
  const big = new CollectionIndex(profileCodec('fp16_v1'), 8, 100000);
  t.is(big.allocatedRows, 256);
  t.is(big.bytes, 256 * 8 * 2 + 256 * 8 * 2);
});

test('add/remove: a removed face is never returned and the moved last row stays searchable', (t) => {
  for (const profile of SEARCH_PROFILES) {
    const dim = 8;
    const idx = new CollectionIndex(profileCodec(profile), dim, 16);
    // Face k (10..14) points along axis k-10 (scaled so int8 does not saturate), person = k.
    const s = profile.startsWith('int8') ? 0.1 : 1;
    idx.add([10, 11, 12, 13, 14].map((k) => ({ faceKey: k, personKey: 100 + k, vector: unitAxis(dim, k - 10, s) })));
    t.is(idx.size, 5);
    t.is(idx.remove([11]), 1, profile); // row 1 <- row 4 (face 14)
    t.is(idx.size, 4);
    t.false(idx.has(11));
    t.true(idx.has(14));
    t.is(idx.remove([11, 999]), 0, 'unknown keys are ignored');
    for (const k of [10, 12, 13, 14]) {
      const hits = idx.searchPersons(unitAxis(dim, k - 10, s), 1);
      t.is(hits[0]?.faceKey, k, `${profile}: face ${k} is found after the swap`);
      t.is(hits[0]?.personKey, 100 + k, `${profile}: the person key moved with the row`);
    }
    const all = idx.searchPersons(unitAxis(dim, 1, s), 10);
    t.deepEqual(all.map((h) => h.faceKey).sort(), [10, 12, 13, 14], `${profile}: the removed face never comes back`);
    // Remove the last row (no swap) and the first.
    t.is(idx.remove([14, 10]), 2);
    t.deepEqual(
      idx
        .searchPersons(unitAxis(dim, 0, s), 10)
        .map((h) => h.faceKey)
        .sort(),
      [12, 13],
    );
    // Slots are reused: re-adding a removed key works.
    idx.add([{ faceKey: 11, personKey: 111, vector: unitAxis(dim, 5, s) }]);
    t.is(idx.searchPersons(unitAxis(dim, 5, s), 1)[0]?.faceKey, 11);
    t.is(idx.size, 3);
  }
});

test('add beyond capacity throws and adds nothing', (t) => {
  const idx = new CollectionIndex(profileCodec('fp32_v1'), 4, 3);
  idx.add([
    { faceKey: 1, personKey: 1, vector: unitAxis(4, 0) },
    { faceKey: 2, personKey: 2, vector: unitAxis(4, 1) },
  ]);
  t.throws(
    () =>
      idx.add([
        { faceKey: 3, personKey: 3, vector: unitAxis(4, 2) },
        { faceKey: 4, personKey: 4, vector: unitAxis(4, 3) },
      ]),
    { message: /capacity 3 exceeded/ },
  );
  t.is(idx.size, 2);
  t.false(idx.has(3));
  t.false(idx.has(4));
  t.deepEqual(
    idx
      .searchPersons(unitAxis(4, 2), 10)
      .map((h) => h.faceKey)
      .sort(),
    [1, 2],
  );
  idx.add([{ faceKey: 3, personKey: 3, vector: unitAxis(4, 2) }]);
  t.is(idx.size, 3);
  t.throws(() => idx.add([{ faceKey: 5, personKey: 5, vector: unitAxis(4, 3) }]));
  t.is(idx.size, 3);
});

test('a duplicate face key (already indexed) throws and adds nothing', (t) => {
  const idx = new CollectionIndex(profileCodec('fp32_v1'), 4, 10);
  idx.add([{ faceKey: 1, personKey: 1, vector: unitAxis(4, 0) }]);
  t.throws(
    () =>
      idx.add([
        { faceKey: 2, personKey: 2, vector: unitAxis(4, 1) },
        { faceKey: 1, personKey: 9, vector: unitAxis(4, 2) },
      ]),
    { message: /face 1 is already indexed/ },
  );
  t.is(idx.size, 1);
  t.false(idx.has(2));
  const hits = idx.searchPersons(unitAxis(4, 2), 10);
  t.deepEqual(
    hits.map((h) => [h.faceKey, h.personKey]),
    [[1, 1]],
  );
});

test('a wrong vector length throws and adds nothing', (t) => {
  const idx = new CollectionIndex(profileCodec('fp32_v1'), 4, 10);
  t.throws(
    () =>
      idx.add([
        { faceKey: 1, personKey: 1, vector: unitAxis(4, 0) },
        { faceKey: 2, personKey: 2, vector: new Float32Array(3) },
      ]),
    { message: /3 values/ },
  );
  t.is(idx.size, 0);
  t.false(idx.has(1));
  t.throws(() => idx.searchPersons(new Float32Array(5), 1), { message: /query has 5 values/ });
});

test('a face key repeated inside one add batch throws and adds nothing', (t) => {
  const idx = new CollectionIndex(profileCodec('fp32_v1'), 4, 10);
  const err = t.throws(() =>
    idx.add([
      { faceKey: 7, personKey: 1, vector: unitAxis(4, 0) },
      { faceKey: 7, personKey: 1, vector: unitAxis(4, 1) },
    ]),
  );
  t.truthy(err);
  t.is(idx.size, 0);
  idx.remove([7]);
  t.deepEqual(idx.searchPersons(unitAxis(4, 0), 10), []);
});

test('searchPersons: best face per person, score order, ties to the lower face key, limit and excludePerson', (t) => {
  const dim = 8;
  const idx = new CollectionIndex(profileCodec('fp32_v1'), dim, 100);
  const q = unitAxis(dim, 0);
  idx.add([
    { faceKey: 20, personKey: 2, vector: atCos(dim, 0.5, 1) },
    { faceKey: 21, personKey: 2, vector: atCos(dim, 0.8, 2) }, // person 2 best
    { faceKey: 30, personKey: 3, vector: atCos(dim, 0.9, 3) }, // person 3 best overall
    { faceKey: 31, personKey: 3, vector: atCos(dim, 0.1, 4) },
    { faceKey: 47, personKey: 4, vector: atCos(dim, 0.6, 5) }, // person 4: two identical faces -> lower key wins
    { faceKey: 43, personKey: 4, vector: atCos(dim, 0.6, 5) },
    { faceKey: 50, personKey: 5, vector: atCos(dim, -0.3, 6) },
  ]);
  const hits = idx.searchPersons(q, 10);
  t.deepEqual(
    hits.map((h) => [h.personKey, h.faceKey]),
    [
      [3, 30],
      [2, 21],
      [4, 43],
      [5, 50],
    ],
  );
  t.true(Math.abs(hits[0]!.score - 0.9) < 1e-6);
  t.true(Math.abs(hits[1]!.score - 0.8) < 1e-6);
  t.true(Math.abs(hits[2]!.score - 0.6) < 1e-6);
  t.true(Math.abs(hits[3]!.score + 0.3) < 1e-6);
  t.deepEqual(
    idx.searchPersons(q, 2).map((h) => h.personKey),
    [3, 2],
  );
  t.deepEqual(
    idx.searchPersons(q, 1).map((h) => h.faceKey),
    [30],
  );
  t.deepEqual(
    idx.searchPersons(q, 10, { excludePerson: 3 }).map((h) => h.personKey),
    [2, 4, 5],
  );
  t.deepEqual(
    idx.searchPersons(q, 1, { excludePerson: 3 }).map((h) => [h.personKey, h.faceKey]),
    [[2, 21]],
  );
  t.deepEqual(
    idx.searchPersons(q, 10, { excludePerson: 99 }).map((h) => h.personKey),
    [3, 2, 4, 5],
  );
  // Tie between persons with equal best scores -> lower person key first.
  idx.add([{ faceKey: 60, personKey: 1, vector: atCos(dim, 0.8, 2) }]);
  t.deepEqual(
    idx.searchPersons(q, 3).map((h) => [h.personKey, h.faceKey]),
    [
      [3, 30],
      [1, 60],
      [2, 21],
    ],
  );
});

test('searchPersons finds `limit` distinct persons when one person owns the 200 best rows', (t) => {
  const dim = 16;
  const rand = prng(3);
  const q = unitAxis(dim, 0);
  for (const profile of ['fp32_v1', 'fp16_v1', 'bf16_v1'] as const) {
    const idx = new CollectionIndex(profileCodec(profile), dim, 1000);
    const rows: IndexRow[] = [];
    for (let i = 0; i < 200; i++)
      rows.push({ faceKey: 1000 + i, personKey: 1, vector: atCos(dim, 0.95 + 0.04 * rand(), 1 + (i % 15)) });
    // Persons 2..10 at 0.90, 0.88, ..., 0.74, added before and after the crowd.
    for (let p = 2; p <= 10; p++)
      rows.push({ faceKey: p, personKey: p, vector: atCos(dim, 0.9 - 0.02 * (p - 2), 1 + (p % 15)) });
    idx.add(rows.slice(0, 100));
    idx.add(rows.slice(100));
    t.deepEqual(
      idx.searchPersons(q, 5).map((h) => h.personKey),
      [1, 2, 3, 4, 5],
      profile,
    );
    t.deepEqual(
      idx.searchPersons(q, 10).map((h) => h.personKey),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      profile,
    );
    t.deepEqual(
      idx.searchPersons(q, 3, { excludePerson: 1 }).map((h) => h.personKey),
      [2, 3, 4],
      profile,
    );
    const top = idx.searchPersons(q, 1)[0]!;
    t.is(
      top.score,
      Math.max(...rows.filter((r) => r.personKey === 1).map((r) => idx.scorePair(q, r.vector))),
      `${profile}: the best of the 200 faces`,
    );
    // With a minimum score, every person at or above it is still returned.
    const withMin = idx.searchPersons(q, 10, { minScore: 0.87 }).filter((h) => h.score >= 0.87);
    t.deepEqual(
      withMin.map((h) => h.personKey),
      [1, 2, 3],
      `${profile}: minScore`,
    );
  }
});

test('every profile agrees with a brute-force fp32 reference on random 512-d unit vectors', (t) => {
  const dim = 512;
  const rand = prng(42);
  const rows: IndexRow[] = [];
  for (let i = 0; i < 300; i++)
    rows.push({ faceKey: 1 + i * 3, personKey: 1 + (i % 60), vector: randomUnit(rand, dim) });
  const tolerance: Record<SearchProfile, number> = {
    fp32_v1: 1e-6,
    fp16_v1: 1e-3,
    bf16_v1: 1e-2,
    int8_x736_v1: 1e-2,
    int8_x1000_v1: 1e-2,
  };
  for (let trial = 0; trial < 4; trial++) {
    // A noisy copy of a stored face: one clear best person.
    const target = rows[Math.floor(rand() * rows.length)]!;
    const noise = randomUnit(rand, dim);
    const query = normalize(target.vector.map((x, i) => x + 0.8 * noise[i]!));
    const ref = bruteForce(rows, (v) => dot(query, v), 10);
    t.is(ref[0]!.personKey, target.personKey);
    for (const profile of SEARCH_PROFILES) {
      const idx = new CollectionIndex(profileCodec(profile), dim, 1000);
      idx.add(rows);
      const hits = idx.searchPersons(query, 10);
      t.is(hits.length, 10);
      t.is(hits[0]!.personKey, ref[0]!.personKey, `${profile}: top person`);
      t.is(hits[0]!.faceKey, ref[0]!.faceKey, `${profile}: top face`);
      const refByPerson = new Map(bruteForce(rows, (v) => dot(query, v), 60).map((h) => [h.personKey, h.score]));
      for (const h of hits) {
        const diff = Math.abs(h.score - refByPerson.get(h.personKey)!);
        t.true(diff <= tolerance[profile], `${profile}: person ${h.personKey} score off by ${diff}`);
      }
      // Against the profile's own exact arithmetic the ranking is exact (usearch preselection misses nothing).
      const exact = bruteForce(rows, (v) => idx.scorePair(query, v), 10);
      t.deepEqual(hits, exact, `${profile}: same persons, faces and scores as an exhaustive profile scan`);
      if (profile === 'fp32_v1')
        t.deepEqual(
          hits.map((h) => h.personKey),
          ref.map((h) => h.personKey),
        );
    }
  }
});

test('int8 index scores equal the reference integer dot product / S^2 without a re-rank copy, the query against fp16 rows with one', (t) => {
  const dim = 512;
  const rand = prng(77);
  const rows: IndexRow[] = Array.from({ length: 50 }, (_, i) => ({
    faceKey: i + 1,
    personKey: i + 1,
    vector: randomUnit(rand, dim),
  }));
  const query = randomUnit(rand, dim);
  for (const profile of ['int8_x736_v1', 'int8_x1000_v1'] as const) {
    const S = profileCodec(profile).scale;
    const qi = Array.from(query, (x) => refInt8(x, S));
    const idx = new CollectionIndex(profileCodec(profile, { rerank: false }), dim, 100);
    idx.add(rows);
    const hits = idx.searchPersons(query, 50);
    t.is(hits.length, 50);
    for (const h of hits) {
      const v = rows[h.faceKey - 1]!.vector;
      let d = 0;
      for (let i = 0; i < dim; i++) d += qi[i]! * refInt8(v[i]!, S);
      t.is(h.score, d / (S * S), `${profile} face ${h.faceKey}`);
    }
    const reranked = new CollectionIndex(profileCodec(profile), dim, 100);
    reranked.add(rows);
    for (const h of reranked.searchPersons(query, 50)) {
      const v = rows[h.faceKey - 1]!.vector;
      let d = 0;
      for (let i = 0; i < dim; i++) d += query[i]! * halfToFloat(toHalf(v[i]!));
      t.true(Math.abs(h.score - d) < 1e-12, `${profile} face ${h.faceKey} re-ranked`);
    }
  }
});

test('growth beyond the initial allocation keeps every row searchable', (t) => {
  const dim = 128;
  const rand = prng(8);
  const rows: IndexRow[] = Array.from({ length: 700 }, (_, i) => ({
    faceKey: 5000 + i,
    personKey: i,
    vector: randomUnit(rand, dim),
  }));
  for (const profile of SEARCH_PROFILES) {
    const idx = new CollectionIndex(profileCodec(profile), dim, 1000);
    t.is(idx.allocatedRows, 256);
    for (let from = 0; from < rows.length; from += 100) {
      idx.add(rows.slice(from, from + 100));
      t.true(idx.allocatedRows >= idx.size && idx.allocatedRows <= 1000);
    }
    t.is(idx.size, 700);
    t.is(idx.allocatedRows, 1000, 'grows 256 -> 512 -> capped at capacity');
    t.is(idx.reallocations, 2);
    // Every row is present; a sample from every batch (incl. rows written before each reallocation) is its own best match.
    t.is(new Set(idx.searchPersons(rows[0]!.vector, 1000).map((h) => h.faceKey)).size, 700);
    let misses = 0;
    for (let i = 0; i < rows.length; i += 9)
      if (idx.searchPersons(rows[i]!.vector, 1)[0]?.faceKey !== rows[i]!.faceKey) misses++;
    t.is(misses, 0, `${profile}: sampled rows are their own best match`);
    // Remove the first half and check the remaining rows still are.
    idx.remove(rows.slice(0, 350).map((r) => r.faceKey));
    t.is(idx.size, 350);
    misses = 0;
    for (let i = 350; i < rows.length; i += 9)
      if (idx.searchPersons(rows[i]!.vector, 1)[0]?.faceKey !== rows[i]!.faceKey) misses++;
    t.is(misses, 0, `${profile}: after removals`);
    const keys = new Set(idx.searchPersons(rows[0]!.vector, 1000).map((h) => h.faceKey));
    t.is(keys.size, 350);
    t.false(rows.slice(0, 350).some((r) => keys.has(r.faceKey)));
  }
});

test('setCapacity below the live rows throws; at or above is accepted and enforced', (t) => {
  const idx = new CollectionIndex(profileCodec('fp32_v1'), 4, 10);
  idx.add([0, 1, 2].map((i) => ({ faceKey: i + 1, personKey: i + 1, vector: unitAxis(4, i) })));
  t.throws(() => idx.setCapacity(2), { message: /capacity 2 is below the 3 live rows/ });
  t.is(idx.capacity, 10);
  idx.setCapacity(3);
  t.is(idx.capacity, 3);
  t.throws(() => idx.add([{ faceKey: 9, personKey: 9, vector: unitAxis(4, 3) }]));
  t.is(idx.size, 3);
  idx.setCapacity(300);
  idx.add(
    Array.from({ length: 297 }, (_, i) => ({ faceKey: 100 + i, personKey: 100 + i, vector: unitAxis(4, i % 4) })),
  );
  t.is(idx.size, 300);
  t.true(idx.allocatedRows >= 300);
});

test('presize: exactly sized blocks for a known row count, and adds beyond it still grow', (t) => {
  const codec = profileCodec('fp32_v1');
  const idx = new CollectionIndex(codec, 8, 1000, 0, 64);
  idx.presize(150);
  t.is(idx.allocatedRows, 150, 'blocks of 64 + 64 + 22 rows');
  const rand = prng(5);
  const rows = Array.from({ length: 170 }, (_, i) => ({
    faceKey: i + 1,
    personKey: i + 1,
    vector: randomUnit(rand, 8),
  }));
  idx.add(rows.slice(0, 150));
  t.is(idx.reallocations, 0, 'no growth while filling the presized rows');
  idx.add(rows.slice(150));
  t.is(idx.size, 170);
  for (const r of rows) t.is(idx.exactSearchPersons(r.vector, 1)[0]?.faceKey, r.faceKey);
  t.throws(() => idx.presize(10), { message: /empty/ });
});

test('int8 re-rank: a near tie the int8 scan orders wrongly (10th and 11th person 0.0003 apart) is ordered by the fp16 copy', (t) => {
  const dim = 512;
  const rand = prng(2024);
  const query = randomUnit(rand, dim);
  /** A unit row at cosine `cos` to the query (the rest orthogonal to it, random). */
  const at = (cos: number) => {
    const u = randomUnit(rand, dim);
    const along = dot(u, query);
    const ortho = normalize(u.map((x, i) => x - along * query[i]!));
    return normalize(ortho.map((x, i) => cos * query[i]! + Math.sqrt(1 - cos * cos) * x));
  };
  const int8 = profileCodec('int8_x736_v1', { rerank: false });
  const scan = (v: Float32Array) => score(int8, encode(int8, query), 0, encode(int8, v), 0, dim);
  const rows: IndexRow[] = [];
  for (let p = 1; p <= 10; p++) rows.push({ faceKey: p, personKey: p, vector: at(0.5 - 0.003 * p) });
  // Person 11 is 0.0003 below person 10 in truth; draw it until the int8 scan puts it above person 10.
  let eleventh = at(0.5 - 0.003 * 10 - 0.0003);
  while (scan(eleventh) <= scan(rows[9]!.vector)) eleventh = at(0.5 - 0.003 * 10 - 0.0003);
  rows.push({ faceKey: 11, personKey: 11, vector: eleventh });
  t.true(dot(query, eleventh) < dot(query, rows[9]!.vector), 'person 11 is below person 10 in float32');

  const persons = (idx: CollectionIndex) => idx.searchPersons(query, 10).map((h) => h.personKey);
  const plain = new CollectionIndex(int8, dim, 100);
  plain.add(rows);
  t.true(persons(plain).includes(11), 'the int8 scan alone answers person 11 instead of person 10');
  const reranked = new CollectionIndex(profileCodec('int8_x736_v1'), dim, 100);
  reranked.add(rows);
  t.deepEqual(persons(reranked), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  // The HNSW path re-ranks its candidates the same way (scoreFaces), and so does strict review (scorePair).
  const graphHits = reranked.scoreFaces(query, [10, 11]);
  t.true(graphHits[0]!.score > graphHits[1]!.score);
  t.true(reranked.scorePair(query, rows[9]!.vector) > reranked.scorePair(query, eleventh));
});
