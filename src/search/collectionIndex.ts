import usearch from './usearchModule.js';
import { HALF_BF16, HALF_F16, scanHalfTopK } from './halfScan.js';
import {
  allocate,
  decodeHalfVector,
  dotHalf,
  encode,
  encodeInto,
  RERANK_F16,
  scanErrorBound,
  score,
  type ProfileCodec,
  type StoredVectors,
} from './profiles.js';

export interface IndexRow {
  faceKey: number;
  personKey: number;
  vector: Float32Array;
}
export interface RowHit {
  faceKey: number;
  personKey: number;
  score: number;
}
/** The encoded rows, or the re-rank copy of a codec with `rerank`. */
export type Plane = 'rows' | 'rerank';

/**
 * Rows live in blocks of this many rows: growing a large collection allocates one more block instead of
 * copying the whole matrix into one twice its size (no doubling overhead kept), and a snapshot is read
 * straight into exactly sized blocks. 256k rows = 512 MiB of fp32 at 512-d. Measured at 1M rows (interleaved, quiet VM): one usearch call over the whole matrix 78.8 ms p50, 256k-row blocks 76.0 ms, 64k-row blocks 86.0 ms.
 */
export const BLOCK_ROWS = 262_144;
const MIN_GROWTH_ROWS = 256;

export interface PersonSearchOptions {
  excludePerson?: number;
  minScore?: number;
}

/** An approximate searcher attached to an index (the HNSW graph); null = answer exactly this time. */
export interface ApproximateSearch {
  searchPersons(index: CollectionIndex, query: Float32Array, limit: number): RowHit[] | null;
}

/**
 * The in-memory search index of one collection: every live face vector, encoded for the collection's
 * profile, in dense blocks that are scanned exhaustively (exact search is the contract): fp32 and int8
 * by usearch's exactSearch, fp16 and bf16 by our native kernel (halfScan.ts). Hits are rescored in
 * double precision. Deleting a row moves the last row into its slot, so memory stays dense.
 * Keys are the SQLite sequence numbers of the face sample and its person.
 *
 * A codec with `rerank` keeps a second copy of every row (fp16, blocks of the same rows in `fine`): the
 * scan finds candidates by the profile score, the copy orders them, and the candidates grow until no row
 * left out can be within the scan's error of the answer (scanErrorBound). Scores are then the re-ranked ones.
 */
export class CollectionIndex {
  private blocks: StoredVectors[] = [];
  /** The re-rank copy (codec.rerank), block for block beside `blocks`; null without one. */
  private fine: Uint16Array[] | null = null;
  private faceKeys: Float64Array;
  private personKeys: Float64Array;
  /** Face key -> row for rows [0, keyed); see keysReady. */
  private readonly rowOf = new Map<number, number>();
  private keyed = 0;
  private keyError: Error | null = null;
  private rows = 0;
  reallocations = 0;
  /** Rows the last exact search took as candidates (bench/search.ts reports them). */
  lastCandidates = 0;
  /** Set by SearchIndexes while a usable HNSW graph serves this collection. */
  approximate: ApproximateSearch | null = null;

  constructor(
    readonly codec: ProfileCodec,
    readonly dimension: number,
    private capacityRows: number,
    private readonly threads = 0,
    private readonly blockRows = BLOCK_ROWS,
  ) {
    const initial = Math.min(capacityRows, MIN_GROWTH_ROWS, blockRows);
    this.blocks.push(allocate(codec.storage, initial * dimension));
    if (codec.rerank) this.fine = [new Uint16Array(initial * dimension)];
    this.faceKeys = new Float64Array(initial);
    this.personKeys = new Float64Array(initial);
  }

  /**
   * An index over rows that are already encoded (a snapshot file): `fill` writes block i's encoded rows
   * into the exactly sized block it is given (`plane` 'rerank': the re-rank copy's block). Keys must be unique.
   */
  static fromEncoded(
    codec: ProfileCodec,
    dimension: number,
    capacityRows: number,
    threads: number,
    faceKeys: Float64Array,
    personKeys: Float64Array,
    fill: (block: StoredVectors, firstRow: number, rows: number, plane: Plane) => void,
    blockRows = BLOCK_ROWS,
  ): CollectionIndex {
    return CollectionIndex.fromBlocks(
      codec,
      dimension,
      capacityRows,
      threads,
      faceKeys,
      personKeys,
      (firstRow, rows, plane) => {
        const block = allocate(plane === 'rows' ? codec.storage : 'f16', Math.max(rows, 1) * dimension);
        if (rows > 0) fill(block, firstRow, rows, plane);
        return block;
      },
      blockRows,
    );
  }

