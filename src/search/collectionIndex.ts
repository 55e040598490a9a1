import usearch from 'usearch';
import { allocate, decodeRows, encode, encodeInto, score, type ProfileCodec, type StoredVectors } from './profiles.js';

export interface IndexRow { faceKey: number; personKey: number; vector: Float32Array }
export interface RowHit { faceKey: number; personKey: number; score: number }

/** Rows of the 16-bit profiles are decoded in blocks of this many rows for usearch's float32 scan. */
const DECODE_BLOCK_ROWS = 4096;
const MIN_GROWTH_ROWS = 256;

/**
 * The in-memory search index of one collection: every live face vector, encoded for the collection's
 * profile, in one contiguous matrix that usearch scans exhaustively (exact search is the contract).
 * Deleting a row moves the last row into its slot, so memory stays dense and slots are reused.
 * Keys are the SQLite sequence numbers of the face sample and its person.
 */
export class CollectionIndex {
  private data: StoredVectors;
  private faceKeys: Float64Array;
  private personKeys: Float64Array;
  private readonly rowOf = new Map<number, number>();
  private rows = 0;
  reallocations = 0;

  constructor(readonly codec: ProfileCodec, readonly dimension: number, private capacityRows: number, private readonly threads = 0) {
    const initial = Math.min(capacityRows, MIN_GROWTH_ROWS);
    this.data = allocate(codec.storage, initial * dimension);
    this.faceKeys = new Float64Array(initial);
    this.personKeys = new Float64Array(initial);
  }

  get size(): number { return this.rows; }
  get capacity(): number { return this.capacityRows; }
  get allocatedRows(): number { return this.faceKeys.length; }
  get bytes(): number { return this.data.byteLength + this.faceKeys.byteLength * 2; }

  setCapacity(rows: number): void {
    if (rows < this.rows) throw new Error(`capacity ${rows} is below the ${this.rows} live rows`);
    this.capacityRows = rows;
  }

  has(faceKey: number): boolean { return this.rowOf.has(faceKey); }

  /** Adds rows atomically: capacity and duplicates are checked before anything changes. */
  add(rows: IndexRow[]): void {
    if (this.rows + rows.length > this.capacityRows) throw new Error(`index capacity ${this.capacityRows} exceeded`);
    const batch = new Set<number>();
    for (const r of rows) {
      if (r.vector.length !== this.dimension) throw new Error(`vector has ${r.vector.length} values, the index ${this.dimension}`);
      if (this.rowOf.has(r.faceKey) || batch.has(r.faceKey)) throw new Error(`face ${r.faceKey} is already indexed`);
      batch.add(r.faceKey);
    }
    this.reserve(this.rows + rows.length);
    for (const r of rows) {
      const row = this.rows++;
      encodeInto(this.codec, r.vector, this.data, row * this.dimension);
      this.faceKeys[row] = r.faceKey;
      this.personKeys[row] = r.personKey;
      this.rowOf.set(r.faceKey, row);
    }
  }

  remove(faceKeys: Iterable<number>): number {
    let removed = 0;
    for (const key of faceKeys) {
      const row = this.rowOf.get(key);
      if (row === undefined) continue;
      const last = this.rows - 1;
      if (row !== last) {
        this.data.copyWithin(row * this.dimension, last * this.dimension, (last + 1) * this.dimension);
        this.faceKeys[row] = this.faceKeys[last]!;
        this.personKeys[row] = this.personKeys[last]!;
        this.rowOf.set(this.faceKeys[row]!, row);
      }
      this.rowOf.delete(key);
      this.rows--;
      removed++;
    }
    return removed;
  }

  private reserve(rows: number): void {
    if (rows <= this.faceKeys.length) return;
    const next = Math.min(this.capacityRows, Math.max(rows, this.faceKeys.length * 2, MIN_GROWTH_ROWS));
    const data = allocate(this.codec.storage, next * this.dimension);
    data.set(this.data.subarray(0, this.rows * this.dimension) as never);
    const fk = new Float64Array(next), pk = new Float64Array(next);
    fk.set(this.faceKeys.subarray(0, this.rows));
    pk.set(this.personKeys.subarray(0, this.rows));
    this.data = data;
    this.faceKeys = fk;
    this.personKeys = pk;
    this.reallocations++;
  }

