import test from 'ava';
import { once } from 'node:events';
import { mkdirSync, readdirSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { csvCell, csvColumns, csvRow, datasetExport } from '../../src/scrapers/datasetExport.js';
import { ForumItem } from '../../src/scrapers/forum/items.js';
import { placeFilterReason } from '../../src/scrapers/places/placeFilters.js';
import { mapPlace, PlaceItem, type PlaceItemT } from '../../src/scrapers/places/items.js';
import { parseGoogleJson, readSearchPage } from '../../src/scrapers/places/placeArray.js';
import { RunStore } from '../../src/scrapers/runStore.js';
import type { SourceReportT } from '../../src/scrapers/scrapeResult.js';
import { ItemSink, runSources, type SourceWork } from '../../src/scrapers/sourceScheduler.js';
import { openDatabase } from '../../src/store/database.js';
import { UsageMeter } from '../../src/workspaces/usageMeter.js';
import { WorkspaceStore } from '../../src/workspaces/workspaceStore.js';
import { gmapsJson, gmapsText } from '../helpers/fakeMaps.js';
import { fileTempDir } from '../helpers/tempDir.js';

const fresh = () => fileTempDir('vigil-datasets-');
const Item = z.object({ id: z.string().regex(/^x\d+$/) });

/** A source that yields `n` items named `<prefix><i>` (ids x…), reporting what the scheduler answered. */
function source(label: string, ids: number[], answers: string[] = []): { label: string; work: () => SourceWork } {
  return {
    label,
    work: async function* (): SourceWork {
      for (const i of ids) answers.push(String(yield { id: `x${i}` }));
      return 'exhausted';
    },
  };
}

async function schedule(limit: number, sources: ReturnType<typeof source>[], seen: string[] = []) {
  const sink = new ItemSink(limit, (i) => (i as { id: string }).id, Item, new Set(seen));
  const out = await runSources(sources, {
    sink,
    runWide: new Set(),
    signal: undefined,
    limitReason: 'max_items',
    open: (s) => s.work(),
  });
  return { items: sink.items.map((i) => (i as { id: string }).id), reports: out.reports };
}

test('fair shares: equal per pass, unused shares go to the sources still running', async (t) => {
  const a = source('a', [1, 2, 3, 4, 5, 6, 7, 8]);
  const b = source('b', [11]);
  const c = source('c', [21, 22, 23, 24, 25, 26]);
  const out = await schedule(9, [a, b, c]);
  // Pass 1: shares of 3 (a: 1 2 3, b: 11 then ends, c: 21 22 23); pass 2: 2 left for a and c, 1 each.
  t.deepEqual(out.items, ['x1', 'x2', 'x3', 'x11', 'x21', 'x22', 'x23', 'x4', 'x24']);
  t.deepEqual(
    out.reports.map((r) => [r.items, r.stop_reason]),
    [
      [4, 'max_items'],
      [1, 'exhausted'],
      [4, 'max_items'],
    ],
  );
  const tiny = await schedule(1, [source('a', [1]), source('b', [2])]);
  t.deepEqual(
    tiny.reports.map((r) => [r.status, r.stop_reason]),
    [
      ['ok', 'max_items'],
      ['not_started', 'max_items'],
    ],
  );
});

test('the sink: invalid items are dropped and reported, duplicates and already seen ones only counted', async (t) => {
  const answers: string[] = [];
  const bad = {
    label: 'bad',
    work: async function* (): SourceWork {
      answers.push(String(yield { id: 'nope' }));
      answers.push(String(yield { id: 'x1' }));
      answers.push(String(yield { id: 'x1' }));
      answers.push(String(yield { id: 'x9' }));
      return undefined;
    },
  };
  const out = await schedule(10, [bad as never], ['x9']);
  t.deepEqual(out.items, ['x1']);
  t.deepEqual(answers, ['invalid', 'added', 'duplicate', 'seen']);
  t.deepEqual(out.reports[0]!.filtered, { invalid: 1, duplicate: 1, seen: 1 });
  const [problem] = out.reports[0]!.problems!;
  t.is(problem!.code, 'invalid_item');
  t.deepEqual(problem!.details.issues, ['id: Invalid string: must match pattern /^x\\d+$/']);
});

test('a cancelled run stops where it is and keeps what was delivered', async (t) => {
  const controller = new AbortController();
  const slow = {
    label: 'slow',
    work: async function* (): SourceWork {
      yield { id: 'x1' };
      controller.abort();
      await new Promise((r) => setTimeout(r, 5));
      controller.signal.throwIfAborted();
      yield { id: 'x2' };
      return undefined;
    },
  };
  const sink = new ItemSink(10, (i) => (i as { id: string }).id, Item);
  const out = await runSources([slow, source('later', [5])] as never[], {
    sink,
    runWide: new Set(),
    signal: controller.signal,
    limitReason: 'max_items',
    open: (s: any) => s.work(),
  });
  t.true(out.cancelled);
  t.deepEqual(sink.items, [{ id: 'x1' }]);
  t.deepEqual(
    out.reports.map((r: SourceReportT) => [r.status, r.stop_reason]),
    [
      ['cancelled', 'cancelled'],
      ['not_started', 'cancelled'],
    ],
  );
});

test('CSV: columns from the schema (dots for objects, one JSON cell per array), RFC 4180 quoting, formula guard', (t) => {
  const place = csvColumns(PlaceItem);
  t.deepEqual(place.slice(0, 4), ['title', 'categoryName', 'categories', 'placeId']);
  t.true(
    place.includes('location.lat') && place.includes('location.lng') && place.includes('reviewsDistribution.oneStar'),
  );
  t.false(place.includes('location'));
  t.is(place.filter((c) => c === 'reviews').length, 1);
  const forum = csvColumns(ForumItem);
  t.deepEqual(forum.slice(0, 5), ['dataType', 'id', 'url', 'createdAt', 'scrapedAt']);
  t.is(new Set(forum).size, forum.length);
  t.is(csvCell(null), '');
  t.is(csvCell(4.5), '4.5');
  t.is(csvCell(false), 'false');
  t.is(csvCell('a "b", c'), '"a ""b"", c"');
  t.is(csvCell('two\nlines'), '"two\nlines"');
  t.is(csvCell('=HYPERLINK("x")'), '"\'=HYPERLINK(""x"")"');
  t.is(csvCell('-1 stars'), "'-1 stars");
  t.is(csvCell(['a', 'b']), '"[""a"",""b""]"');
  t.is(csvRow(['a', null, 1]), 'a,,1\r\n');
});

test('exports read SQLite a batch at a time, only as the consumer pulls', async (t) => {
  const db = openDatabase(fresh());
  try {
    await new WorkspaceStore(db.db).create({ id: 'acme', name: 'Acme' });
    const store = new RunStore(db.db, new UsageMeter(db.db, 100_000));
    const run = await store.create({ workspaceId: 'acme', kind: 'forum', request: {}, wanted: 2000, maxActive: 10 });
    const items = Array.from({ length: 2000 }, (_, i) => ({ key: `k${i}`, item: { id: `x${i}`, n: i } }));
    await store.finish(run.id, { status: 'succeeded', items, result: {}, error: null });
    let batches = 0;
    const counting = Object.assign(Object.create(store), {
      async *itemJsonBatches(id: string) {
        for await (const b of store.itemJsonBatches(id)) {
          batches++;
          yield b;
        }
      },
    }) as RunStore;
    const { stream } = datasetExport(counting, (await await store.byId(run.id))!, Item, 'jsonl');
    // Paused mode: the stream fills its buffer (16 KB) and then waits for the consumer.
    await once(stream, 'readable');
    await new Promise((r) => setTimeout(r, 50));
    t.true(batches <= 2, `read ${batches} of 4 batches before the consumer took anything`);
    const all: Buffer[] = [];
    for await (const chunk of stream) all.push(chunk as Buffer);
    t.is(batches, 4, '2000 items in batches of 500');
    const lines = Buffer.concat(all).toString().trimEnd().split('\n');
    t.is(lines.length, 2000);
    t.is(lines[0], '{"id":"x0","n":0}');
  } finally {
    db.close();
  }
});

test('the seen-set keeps the most recently delivered keys up to its bound', async (t) => {
  const db = openDatabase(fresh());
  try {
    await new WorkspaceStore(db.db).create({ id: 'acme', name: 'Acme' });
    const store = new RunStore(db.db, new UsageMeter(db.db, 100_000), 100);
    const deliver = async (keys: string[]) => {
      const run = await store.create({
        workspaceId: 'acme',
        kind: 'places',
        request: {},
        wanted: keys.length,
        maxActive: 10,
      });
      await store.finish(run.id, {
        status: 'succeeded',
        items: keys.map((key) => ({ key, item: { key } })),
        result: {},
        error: null,
      });
      await new Promise((r) => setTimeout(r, 5));
    };
    const keys = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, i) => `k${String(from + i).padStart(3, '0')}`);
    await deliver(keys(0, 80));
    await deliver(keys(60, 120)); // refreshes k060…k079
    const seen = new Set(await store.seenKeys('acme', 'places'));
    t.is(seen.size, 100);
    t.false(seen.has('k000') || seen.has('k019'), 'the 20 least recently delivered are forgotten');
    t.true(seen.has('k020') && seen.has('k060') && seen.has('k119'));
    t.deepEqual(await store.seenCounts('acme'), { by_kind: { places: 100 }, capacity_per_kind: 100 });
    const failed = await store.create({ workspaceId: 'acme', kind: 'places', request: {}, wanted: 1, maxActive: 10 });
    await store.finish(failed.id, {
      status: 'failed',
      items: [{ key: 'zzz', item: {} }],
      result: null,
      error: { code: 'x', message: 'x', details: {} },
    });
    t.false((await store.seenKeys('acme', 'places')).includes('zzz'), 'a failed run delivered nothing');
  } finally {
    db.close();
  }
});

