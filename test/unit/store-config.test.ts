import test from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OperatorError } from '../../src/contract/errors.js';
import { loadConfig } from '../../src/config/load.js';
import { storePassword } from '../../src/store/postgres.js';
import { fileTempDir } from '../helpers/tempDir.js';

const dir = fileTempDir('vigil-store-config-');
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

test('[store] defaults to sqlite; postgres needs a url; env overrides backend, url and box_id', (t) => {
  const { config } = loadConfig(null, {});
  t.like(config.store, { backend: 'sqlite', pool_size: 8 });
  t.is(config.server.box_id, undefined);
  const err = t.throws(() => loadConfig(file('a.toml', '[store]\nbackend = "postgres"\n'), {}));
  t.true(err instanceof OperatorError);
  t.regex(err!.message, /url/);
  t.throws(() => loadConfig(file('b.toml', '[store]\nbackend = "postgres"\nurl = "mysql://x"\n'), {}));
  const ok = loadConfig(
    file(
      'c.toml',
      '[server]\nbox_id = "door-1"\n[store]\nbackend = "postgres"\nurl = "postgres://vigil@db/vigil"\npool_size = 4\n',
    ),
    {},
  ).config;
  t.like(ok.store, { backend: 'postgres', url: 'postgres://vigil@db/vigil', pool_size: 4 });
  t.is(ok.server.box_id, 'door-1');
  t.throws(() => loadConfig(file('d.toml', '[server]\nbox_id = "bad id"\n'), {}));
  const env = loadConfig(null, {
    VIGIL_STORE_BACKEND: 'postgres',
    VIGIL_STORE_URL: 'postgres://h/db',
    VIGIL_BOX_ID: 'b2',
  }).config;
  t.like(env.store, { backend: 'postgres', url: 'postgres://h/db' });
  t.is(env.server.box_id, 'b2');
  t.throws(() => loadConfig(null, { VIGIL_STORE_BACKEND: 'postgres' }), { message: /store\.url/ });
});

test('the store password comes from the environment first, then the password file (newline dropped)', (t) => {
  const pw = file('pw', 's3cret\n');
  t.is(storePassword({ password: 'env', passwordFile: pw }), 'env');
  t.is(storePassword({ passwordFile: pw }), 's3cret');
  t.is(storePassword({}), undefined);
});

test('[store] change-log pruning: a week of retention, pruned every 10 minutes by default; 0 turns pruning off', (t) => {
  t.like(loadConfig(null, {}).config.store, {
    change_log_retention_seconds: 604_800,
    change_log_prune_interval_seconds: 600,
  });
  const off = loadConfig(
    file('p.toml', '[store]\nchange_log_retention_seconds = 0\nchange_log_prune_interval_seconds = 30\n'),
    {},
  ).config;
  t.like(off.store, { change_log_retention_seconds: 0, change_log_prune_interval_seconds: 30 });
  t.throws(() => loadConfig(file('q.toml', '[store]\nchange_log_retention_seconds = -1\n'), {}));
});
