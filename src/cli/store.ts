import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { CollectionStore } from '../collections/collectionStore.js';
import { loadConfig } from '../config/load.js';
import { Errors } from '../contract/errors.js';
import { openDatabase } from '../store/database.js';
import { migratePostgres, openPool, storeRefusal, withTransaction } from '../store/postgres.js';
import type { CliIo } from './workspaces.js';

const USAGE = `Usage:
  vigil store migrate --to postgres [--url postgres://…] [--config FILE] [--json]
      copies this box's gallery (collections, persons, faces with embeddings and crops) and its workspaces
      (API keys, monthly usage, the only_new seen-sets, scrape runs with their items) from its SQLite file
      into PostgreSQL, keeping every id and sequence number, then verifies row counts and checksums on both
      sides. Runs move with this box's box_id (it executes the unfinished ones after its restart). Stop the daemon first (the data directory is locked). The password comes from
      VIGIL_STORE_PASSWORD or [store] password_file. Then set [store] backend = "postgres" and start it.
`;

const TABLES = {
  collections: [
    'id',
    'name',
    'description',
    'default_threshold',
    'model_id',
    'model_digest',
    'embedding_dimension',
    'preprocessing_version',
    'embedding_contract_id',
    'search_profile',
    'capacity_rows',
    'max_faces_per_person',
    'load_policy',
    'search_revision',
    'save_face_crops',
    'metadata_json',
    'detector_input_sizes_json',
    'detector_threshold',
    'detector_nms_threshold',
    'single_face_selection',
    'detection_revision',
    'person_count',
    'face_count',
    'created_at',
    'updated_at',
    'search_index',
    'hnsw_connectivity',
    'hnsw_expansion_add',
    'hnsw_expansion_search',
    'index_epoch',
  ],
  persons: [
    'seq',
    'collection_id',
    'id',
    'name',
    'external_id',
    'metadata_json',
    'face_count',
    'created_at',
    'updated_at',
  ],
  face_samples: [
    'seq',
    'id',
    'collection_id',
    'person_seq',
    'embedding',
    'embedding_dimension',
    'bounding_box_json',
    'landmarks_json',
    'detection_score',
    'quality_json',
    'model_id',
    'model_digest',
    'preprocessing_version',
    'embedding_source',
    'embedding_contract_id',
    'crop_image',
    'crop_media_type',
    'liveness_json',
    'created_at',
  ],
} as const;
type Table = keyof typeof TABLES;

/** The workspace tables, copied beside the gallery; checked by sorted canonical lines (collation-independent). */
const WS_TABLES = {
  workspaces: ['id', 'name', 'monthly_item_quota', 'monthly_review_quota', 'created_at'],
  workspace_keys: ['id', 'workspace_id', 'label', 'prefix', 'digest', 'created_at', 'last_used_at', 'revoked_at'],
  usage_monthly: ['workspace_id', 'period', 'kind', 'units', 'runs', 'review_units'],
  scrape_seen_items: ['workspace_id', 'kind', 'item_key', 'seen_at'],
  scrape_runs: [
    'id',
    'workspace_id',
    'kind',
    'status',
    'request_json',
    'period',
    'reserved_units',
    'billed_units',
    'reserved_reviews',
    'billed_reviews',
    'item_count',
    'attempts',
    'result_json',
    'result_purged_at',
    'error_json',
    'created_at',
    'started_at',
    'finished_at',
    'resume_at',
    'cancel_requested_at',
  ],
  scrape_items: ['run_id', 'seq', 'item_key', 'item_json'],
} as const;
type WsTable = keyof typeof WS_TABLES;
const wsFilter = (t: WsTable) =>
  t === 'workspaces'
    ? 'id'
    : t === 'scrape_items'
      ? 'run_id IN (SELECT id FROM scrape_runs WHERE workspace_id'
      : 'workspace_id';

function wsDigest(t: WsTable, rows: Record<string, unknown>[]): { rows: number; sha256: string } {
  const lines = rows
    .map((r) =>
      JSON.stringify(
        WS_TABLES[t].map((k) => {
          const v = r[k];
          return Buffer.isBuffer(v) ? v.toString('base64') : (v ?? null);
        }),
      ),
    )
    .sort();
  const d = new Digest();
  for (const l of lines) d.add(l);
  return { rows: d.count, sha256: d.hex() };
}