test('migration 0012 moves the items of existing runs out of result_json, in order, and keeps the rest', async (t) => {
  const dir = fresh();
  const migrations = fileURLToPath(new URL('../../src/store/migrations/', import.meta.url));
  const upTo5 = join(dir, 'migrations');
  mkdirSync(upTo5);
  for (const f of readdirSync(migrations).filter((f) => /^000[1-5]_/.test(f)))
    copyFileSync(join(migrations, f), join(upTo5, f));
  const data = join(dir, 'data');
  const old = openDatabase(data, upTo5);
  await new WorkspaceStore(old.db).create({ id: 'acme', name: 'Acme' });
  old.db
    .prepare(
      `INSERT INTO scrape_runs (id, workspace_id, kind, status, request_json, period, billed_units, item_count, result_json, created_at, finished_at)
    VALUES ('run_old', 'acme', 'forum', 'succeeded', '{}', '2026-01', 2, 2, ?, '2026-01-01T00:00:00Z', '2026-01-01T00:01:00Z')`,
    )
    .run(
      JSON.stringify({
        items: [{ id: 't3_a' }, { id: 't3_b' }],
        sources: [{ source: 's', status: 'ok', items: 2, filtered: {} }],
        warnings: ['w'],
      }),
    );
  old.close();
  const db = openDatabase(data);
  try {
    const store = new RunStore(db.db, new UsageMeter(db.db, 1000));
    t.deepEqual(
      (await store.items('run_old', -1, 10)).map((r) => r.item),
      [{ id: 't3_a' }, { id: 't3_b' }],
    );
    const row = (await store.byId('run_old'))!;
    t.deepEqual(JSON.parse(row.result_json!), {
      sources: [{ source: 's', status: 'ok', items: 2, filtered: {} }],
      warnings: ['w'],
    });
    t.like(row, { status: 'succeeded', billed_units: 2, resume_at: null, cancel_requested_at: null });
    t.throws(() => db.db.prepare("UPDATE scrape_runs SET status = 'bogus' WHERE id = 'run_old'").run(), {
      any: true,
      code: 'SQLITE_CONSTRAINT_CHECK',
    });
    db.db.prepare("UPDATE scrape_runs SET status = 'waiting_for_rate_limit' WHERE id = 'run_old'").run();
    t.is((await store.byId('run_old'))!.status, 'waiting_for_rate_limit', 'the new statuses pass the rebuilt CHECK');
  } finally {
    db.close();
  }
});

