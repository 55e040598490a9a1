import test from 'ava';
import { CollectionIndex, type IndexRow } from '../../src/search/collectionIndex.js';
import {
  decodeHalfInto,
  encodeHalfInto,
  HALF_BF16,
  HALF_F16,
  halfKernel,
  scanHalfTopK,
} from '../../src/search/halfScan.js';
import { SEARCH_PROFILES } from '../../src/contract/collections.js';
import { prng } from '../helpers/vectors.js';
import {
  bfloat16ToFloat,
  encode,
  halfToFloat,
  profileCodec,
  score,
  toBfloat16,
  toHalf,
} from '../../src/search/profiles.js';

function randomUnit(rand: () => number, dim: number): Float32Array {
  const v = new Float32Array(dim);
  let s = 0;
  for (let i = 0; i < dim; i++) {
    v[i] = rand() - 0.5;
    s += v[i]! * v[i]!;
  }
  for (let i = 0; i < dim; i++) v[i]! /= Math.sqrt(s);
  return v;
}

test('the kernel in use is reported: NEON on every arm64 build (the package smoke runs this file there)', (t) => {
  t.true(['avx2-f16c', 'neon', 'scalar'].includes(halfKernel()));
  // aarch64 always has Advanced SIMD; the tests below then check the NEON kernel against the references.
  if (process.arch === 'arm64') t.is(halfKernel(), 'neon');
});

test('native encoders round exactly like toHalf / toBfloat16 (random, ties, subnormals, overflow)', (t) => {
  const rand = prng(11);
  const values: number[] = [
    0,
    -0,
    1,
    -1,
    65504,
    65519,
    65520,
    1e6,
    -1e6,
    2 ** -24,
    2 ** -25,
    3 * 2 ** -26,
    2 ** -14,
    1 + 2 ** -11,
    1 + 3 * 2 ** -11,
    1 + 2 ** -8,
    1 + 3 * 2 ** -8,
    Infinity,
    -Infinity,
  ];
  for (let i = 0; i < 20000; i++) values.push((rand() - 0.5) * 2 ** Math.floor(rand() * 40 - 30));
  const src = Float32Array.from(values);
  for (const [kind, ref] of [
    [HALF_F16, toHalf],
    [HALF_BF16, toBfloat16],
  ] as const) {
    const out = new Uint16Array(src.length + 3);
    encodeHalfInto(src, out, 3, kind);
    const bad = [...src].map((v, i) => [v, out[i + 3], ref(v)] as const).filter(([, got, want]) => got !== want);
    t.deepEqual(bad.slice(0, 5), [], `kind ${kind}`);
  }
  t.throws(() => encodeHalfInto(src, new Uint16Array(src.length), 1, HALF_F16), { message: /too short/ });
});

test('native decoders equal halfToFloat / bfloat16ToFloat for every 16-bit pattern', (t) => {
  const all = new Uint16Array(65536).map((_, i) => i);
  for (const [kind, ref] of [
    [HALF_F16, halfToFloat],
    [HALF_BF16, bfloat16ToFloat],
  ] as const) {
    const out = new Float32Array(65536);
    decodeHalfInto(all, 0, out, kind);
    let mismatches = 0;
    for (let i = 0; i < 65536; i++) {
      const want = ref(i);
      if (Number.isNaN(want) ? !Number.isNaN(out[i]!) : !Object.is(out[i], Math.fround(want))) mismatches++;
    }
    t.is(mismatches, 0, `kind ${kind}`);
  }
});

test('scanTopK equals a brute-force reference (odd dimension, one and several threads, ties to the lower row)', (t) => {
  const rand = prng(5);
  for (const dim of [37, 512]) {
    const n = 20000;
    const rows = new Float32Array(n * dim);
    for (let r = 0; r < n; r++) rows.set(randomUnit(rand, dim), r * dim);
    // Exact duplicates of row 7 at rows 9000 and 15000: a tie the scan must order by row.
    rows.copyWithin(9000 * dim, 7 * dim, 8 * dim);
    rows.copyWithin(15000 * dim, 7 * dim, 8 * dim);
    const q = new Float32Array(rows.subarray(7 * dim, 8 * dim));
    for (const [kind, ref] of [
      [HALF_F16, toHalf],
      [HALF_BF16, toBfloat16],
    ] as const) {
      const data = new Uint16Array(n * dim);
      encodeHalfInto(rows, data, 0, kind);
      const dec = kind === HALF_F16 ? halfToFloat : bfloat16ToFloat;
      const qd = Float32Array.from(q, (x) => dec(ref(x)));
      const exact: { row: number; s: number }[] = [];
      for (let r = 0; r < n; r++) {
        let s = 0;
        for (let j = 0; j < dim; j++) s += dec(data[r * dim + j]!) * qd[j]!;
        exact.push({ row: r, s });
      }
      exact.sort((a, b) => b.s - a.s || a.row - b.row);
      for (const threads of [1, 2, 0]) {
        const got = scanHalfTopK(data, n, dim, qd, 25, kind, threads);
        t.deepEqual(
          [...got.rows.slice(0, 3)],
          [7, 9000, 15000],
          `dim ${dim} kind ${kind} threads ${threads}: the tie goes to the lower row`,
        );
        t.deepEqual(
          [...got.rows],
          exact.slice(0, 25).map((e) => e.row),
          `dim ${dim} kind ${kind} threads ${threads}`,
        );
        for (let i = 0; i < 25; i++) t.true(Math.abs(got.scores[i]! - exact[i]!.s) < 1e-4);
      }
    }
  }
});