/** One canonical line per row (columns in a fixed order, BLOBs as base64): the same text on both engines. */
function canonical(table: Table, row: Record<string, unknown>): string {
  return JSON.stringify(
    TABLES[table].map((k) => {
      const v = row[k];
      return Buffer.isBuffer(v) ? v.toString('base64') : (v ?? null);
    }),
  );
}

class Digest {
  private readonly h = createHash('sha256');
  count = 0;
  add(line: string): void {
    this.h.update(line).update('\n');
    this.count++;
  }
  hex(): string {
    return this.h.digest('hex');
  }
}

async function pgDigests(pool: pg.Pool, ids: string[]): Promise<Record<Table, { rows: number; sha256: string }>> {
  const out = {} as Record<Table, { rows: number; sha256: string }>;
  for (const table of Object.keys(TABLES) as Table[]) {
    const d = new Digest();
    const key = table === 'collections' ? 'id' : 'seq';
    const where = table === 'collections' ? 'id = ANY($1)' : 'collection_id = ANY($1)';
    const rows = (
      await pool.query(`SELECT ${TABLES[table].join(', ')} FROM ${table} WHERE ${where} ORDER BY ${key}`, [ids])
    ).rows as Record<string, unknown>[];
    for (const r of rows) d.add(canonical(table, r));
    out[table] = { rows: d.count, sha256: d.hex() };
  }
  return out;
}