test('search pages: places, a genuinely empty list, and documents we do not recognise', (t) => {
  const real = gmapsJson('search_tbm_map.txt');
  const page = readSearchPage(real);
  t.is(page.kind, 'places');
  t.is(page.kind === 'places' ? page.places.length : 0, 2);
  t.deepEqual(readSearchPage([[real[0][0], [real[0][1][0]]]]), { kind: 'empty' });
  for (const [doc, why] of [
    [[], /data\[0\]/],
    [[[real[0][0]]], /data\[0\]\[1\]/],
    [[[real[0][0], [real[0][1][0], [null, 1]]]], /without a place array/],
    [[[null, []]], /metadata/],
  ] as const) {
    const r = readSearchPage(doc);
    t.is(r.kind, 'unrecognised');
    t.regex(r.kind === 'unrecognised' ? r.why : '', why);
  }
  const ad = structuredClone(real[0][1][1][14]);
  const withAd = structuredClone(real);
  withAd[2] = [null, [[Object.assign(new Array(16).fill(null), { 15: ad })]]];
  const read = readSearchPage(withAd);
  t.is(read.kind === 'places' ? read.ads.length : 0, 1);
  t.deepEqual(
    parseGoogleJson(`${gmapsText('search_tbm_map_xhr_variant.txt')}/*""*/`),
    real,
    'the XHR wrapper with its trailing comment',
  );
  t.deepEqual(parseGoogleJson(`\n${gmapsText('search_tbm_map_xhr_variant.txt')}\n/*""*/\n`), real);
});

