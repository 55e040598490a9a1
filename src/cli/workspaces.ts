import { parseArgs } from 'node:util';
import { loadConfig } from '../config/load.js';
import { Errors } from '../contract/errors.js';
import { PgUsageMeter } from '../scrapers/pgRunStore.js';
import { openDatabase, type OpenedDatabase } from '../store/database.js';
import { migratePostgres, openPool, storeRefusal } from '../store/postgres.js';
import { PgWorkspaceStore } from '../workspaces/pgWorkspaceStore.js';
import type { UsageReader, WorkspaceRepository } from '../workspaces/repository.js';
import { billingPeriod, UsageMeter } from '../workspaces/usageMeter.js';
import { WorkspaceStore } from '../workspaces/workspaceStore.js';

export interface CliIo {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
}

const USAGE = `Usage:
  vigil workspaces create --name NAME [--id ID] [--quota ITEMS] [--review-quota REVIEWS]
                                                                   create a workspace (quotas per month; defaults from [scrapers])
  vigil workspaces list                                            workspaces with this month's usage
  vigil workspaces set-quota ID (ITEMS|default)
  vigil workspaces set-review-quota ID (REVIEWS|default)           places reviews, metered apart from items
  vigil keys create --workspace ID [--label TEXT]                  prints the key once; only its hash is stored
  vigil keys list [--workspace ID]
  vigil keys revoke KEY_ID
Common: --config FILE (the daemon's server.toml, for data_dir), --json
`;

const quotaArg = (v: string): number | null => {
  if (v === 'default') return null;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0)
    throw Errors.usageError(`The quota must be a non-negative integer or "default" (got "${v}").`);
  return n;
};

/**
 * `vigil workspaces …` and `vigil keys …`: administration straight on the store (works while the daemon
 * runs): the SQLite file, or in fleet mode ([store] backend = "postgres") the shared PostgreSQL database,
 * so a workspace or key created (or a key revoked) from any box applies to every box.
 */
export async function runWorkspacesCommand(
  group: 'workspaces' | 'keys',
  argv: string[],
  io: CliIo = process,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      name: { type: 'string' },
      id: { type: 'string' },
      quota: { type: 'string' },
      'review-quota': { type: 'string' },
      workspace: { type: 'string', short: 'w' },
      label: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [action, ...rest] = positionals;
  if (values.help || !action) {
    io.stdout.write(USAGE);
    return values.help ? 0 : 2;
  }
  const { config } = loadConfig(values.config);
  let db: OpenedDatabase | null = null;
  let pool: ReturnType<typeof openPool> | null = null;
  try {
    let store: WorkspaceRepository, meter: UsageReader;
    if (config.store.backend === 'postgres') {
      pool = openPool({
        url: config.store.url!,
        password: process.env.VIGIL_STORE_PASSWORD,
        passwordFile: config.store.password_file,
        poolSize: 2,
        applicationName: 'vigil-workspaces',
      });
      const url = config.store.url!;
      await migratePostgres(pool).catch((e: unknown) => {
        throw storeRefusal(e, url) ?? e;
      });
      store = new PgWorkspaceStore(pool, null, null);
      meter = new PgUsageMeter(pool, config.scrapers.free_items_per_month, config.scrapers.free_reviews_per_month);
    } else {
      db = openDatabase(config.server.data_dir, undefined, { lock: false });
      store = new WorkspaceStore(db.db);
      meter = new UsageMeter(db.db, config.scrapers.free_items_per_month, config.scrapers.free_reviews_per_month);
    }
    const out = (json: unknown, text: string) =>
      io.stdout.write(values.json ? `${JSON.stringify(json, null, 2)}\n` : text);
    const key = `${group} ${action}`;
    switch (key) {
      case 'workspaces create': {
        if (!values.name) throw Errors.usageError('--name is required.');
        const ws = await store.create({
          id: values.id,
          name: values.name,
          monthlyItemQuota: values.quota === undefined ? null : quotaArg(values.quota),
          monthlyReviewQuota: values['review-quota'] === undefined ? null : quotaArg(values['review-quota']),
        });
        out(
          ws,
          `created workspace ${ws.id} (${ws.name}), quota ${ws.monthly_item_quota ?? `${config.scrapers.free_items_per_month} (default)`} items/month\nnext: vigil keys create --workspace ${ws.id}\n`,
        );
        return 0;
      }
      case 'workspaces list': {
        const period = billingPeriod(new Date());
        const rows = await Promise.all(
          (await store.list()).map(async (w) => ({ ...w, usage: await meter.snapshot(w.id, period) })),
        );
        out(
          rows,
          rows.length
            ? rows.map((w) => `${w.id}\t${w.name}\tused ${w.usage.used}/${w.usage.quota} in ${period}\n`).join('')
            : 'no workspaces\n',
        );
        return 0;
      }
      case 'workspaces set-quota': {
        const [id, quota] = rest;
        if (!id || quota === undefined) throw Errors.usageError('usage: vigil workspaces set-quota ID (ITEMS|default)');
        const ws = await store.setQuota(id, quotaArg(quota));
        out(ws, `workspace ${ws.id}: quota ${ws.monthly_item_quota ?? 'default'}\n`);
        return 0;
      }
      case 'workspaces set-review-quota': {
        const [id, quota] = rest;
        if (!id || quota === undefined)
          throw Errors.usageError('usage: vigil workspaces set-review-quota ID (REVIEWS|default)');
        const ws = await store.setReviewQuota(id, quotaArg(quota));
        out(ws, `workspace ${ws.id}: review quota ${ws.monthly_review_quota ?? 'default'}\n`);
        return 0;
      }
      case 'keys create': {
        if (!values.workspace) throw Errors.usageError('--workspace is required.');
        const { key: k, token } = await store.createKey(values.workspace, values.label ?? '');
        out({ ...k, token }, `${token}\n`);
        io.stderr.write(
          `key ${k.id} for workspace ${k.workspace_id}: shown once, store it now (only its hash is kept).\n`,
        );
        return 0;
      }
      case 'keys list': {
        if (values.workspace) await store.require(values.workspace);
        const keys = await store.listKeys(values.workspace);
        out(
          keys,
          keys.length
            ? keys
                .map(
                  (k) =>
                    `${k.id}\t${k.workspace_id}\t${k.prefix}…\t${k.revoked_at ? `revoked ${k.revoked_at}` : 'active'}\t${k.label}\n`,
                )
                .join('')
            : 'no keys\n',
        );
        return 0;
      }
      case 'keys revoke': {
        const [id] = rest;
        if (!id) throw Errors.usageError('usage: vigil keys revoke KEY_ID');
        const k = await store.revokeKey(id);
        out(k, `revoked ${k.id} (workspace ${k.workspace_id})\n`);
        return 0;
      }
      default:
        io.stderr.write(`vigil: unknown command "${key}"\n${USAGE}`);
        return 2;
    }
  } finally {
    db?.close();
    await pool?.end().catch(() => undefined);
  }
}
