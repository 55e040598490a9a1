/**
 * Vector snapshot bench: how long a collection's exact index takes to write as its snapshot and to read
 * back at start (the part of a restart that a 1M-face gallery adds), against building the same index
 * row by row as a load from SQLite does (encode + add in 4096-row batches, without SQLite's own cost).
 * The file is read from the page cache (a warm restart); the first read after a boot is disk-bound.
 *
 * Each rep loads the file three ways (read into fresh blocks, memory-mapped, mapped + populated) and runs
 * one search right after each load (a map pays its page faults in that first search).
 * Usage: node --expose-gc --import tsx bench/snapshot.ts [--sizes 100000,1000000] [--profiles fp32_v1,fp16_v1] [--reps 3]
 * Writes bench/results/snapshot.json.
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { SearchProfile } from '../src/contract/collections.js';
import { CollectionIndex, type IndexRow } from '../src/search/collectionIndex.js';
import { profileCodec } from '../src/search/profiles.js';
import { readSnapshot, snapshotPath, writeSnapshot } from '../src/search/vectorSnapshot.js';
import { seededRandom } from './seededRandom.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100000,1000000' },
    profiles: { type: 'string', default: 'fp32_v1,fp16_v1' },
    reps: { type: 'string', default: '3' },
  },
});
const DIM = 512;
const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const log = (s: string) => process.stdout.write(`${s}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r1 = (v: number) => Math.round(v * 10) / 10;

const results = [];
for (const n of values.sizes!.split(',').map(Number)) {
  for (const profile of values.profiles!.split(',') as SearchProfile[]) {
    const codec = profileCodec(profile);
    const rand = seededRandom(n);
    const dir = mkdtempSync(join(tmpdir(), 'vigil-bench-snapshot-'));
    try {
      // The row-by-row build, as a load from SQLite feeds it (one fresh Float32Array per row).
      let t = performance.now();
      const index = new CollectionIndex(codec, DIM, n);
      index.presize(n);
      for (let from = 0; from < n; from += 4096) {
        const batch: IndexRow[] = [];
        for (let i = from; i < Math.min(n, from + 4096); i++) {
          const v = new Float32Array(DIM);
          for (let j = 0; j < DIM; j++) v[j] = rand() - 0.5;
          batch.push({ faceKey: i + 1, personKey: Math.floor(i / 5) + 1, vector: v });
        }
        index.add(batch);
      }
      const buildMs = performance.now() - t;
      t = performance.now();
      const h = await writeSnapshot(dir, index, { collection_id: 'c', index_epoch: 'e', revision: 1 }, () => true);
      const writeMs = performance.now() - t;
      const reads: number[] = [];
      let same = true;
      // Each mode: load time, then the first search over the loaded index (a map pays its page faults there).
      const modes = {
        read: { rows: 'read' as const },
        map: { rows: 'map' as const, populate: false },
        map_populate: { rows: 'map' as const, populate: true },
      };
      const byMode: Record<string, { load_ms: number[]; first_search_ms: number[] }> = {};
      const q = new Float32Array(DIM).map(() => rand() - 0.5);
      const want = JSON.stringify(index.exactSearchPersons(q, 5));
      for (let r = 0; r < Number(values.reps); r++) {
        for (const [mode, opts] of Object.entries(modes)) {
          const m = (byMode[mode] ??= { load_ms: [], first_search_ms: [] });
          t = performance.now();
          const loaded = readSnapshot(
            dir,
            { collectionId: 'c', epoch: 'e', revision: 1, profile, dimension: DIM, rows: n },
            codec,
            n,
            0,
            opts,
          );
          m.load_ms.push(Math.round(performance.now() - t));
          if (mode === 'read') reads.push(performance.now() - t);
          if (!('index' in loaded)) throw new Error(loaded.problem);
          t = performance.now();
          const got = JSON.stringify(loaded.index.exactSearchPersons(q, 5));
          m.first_search_ms.push(Math.round(performance.now() - t));
          same &&= got === want;
        }
        (globalThis as { gc?: () => void }).gc?.();
      }
      for (const [mode, m] of Object.entries(byMode))
        log(
          `  ${profile} ${n} ${mode}: load ${m.load_ms.join('/')} ms, then first search ${m.first_search_ms.join('/')} ms`,
        );
      const row = {
        rows: n,
        profile,
        file_mib: r1(statSync(snapshotPath(dir, 'c')).size / 2 ** 20),
        row_by_row_build_ms: Math.round(buildMs),
        write_ms: Math.round(writeMs),
        read_ms_median: Math.round(median(reads)),
        reads_ms: reads.map(Math.round),
        same_answers: same,
        modes: byMode,
        header_rows: h!.rows,
        loadavg_1m: r1(loadavg()[0]!),
      };
      results.push(row);
      log(
        `${profile} ${n}: file ${row.file_mib} MiB, write ${row.write_ms} ms, read ${row.read_ms_median} ms (${row.reads_ms.join('/')}), row-by-row build ${row.row_by_row_build_ms} ms (incl. making the vectors), same answers ${same}, load ${row.loadavg_1m}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(
  join(REPO, 'bench/results/snapshot.json'),
  JSON.stringify({ bench: 'snapshot', at: new Date().toISOString(), results }, null, 2),
);