test('place filters: each reason, values Google did not give count as missing', (t) => {
  const [fern, lab] = gmapsJson('search_tbm_map.txt')[0][1]
    .slice(1)
    .map((r: any[]) =>
      mapPlace(r[14], { scrapedAt: 'x', language: 'en', searchString: null, rank: null, includeDetails: false })!,
    ) as PlaceItemT[];
  const none = {
    skip_without_phone: false,
    skip_without_website: false,
    skip_without_reviews: false,
    skip_closed: false,
  };
  t.is(placeFilterReason(fern!, none), null);
  t.is(placeFilterReason(lab!, { ...none, skip_without_website: true }), 'no_website');
  t.is(placeFilterReason(lab!, { ...none, skip_closed: true }), 'closed');
  t.is(placeFilterReason(lab!, { ...none, min_rating: 4.5 }), 'below_min_rating');
  t.is(placeFilterReason({ ...fern!, totalScore: null }, { ...none, min_rating: 1 }), 'below_min_rating');
  t.is(placeFilterReason({ ...fern!, reviewsCount: null }, { ...none, skip_without_reviews: true }), 'no_reviews');
  t.is(
    placeFilterReason({ ...fern!, phone: null, phoneUnformatted: null }, { ...none, skip_without_phone: true }),
    'no_phone',
  );
  t.is(placeFilterReason(fern!, { ...none, categories: ['CAFE'] }), null, 'case-insensitive, part of a category');
  t.is(placeFilterReason(fern!, { ...none, categories: ['bakery', 'dentist'] }), 'category');
});