  /** Encodes a query for this profile (the query is quantised like the stored rows). */
  encodeQuery(query: Float32Array): StoredVectors {
    if (query.length !== this.dimension) throw new Error(`query has ${query.length} values, the index ${this.dimension}`);
    return encode(this.codec, query);
  }

  /** The `k` best rows by the profile's unclipped score, best first. */
  topRows(query: StoredVectors, k: number): RowHit[] {
    const n = this.rows;
    const want = Math.min(k, n);
    if (want === 0) return [];
    const d = this.dimension;
    let rowIds: number[];
    if (this.codec.storage === 'f32' || this.codec.storage === 'i8') {
      // usearch reads the matrix from the start of its ArrayBuffer: this.data always begins at offset 0.
      const m = usearch.exactSearch(this.data.subarray(0, n * d) as Float32Array, query as Float32Array, d, want, usearch.MetricKind.IP, this.threads) as { keys: BigUint64Array };
      rowIds = Array.from(m.keys.subarray(0, want), Number);
    } else {
      rowIds = this.scanDecoded(query, want);
    }
    const hits = rowIds.filter((r) => r < n).map((r) => ({ faceKey: this.faceKeys[r]!, personKey: this.personKeys[r]!, score: score(this.codec, this.data, r * d, query, 0, d) }));
    // Rescored exactly in double precision; ties go to the lower face key.
    return hits.sort((a, b) => b.score - a.score || a.faceKey - b.faceKey);
  }

  private scanDecoded(query: StoredVectors, want: number): number[] {
    const d = this.dimension;
    const q = new Float32Array(d);
    decodeRows(this.codec, query, 0, 1, d, q);
    const block = new Float32Array(DECODE_BLOCK_ROWS * d);
    const candidates: { row: number; dist: number }[] = [];
    for (let from = 0; from < this.rows; from += DECODE_BLOCK_ROWS) {
      const to = Math.min(this.rows, from + DECODE_BLOCK_ROWS);
      decodeRows(this.codec, this.data, from, to, d, block);
      const m = usearch.exactSearch(block.subarray(0, (to - from) * d), q, d, Math.min(want, to - from), usearch.MetricKind.IP, this.threads) as { keys: BigUint64Array; distances: Float32Array };
      for (let i = 0; i < m.keys.length; i++) candidates.push({ row: from + Number(m.keys[i]), dist: m.distances[i]! });
    }
    return candidates.sort((a, b) => a.dist - b.dist).slice(0, want).map((c) => c.row);
  }

  /**
   * The best face of each person, best person first, at most `limit` persons. Rows are fetched in
   * growing batches until `limit` distinct persons are found, the index is exhausted, or the remaining
   * rows all score below `minScore`.
   */
  searchPersons(query: Float32Array, limit: number, opts: { excludePerson?: number; minScore?: number } = {}): RowHit[] {
    const q = this.encodeQuery(query);
    let k = Math.min(this.rows, Math.max(limit * 8, 64));
    for (;;) {
      const rows = this.topRows(q, k);
      const best = new Map<number, RowHit>();
      for (const h of rows) {
        if (h.personKey === opts.excludePerson) continue;
        const prev = best.get(h.personKey);
        if (!prev || h.score > prev.score || (h.score === prev.score && h.faceKey < prev.faceKey)) best.set(h.personKey, h);
      }
      const last = rows[rows.length - 1];
      const exhausted = k >= this.rows || best.size >= limit || (opts.minScore !== undefined && last !== undefined && last.score < opts.minScore);
      if (exhausted) return [...best.values()].sort((a, b) => b.score - a.score || a.personKey - b.personKey || a.faceKey - b.faceKey).slice(0, limit);
      k = Math.min(this.rows, k * 4);
    }
  }

  /** Profile score between a query and an arbitrary vector (strict review compares against stored samples). */
  scorePair(a: Float32Array, b: Float32Array): number {
    return score(this.codec, encode(this.codec, a), 0, encode(this.codec, b), 0, this.dimension);
  }
}