/** `vigil store migrate --to postgres`: a stopped SQLite box's gallery into PostgreSQL, verified. */
export async function runStoreCommand(argv: string[], io: CliIo = process): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      to: { type: 'string' },
      url: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals[0] !== 'migrate' || values.to !== 'postgres') {
    io.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  const { config } = loadConfig(values.config);
  const url = values.url ?? config.store.url;
  if (!url) throw Errors.usageError('Give the database with --url postgres://… or [store] url.');
  const db = openDatabase(config.server.data_dir);
  const pool = openPool({
    url,
    password: process.env.VIGIL_STORE_PASSWORD,
    passwordFile: config.store.password_file,
    poolSize: 2,
    applicationName: 'vigil-store-migrate',
  });
  try {
    const store = new CollectionStore(db.db);
    await migratePostgres(pool).catch((e: unknown) => {
      throw storeRefusal(e, url) ?? e;
    });
    const local = {} as Record<Table, Record<string, unknown>[]>;
    for (const table of Object.keys(TABLES) as Table[]) local[table] = store.allRows(table);
    const ids = local.collections.map((c) => c.id as string);
    const wsLocal = {} as Record<WsTable, Record<string, unknown>[]>;
    for (const t of Object.keys(WS_TABLES) as WsTable[])
      wsLocal[t] = db.db.prepare(`SELECT ${WS_TABLES[t].join(', ')} FROM ${t}`).all() as Record<string, unknown>[];
    const wsIds = wsLocal.workspaces.map((w) => w.id as string);
    const boxId = config.server.box_id ?? hostname();
    const t0 = performance.now();
    await withTransaction(pool, async (c) => {
      const clash = (await c.query<{ id: string }>('SELECT id FROM collections WHERE id = ANY($1)', [ids])).rows.map(
        (r) => r.id,
      );
      if (clash.length)
        throw Errors.usageError(`PostgreSQL already has collection(s) ${clash.join(', ')}: nothing was copied.`);
      const seqs = (
        await c.query<{ p: number; f: number }>(
          'SELECT (SELECT count(*) FROM persons)::int AS p, (SELECT count(*) FROM face_samples)::int AS f',
        )
      ).rows[0]!;
      if ((seqs.p > 0 || seqs.f > 0) && (local.persons.length > 0 || local.face_samples.length > 0)) {
        // Sequence numbers are kept (index files and keys stay valid): they must not collide with rows already there.
        const p = await c.query('SELECT 1 FROM persons WHERE seq = ANY($1) LIMIT 1', [local.persons.map((r) => r.seq)]);
        const f = await c.query('SELECT 1 FROM face_samples WHERE seq = ANY($1) LIMIT 1', [
          local.face_samples.map((r) => r.seq),
        ]);
        if (p.rowCount || f.rowCount)
          throw Errors.usageError(
            "PostgreSQL already holds rows with this box's sequence numbers (another box was migrated into it): migrate one box, then let the others follow.",
          );
      }
      const wsClash = (await c.query<{ id: string }>('SELECT id FROM workspaces WHERE id = ANY($1)', [wsIds])).rows.map(
        (r) => r.id,
      );
      if (wsClash.length)
        throw Errors.usageError(`PostgreSQL already has workspace(s) ${wsClash.join(', ')}: nothing was copied.`);
      const insert = async (
        table: Table | WsTable,
        rows: Record<string, unknown>[],
        extra: Record<string, unknown> = {},
      ) => {
        const cols = [
          ...(table in TABLES ? TABLES[table as Table] : WS_TABLES[table as WsTable]).filter(
            (k) => !(k in extra) && !(table === 'collections' && (k === 'person_count' || k === 'face_count')),
          ),
          ...Object.keys(extra),
        ];
        for (let i = 0; i < rows.length; i += 500) {
          const chunk = rows.slice(i, i + 500);
          const params: unknown[] = [];
          const tuples = chunk.map(
            (r) => `(${cols.map((k) => `$${params.push(k in extra ? extra[k] : (r[k] ?? null))}`).join(', ')})`,
          );
          await c.query(`INSERT INTO ${table} (${cols.join(', ')}) VALUES ${tuples.join(', ')}`, params);
        }
      };
      await insert('collections', local.collections);
      // The counter triggers fill person_count / face_count as rows arrive.
      await insert(
        'persons',
        local.persons.map((p) => ({ ...p, face_count: 0 })),
      );
      await insert('face_samples', local.face_samples);
      await c.query(
        "SELECT setval(pg_get_serial_sequence('persons', 'seq'), greatest((SELECT max(seq) FROM persons), 1))",
      );
      await c.query(
        "SELECT setval(pg_get_serial_sequence('face_samples', 'seq'), greatest((SELECT max(seq) FROM face_samples), 1))",
      );
      await c.query("SELECT pg_notify('vigil_gallery', id) FROM collections WHERE id = ANY($1)", [ids]);
      for (const t of Object.keys(WS_TABLES) as WsTable[])
        await insert(t, wsLocal[t], t === 'scrape_runs' ? { box_id: boxId } : {});
    });
    const copyMs = performance.now() - t0;
    const sqlite = {} as Record<Table, { rows: number; sha256: string }>;
    for (const table of Object.keys(TABLES) as Table[]) {
      const d = new Digest();
      for (const r of local[table]) d.add(canonical(table, r));
      sqlite[table] = { rows: d.count, sha256: d.hex() };
    }
    const postgres: Record<string, { rows: number; sha256: string }> = await pgDigests(pool, ids);
    for (const t of Object.keys(WS_TABLES) as WsTable[]) {
      (sqlite as Record<string, { rows: number; sha256: string }>)[t] = wsDigest(t, wsLocal[t]);
      const f = wsFilter(t);
      const sql = `SELECT ${WS_TABLES[t].join(', ')} FROM ${t} WHERE ${f} = ANY($1)${t === 'scrape_items' ? ')' : ''}`;
      postgres[t] = wsDigest(t, (await pool.query(sql, [wsIds])).rows as Record<string, unknown>[]);
    }
    const all = Object.keys(sqlite) as (keyof typeof sqlite)[];
    const ok = all.every((t) => sqlite[t].rows === postgres[t]!.rows && sqlite[t].sha256 === postgres[t]!.sha256);
    const report = { ok, copy_ms: Math.round(copyMs), sqlite, postgres };
    if (values.json) io.stdout.write(`${JSON.stringify(report)}\n`);
    else {
      for (const t of all) {
        io.stdout.write(
          `${t.padEnd(17)} sqlite ${String(sqlite[t].rows).padStart(8)} rows ${sqlite[t].sha256.slice(0, 16)}  postgres ${String(postgres[t]!.rows).padStart(8)} rows ${postgres[t]!.sha256.slice(0, 16)}  ${sqlite[t].sha256 === postgres[t]!.sha256 && sqlite[t].rows === postgres[t]!.rows ? 'match' : 'MISMATCH'}\n`,
        );
      }
      io.stdout.write(
        ok
          ? `copied and verified in ${Math.round(copyMs)} ms; set [store] backend = "postgres" and start the daemon\n`
          : 'verification FAILED\n',
      );
    }
    return ok ? 0 : 1;
  } finally {
    await pool.end().catch(() => undefined);
    db.close();
  }
}