  /**
   * An index over encoded blocks that `blockFor` provides (exactly `rows` x dimension values each, e.g.
   * a memory-mapped range of a snapshot file; rows = 0 asks for the empty first block of an empty index),
   * for the rows and, with a re-ranking codec, for the re-rank copy. Keys must be unique.
   */
  static fromBlocks(
    codec: ProfileCodec,
    dimension: number,
    capacityRows: number,
    threads: number,
    faceKeys: Float64Array,
    personKeys: Float64Array,
    blockFor: (firstRow: number, rows: number, plane: Plane) => StoredVectors,
    blockRows = BLOCK_ROWS,
    lazyKeys = false,
  ): CollectionIndex {
    const n = faceKeys.length;
    if (personKeys.length !== n) throw new Error('face and person key counts differ');
    if (n > capacityRows) throw new Error(`index capacity ${capacityRows} exceeded`);
    const idx = new CollectionIndex(codec, dimension, capacityRows, threads, blockRows);
    const planes: Plane[] = codec.rerank ? ['rows', 'rerank'] : ['rows'];
    for (const plane of planes) {
      const blocks: StoredVectors[] = [];
      for (let first = 0; first < n || blocks.length === 0; first += blockRows) {
        const rows = Math.max(0, Math.min(blockRows, n - first));
        const block =
          rows > 0 ? blockFor(first, rows, plane) : allocate(plane === 'rows' ? codec.storage : 'f16', dimension);
        if (block.length !== Math.max(rows, 1) * dimension)
          throw new Error(`block at row ${first} holds ${block.length} values, not ${rows * dimension}`);
        blocks.push(block);
      }
      if (plane === 'rows') idx.blocks = blocks;
      else idx.fine = blocks as Uint16Array[];
    }
    idx.faceKeys = faceKeys;
    idx.personKeys = personKeys;
    idx.rows = n;
    // The key -> row map of a million rows takes a noticeable part of a second to build: a lazy index
    // builds it in short slices after the load (the exact scan does not need it), or at once on first use.
    if (lazyKeys) idx.indexKeysInBackground();
    else idx.keysReady();
    return idx;
  }

  /** Completes the key -> row map (every path that reads or changes it calls this first). */
  private keysReady(): void {
    if (this.keyError) throw this.keyError;
    if (this.keyed < this.rows) this.indexKeys(this.rows);
  }

  private indexKeys(upTo: number): void {
    for (let r = this.keyed; r < upTo; r++) {
      const key = this.faceKeys[r]!;
      if (this.rowOf.has(key)) throw (this.keyError = new Error(`face ${key} appears twice`));
      this.rowOf.set(key, r);
    }
    this.keyed = upTo;
  }

  private indexKeysInBackground(): void {
    const step = () => {
      if (this.keyError || this.keyed >= this.rows) return;
      try {
        this.indexKeys(Math.min(this.rows, this.keyed + 65_536));
      } catch {
        return; // kept in keyError: the next use throws it
      }
      setImmediate(step).unref();
    };
    setImmediate(step).unref();
  }

  /**
   * Sizes an empty index for `rows` rows in exactly sized blocks (a load whose size is known: no growth
   * copies left behind as garbage). Adds beyond it grow as usual.
   */
  presize(rows: number): void {
    if (this.rows !== 0) throw new Error('presize needs an empty index');
    const n = Math.min(rows, this.capacityRows);
    if (n <= this.allocatedRows) return;
    this.blocks = [];
    if (this.fine) this.fine = [];
    for (let first = 0; first < n; first += this.blockRows) {
      const values = Math.min(this.blockRows, n - first) * this.dimension;
      this.blocks.push(allocate(this.codec.storage, values));
      this.fine?.push(new Uint16Array(values));
    }
    this.faceKeys = new Float64Array(n);
    this.personKeys = new Float64Array(n);
  }

  get size(): number {
    return this.rows;
  }
  get capacity(): number {
    return this.capacityRows;
  }
  get allocatedRows(): number {
    return this.blocks.reduce((s, b) => s + b.length / this.dimension, 0);
  }
  /** Vector memory (the rows and any re-rank copy) and key memory. */
  get bytes(): number {
    return [...this.blocks, ...(this.fine ?? [])].reduce((s, b) => s + b.byteLength, 0) + this.faceKeys.byteLength * 2;
  }

  setCapacity(rows: number): void {
    if (rows < this.rows) throw new Error(`capacity ${rows} is below the ${this.rows} live rows`);
    this.capacityRows = rows;
  }

  has(faceKey: number): boolean {
    this.keysReady();
    return this.rowOf.has(faceKey);
  }

