import { Readable } from 'node:stream';
import type { z } from 'zod';
import type { RunRepository } from './runRepository.js';
import type { RunRow } from './runStore.js';

export const EXPORT_FORMATS = ['json', 'jsonl', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

const CONTENT_TYPES: Record<ExportFormat, string> = {
  json: 'application/json; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
};

interface ZodNode {
  _zod: { def: { type: string; shape?: Record<string, ZodNode>; innerType?: ZodNode; options?: ZodNode[] } };
}

/**
 * The CSV columns of an item schema, in schema order: one per scalar field, nested objects flattened
 * with dots (`location.lat`, `reviewsDistribution.fiveStar`), arrays and records (whose keys vary) as one
 * column holding their JSON (`categories`, `reviews`, `openingHours`, `additionalOpeningHours`). Unions (the forum's dataTypes) contribute every column of
 * every member, first seen first. Derived from the schema, not the data, so the header is known before
 * the first row is read.
 */
export function csvColumns(schema: z.ZodType): string[] {
  const out: string[] = [];
  const add = (c: string) => {
    if (!out.includes(c)) out.push(c);
  };
  const walk = (node: ZodNode, path: string): void => {
    const def = node._zod.def;
    if (def.type === 'nullable' || def.type === 'optional') return walk(def.innerType!, path);
    if (def.type === 'union') return def.options!.forEach((o) => walk(o, path));
    if (def.type === 'object') {
      for (const [k, v] of Object.entries(def.shape!)) walk(v, path ? `${path}.${k}` : k);
      return;
    }
    add(path);
  };
  walk(schema as unknown as ZodNode, '');
  return out;
}

/** The value at a dotted column path, or undefined when a step is missing or null. */
function valueAt(item: unknown, column: string): unknown {
  let cur: unknown = item;
  for (const k of column.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[k];
  }
  return cur;
}

/**
 * One CSV cell (RFC 4180): null and missing are empty, arrays and objects are their JSON, quotes are
 * doubled, and a text that a spreadsheet would run as a formula (= + - @, tab, CR first) gets a leading
 * apostrophe (OWASP's CSV-injection advice). Numbers and booleans are written as they are.
 */
export function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  let s: string;
  if (typeof v === 'string') s = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  else if (typeof v === 'object') s = JSON.stringify(v);
  else s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

export const csvRow = (cells: unknown[]): string => `${cells.map(csvCell).join(',')}\r\n`;

/** The chunks of an export, produced batch by batch from SQLite as the consumer reads them. */
async function* chunks(
  store: RunRepository,
  run: RunRow,
  schema: z.ZodType,
  format: ExportFormat,
): AsyncGenerator<string> {
  if (format === 'csv') {
    const columns = csvColumns(schema);
    yield csvRow(columns);
    for await (const batch of store.itemJsonBatches(run.id))
      yield batch
        .map((json) => {
          const item = JSON.parse(json) as unknown;
          return csvRow(columns.map((c) => valueAt(item, c)));
        })
        .join('');
    return;
  }
  if (format === 'jsonl') {
    for await (const batch of store.itemJsonBatches(run.id)) yield batch.map((json) => `${json}\n`).join('');
    return;
  }
  let first = true;
  yield '[';
  for await (const batch of store.itemJsonBatches(run.id)) {
    yield `${first ? '' : ','}${batch.join(',')}`;
    first = false;
  }
  yield ']\n';
}

/**
 * A run's items as a downloadable document, streamed: rows are read from SQLite in batches only when
 * the client has taken the previous ones (the stream's back-pressure), so a large run is never held
 * in memory whole.
 */
export function datasetExport(
  store: RunRepository,
  run: RunRow,
  schema: z.ZodType,
  format: ExportFormat,
): { stream: Readable; contentType: string; filename: string } {
  return {
    stream: Readable.from(chunks(store, run, schema, format), { objectMode: false }),
    contentType: CONTENT_TYPES[format],
    filename: `${run.id}.${format}`,
  };
}