test('scanTopK: k above the row count, zero rows, and bad arguments', (t) => {
  const data = new Uint16Array(3 * 4);
  encodeHalfInto(Float32Array.of(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0), data, 0, HALF_F16);
  const r = scanHalfTopK(data, 3, 4, Float32Array.of(0, 1, 0, 0), 10, HALF_F16, 0);
  t.deepEqual([...r.rows], [1, 0, 2]);
  t.is(scanHalfTopK(data, 0, 4, Float32Array.of(0, 1, 0, 0), 10, HALF_F16, 0).rows.length, 0);
  t.throws(() => scanHalfTopK(data, 4, 4, Float32Array.of(0, 1, 0, 0), 1, HALF_F16, 0), { message: /fewer than rows/ });
  t.throws(() => scanHalfTopK(data, 3, 4, new Float32Array(3), 1, HALF_F16, 0), { message: /query length/ });
  t.throws(() => scanHalfTopK(data, 3, 4, new Float32Array(4), 1, 7 as never, 0), { message: /kind/ });
});

test('blocked index: every profile equals brute force across block boundaries, after removes and growth', (t) => {
  const rand = prng(9);
  const dim = 64;
  for (const profile of SEARCH_PROFILES) {
    const codec = profileCodec(profile);
    const idx = new CollectionIndex(codec, dim, 5000, 0, 128);
    const live = new Map<number, IndexRow>();
    let key = 1;
    for (let round = 0; round < 6; round++) {
      const batch: IndexRow[] = [];
      for (let i = 0; i < 150; i++, key++)
        batch.push({ faceKey: key, personKey: 1 + (key % 97), vector: randomUnit(rand, dim) });
      idx.add(batch);
      for (const r of batch) live.set(r.faceKey, r);
      const gone = [...live.keys()].filter(() => rand() < 0.15);
      t.is(idx.remove(gone), gone.length);
      for (const g of gone) live.delete(g);
    }
    t.is(idx.size, live.size);
    t.true(
      idx.allocatedRows >= live.size && idx.allocatedRows <= key - 1 + 128,
      `${profile}: at most one block beyond the rows ever held`,
    );
    for (let qi = 0; qi < 5; qi++) {
      const q = randomUnit(rand, dim);
      const qe = encode(codec, q);
      const best = new Map<number, { faceKey: number; personKey: number; score: number }>();
      for (const r of live.values()) {
        // As searches score: the profile score, or the query against the fp16 re-rank copy.
        const s = codec.rerank ? idx.scorePair(q, r.vector) : score(codec, encode(codec, r.vector), 0, qe, 0, dim);
        const p = best.get(r.personKey);
        if (!p || s > p.score || (s === p.score && r.faceKey < p.faceKey))
          best.set(r.personKey, { faceKey: r.faceKey, personKey: r.personKey, score: s });
      }
      const want = [...best.values()].sort((a, b) => b.score - a.score || a.personKey - b.personKey).slice(0, 10);
      t.deepEqual(idx.searchPersons(q, 10), want, `${profile} query ${qi}`);
    }
  }
});

test('fromEncoded: an index read from encoded blocks searches like one built by add', (t) => {
  const rand = prng(4);
  const dim = 16;
  const codec = profileCodec('fp16_v1');
  const rows: IndexRow[] = [];
  for (let i = 0; i < 300; i++)
    rows.push({ faceKey: 10 + i, personKey: 1000 + (i % 40), vector: randomUnit(rand, dim) });
  const built = new CollectionIndex(codec, dim, 1000, 0, 64);
  built.add(rows);
  const fk = Float64Array.from(rows, (r) => r.faceKey),
    pk = Float64Array.from(rows, (r) => r.personKey);
  const read = CollectionIndex.fromEncoded(
    codec,
    dim,
    1000,
    0,
    fk,
    pk,
    (block, first, n) => {
      for (let i = 0; i < n; i++)
        (block as Uint16Array).set(encode(codec, rows[first + i]!.vector) as Uint16Array, i * dim);
    },
    64,
  );
  t.is(read.size, 300);
  t.is(read.allocatedRows, 300, 'blocks are sized exactly');
  for (let qi = 0; qi < 5; qi++) {
    const q = randomUnit(rand, dim);
    t.deepEqual(read.searchPersons(q, 7), built.searchPersons(q, 7));
  }
  read.add([{ faceKey: 5, personKey: 5, vector: rows[0]!.vector }]);
  t.is(read.searchPersons(rows[0]!.vector, 2)[0]!.faceKey, 5, 'ties go to the lower face key');
  t.throws(
    () =>
      CollectionIndex.fromEncoded(codec, dim, 1000, 0, Float64Array.of(1, 1), Float64Array.of(1, 1), () => undefined),
    { message: /twice/ },
  );
});