  /** The live rows' keys in row order (views of the index's own arrays). */
  keyArrays(): { faceKeys: Float64Array; personKeys: Float64Array } {
    return { faceKeys: this.faceKeys.subarray(0, this.rows), personKeys: this.personKeys.subarray(0, this.rows) };
  }

  /**
   * The live encoded rows in row order, one view per block (the index's own memory, not copies); with
   * `plane` 'rerank' the re-rank copy's (none without one).
   */
  encodedRowViews(plane: Plane = 'rows'): StoredVectors[] {
    const blocks = plane === 'rows' ? this.blocks : (this.fine ?? []);
    const out: StoredVectors[] = [];
    for (let b = 0, first = 0; b < blocks.length && first < this.rows; b++, first += this.blockRows)
      out.push(blocks[b]!.subarray(0, Math.min(this.blockRows, this.rows - first) * this.dimension));
    return out;
  }

  /** Every live face key (any order): the delta of an HNSW graph is computed from it. */
  liveFaceKeys(): Float64Array {
    return this.faceKeys.subarray(0, this.rows);
  }

  private blockOf(row: number): StoredVectors {
    return this.blocks[Math.floor(row / this.blockRows)]!;
  }
  private fineBlockOf(row: number): Uint16Array {
    return this.fine![Math.floor(row / this.blockRows)]!;
  }
  /** Copies row `from` of `source` (this index or another of the same codec) into row `to` of this one, both planes. */
  private copyRow(source: CollectionIndex, from: number, to: number): void {
    const d = this.dimension,
      at = source.offsetOf(from);
    (this.blockOf(to) as Float32Array).set(
      source.blockOf(from).subarray(at, at + d) as Float32Array,
      this.offsetOf(to),
    );
    if (this.fine) this.fineBlockOf(to).set(source.fineBlockOf(from).subarray(at, at + d), this.offsetOf(to));
  }
  private offsetOf(row: number): number {
    return (row % this.blockRows) * this.dimension;
  }

  /** Adds rows atomically: capacity and duplicates are checked before anything changes. */
  add(rows: IndexRow[]): void {
    if (this.rows + rows.length > this.capacityRows) throw new Error(`index capacity ${this.capacityRows} exceeded`);
    this.keysReady();
    const batch = new Set<number>();
    for (const r of rows) {
      if (r.vector.length !== this.dimension)
        throw new Error(`vector has ${r.vector.length} values, the index ${this.dimension}`);
      if (this.rowOf.has(r.faceKey) || batch.has(r.faceKey)) throw new Error(`face ${r.faceKey} is already indexed`);
      batch.add(r.faceKey);
    }
    this.reserve(this.rows + rows.length);
    for (const r of rows) {
      const row = this.rows++;
      encodeInto(this.codec, r.vector, this.blockOf(row), this.offsetOf(row));
      if (this.fine) encodeInto(RERANK_F16, r.vector, this.fineBlockOf(row), this.offsetOf(row));
      this.faceKeys[row] = r.faceKey;
      this.personKeys[row] = r.personKey;
      this.rowOf.set(r.faceKey, row);
    }
    this.keyed = this.rows;
  }

  remove(faceKeys: Iterable<number>): number {
    this.keysReady();
    let removed = 0;
    for (const key of faceKeys) {
      const row = this.rowOf.get(key);
      if (row === undefined) continue;
      const last = this.rows - 1;
      if (row !== last) {
        this.copyRow(this, last, row);
        this.faceKeys[row] = this.faceKeys[last]!;
        this.personKeys[row] = this.personKeys[last]!;
        this.rowOf.set(this.faceKeys[row]!, row);
      }
      this.rowOf.delete(key);
      this.rows--;
      removed++;
    }
    this.keyed = this.rows;
    return removed;
  }

  /**
   * Grows the last block by doubling up to blockRows, then adds blocks (the re-rank copy alike, block for
   * block); the key arrays double.
   */
  private reserve(rows: number): void {
    let allocated = this.allocatedRows;
    const planes = this.fine
      ? [
          { blocks: this.blocks, storage: this.codec.storage },
          { blocks: this.fine as StoredVectors[], storage: 'f16' as const },
        ]
      : [{ blocks: this.blocks, storage: this.codec.storage }];
    while (allocated < rows) {
      const lastRows = this.blocks[this.blocks.length - 1]!.length / this.dimension;
      if (lastRows < this.blockRows) {
        const next = Math.min(
          this.blockRows,
          this.capacityRows - (allocated - lastRows),
          Math.max(lastRows * 2, lastRows + rows - allocated, MIN_GROWTH_ROWS),
        );
        for (const p of planes) {
          const grown = allocate(p.storage, next * this.dimension);
          grown.set(p.blocks[p.blocks.length - 1] as never);
          p.blocks[p.blocks.length - 1] = grown;
        }
        allocated += next - lastRows;
      } else {
        const next = Math.min(
          this.blockRows,
          this.capacityRows - allocated,
          Math.max(rows - allocated, MIN_GROWTH_ROWS),
        );
        for (const p of planes) p.blocks.push(allocate(p.storage, next * this.dimension));
        allocated += next;
      }
      this.reallocations++;
    }
    if (this.faceKeys.length < rows) {
      const next = Math.min(this.capacityRows, Math.max(rows, this.faceKeys.length * 2, MIN_GROWTH_ROWS));
      const fk = new Float64Array(next),
        pk = new Float64Array(next);
      fk.set(this.faceKeys.subarray(0, this.rows));
      pk.set(this.personKeys.subarray(0, this.rows));
      this.faceKeys = fk;
      this.personKeys = pk;
    }
  }

  /** Encodes a query for this profile (the query is quantised like the stored rows). */
  encodeQuery(query: Float32Array): StoredVectors {
    if (query.length !== this.dimension)
      throw new Error(`query has ${query.length} values, the index ${this.dimension}`);
    return encode(this.codec, query);
  }

  /** The profile score (unclipped, double precision) of row `row` against an encoded query. */
  private rowScore(row: number, query: StoredVectors): number {
    return score(this.codec, this.blockOf(row), this.offsetOf(row), query, 0, this.dimension);
  }

  private hit(row: number, query: StoredVectors): RowHit {
    return { faceKey: this.faceKeys[row]!, personKey: this.personKeys[row]!, score: this.rowScore(row, query) };
  }

  /** The `k` best rows by the profile's unclipped score, best first (ties: lower face key). */
  topRows(query: StoredVectors, k: number): RowHit[] {
    return this.scan(query, k).map((e) => e.hit);
  }

  /** topRows with each hit's row number. */
  private scan(query: StoredVectors, k: number): { row: number; hit: RowHit }[] {
    const n = this.rows;
    const want = Math.min(k, n);
    if (want === 0) return [];
    const d = this.dimension;
    const storage = this.codec.storage;
    const halfQuery =
      storage === 'f16' || storage === 'bf16' ? decodeHalfVector(this.codec, query as Uint16Array) : null;
    const hits: { row: number; hit: RowHit }[] = [];
    for (let b = 0, first = 0; first < n; b++, first += this.blockRows) {
      const rows = Math.min(this.blockRows, n - first);
      const block = this.blocks[b]!;
      const k1 = Math.min(want, rows);
      let found: ArrayLike<number>;
      if (halfQuery) {
        found = scanHalfTopK(
          block as Uint16Array,
          rows,
          d,
          halfQuery,
          k1,
          storage === 'f16' ? HALF_F16 : HALF_BF16,
          this.threads,
        ).rows;
      } else {
        // usearch reads the matrix from the start of its ArrayBuffer: every block begins at offset 0.
        const m = usearch.exactSearch(
          block.subarray(0, rows * d) as Float32Array,
          query as Float32Array,
          d,
          k1,
          usearch.MetricKind.IP,
          this.threads,
        ) as { keys: BigUint64Array };
        found = Array.from(m.keys.subarray(0, k1), Number);
      }
      for (let i = 0; i < found.length; i++) {
        const row = first + found[i]!;
        if (found[i]! < rows) hits.push({ row, hit: this.hit(row, query) });
      }
    }
    // Every block's candidates are rescored exactly in double precision; ties go to the lower face key.
    return hits.sort((a, b) => b.hit.score - a.hit.score || a.hit.faceKey - b.hit.faceKey).slice(0, want);
  }

  /** A new index holding the encoded rows whose face key passes `keep` (the exact delta beside a graph). */
  subset(keep: (faceKey: number) => boolean): CollectionIndex {
    const out = new CollectionIndex(this.codec, this.dimension, this.capacityRows, this.threads, this.blockRows);
    for (let r = 0; r < this.rows; r++) {
      const key = this.faceKeys[r]!;
      if (!keep(key)) continue;
      out.reserve(out.rows + 1);
      const row = out.rows++;
      out.copyRow(this, r, row);
      out.faceKeys[row] = key;
      out.personKeys[row] = this.personKeys[r]!;
      out.rowOf.set(key, row);
    }
    out.keyed = out.rows;
    return out;
  }

  /**
   * Exact rescoring of candidate face keys (graph candidates) as searches score them (the re-rank copy
   * when there is one); keys no longer indexed are dropped.
   */
  scoreFaces(query: Float32Array, faceKeys: Iterable<number>): RowHit[] {
    this.keysReady();
    const q = this.fine ? null : this.encodeQuery(query);
    const out: RowHit[] = [];
    for (const key of faceKeys) {
      const row = this.rowOf.get(key);
      if (row !== undefined) out.push(q ? this.hit(row, q) : this.fineHit(row, query));
    }
    return out;
  }

  /** A row scored by the float32 query against its re-rank copy. */
  private fineHit(row: number, query: Float32Array): RowHit {
    const score = dotHalf(query, this.fineBlockOf(row), this.offsetOf(row));
    return { faceKey: this.faceKeys[row]!, personKey: this.personKeys[row]!, score };
  }

  /** Scanned rows re-scored from the re-rank copy, best first (ties: lower face key). */
  private refine(scanned: { row: number }[], query: Float32Array): RowHit[] {
    return scanned.map((e) => this.fineHit(e.row, query)).sort((a, b) => b.score - a.score || a.faceKey - b.faceKey);
  }

  /**
   * The `k` best rows as searches score them, best first: the scan's, re-ranked from the copy when there is
   * one (then from the scan's best `k`: the exact delta beside a graph, whose candidates are re-ranked too).
   */
  rankRows(query: Float32Array, k: number): RowHit[] {
    const scanned = this.scan(this.encodeQuery(query), k);
    return this.fine ? this.refine(scanned, query) : scanned.map((e) => e.hit);
  }

  /**
   * The best face of each person, best person first, at most `limit` persons. Rows are fetched in
   * growing batches until `limit` distinct persons are found, the index is exhausted, or the remaining
   * rows all score below `minScore`.
   */
  searchPersons(query: Float32Array, limit: number, opts: PersonSearchOptions = {}): RowHit[] {
    // Registration review (excludePerson) always asks the exact question.
    if (this.approximate && opts.excludePerson === undefined) {
      if (query.length !== this.dimension)
        throw new Error(`query has ${query.length} values, the index ${this.dimension}`);
      const hits = this.approximate.searchPersons(this, query, limit);
      if (hits) return hits;
    }
    return this.exactSearchPersons(query, limit, opts);
  }

  /**
   * searchPersons by a full scan, whatever is attached. With a re-rank copy the candidates grow until the
   * weakest of them scanned more than the scan's error bound below the answer's last person (and below
   * `minScore`): a row left out cannot outrank any answer once re-ranked.
   */
  exactSearchPersons(query: Float32Array, limit: number, opts: PersonSearchOptions = {}): RowHit[] {
    const q = this.encodeQuery(query);
    const bound = this.fine ? scanErrorBound(this.codec) : 0;
    let k = Math.min(this.rows, Math.max(limit * 8, 64));
    for (;;) {
      const scanned = this.scan(q, k);
      const rows = this.fine ? this.refine(scanned, query) : scanned.map((e) => e.hit);
      const best = bestPerPerson(rows, limit, opts.excludePerson);
      const last = scanned[scanned.length - 1]?.hit;
      const reach = last === undefined ? -Infinity : last.score + bound;
      const exhausted =
        k >= this.rows ||
        (best.length >= limit && (!this.fine || best[limit - 1]!.score > reach)) ||
        (opts.minScore !== undefined && reach < opts.minScore);
      this.lastCandidates = rows.length;
      if (exhausted) return best;
      k = Math.min(this.rows, k * 4);
    }
  }

  /**
   * Score between a query and an arbitrary vector as searches score it (strict review compares against
   * stored samples): the profile score, or the query against the re-rank copy's encoding.
   */
  scorePair(a: Float32Array, b: Float32Array): number {
    if (this.fine) return dotHalf(a, encode(RERANK_F16, b) as Uint16Array, 0);
    return score(this.codec, encode(this.codec, a), 0, encode(this.codec, b), 0, this.dimension);
  }
}

/** Best face per person (ties: lower face key), best person first (ties: lower person key), at most `limit`. */
export function bestPerPerson(hits: RowHit[], limit: number, excludePerson?: number): RowHit[] {
  const best = new Map<number, RowHit>();
  for (const h of hits) {
    if (h.personKey === excludePerson) continue;
    const prev = best.get(h.personKey);
    if (!prev || h.score > prev.score || (h.score === prev.score && h.faceKey < prev.faceKey)) best.set(h.personKey, h);
  }
  return [...best.values()]
    .sort((a, b) => b.score - a.score || a.personKey - b.personKey || a.faceKey - b.faceKey)
    .slice(0, limit);
}
