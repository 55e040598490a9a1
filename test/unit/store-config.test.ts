import test from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { EXIT, exitCodeFor } from '../../src/cli/exitCodes.js';
import { OperatorError } from '../../src/contract/errors.js';
import { loadConfig } from '../../src/config/load.js';
import { clientConfig, storePassword, storeRefusal } from '../../src/store/postgres.js';
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

test("the password pg connects with is the env's or the file's, also with a URL that has none (the documented form)", (t) => {
  const pw = file('pw2', 'from-file\n');
  // What pg itself resolves from the config (a connectionString's fields would win over ours).
  const used = (o: Parameters<typeof clientConfig>[0]) =>
    (new pg.Client(clientConfig(o)) as unknown as { password: unknown }).password;
  const url = 'postgres://vigil@db.lan:5433/fleet?application_name=x';
  t.is(used({ url, passwordFile: pw, poolSize: 1 }), 'from-file');
  t.is(used({ url, password: 'from-env', passwordFile: pw, poolSize: 1 }), 'from-env');
  t.is(used({ url: 'postgres://vigil:in-url@db.lan/fleet', passwordFile: pw, poolSize: 1 }), 'from-file');
  t.is(used({ url: 'postgres://vigil:in-url@db.lan/fleet', poolSize: 1 }), 'in-url');
  t.like(clientConfig({ url, poolSize: 1 }), { host: 'db.lan', port: 5433, user: 'vigil', database: 'fleet' });
});

test('an unreadable or empty password_file is store_misconfigured (exit 16), naming the file', (t) => {
  for (const [passwordFile, re] of [
    [join(dir, 'absent'), /^\[store\] password_file .*absent cannot be read/],
    [file('empty', '\n'), /^\[store\] password_file .*empty is empty/],
  ] as const) {
    const err = t.throws(() => storePassword({ passwordFile }));
    t.is((err as OperatorError).code, 'store_misconfigured');
    t.regex(err!.message, re);
    t.is(exitCodeFor(err), EXIT.storeMisconfigured);
  }
});

test('refusals a restart cannot cure are store_misconfigured; unreachable or restarting is not', (t) => {
  const url = 'postgres://vigil@db.lan:5433/fleet';
  const pgErr = (code: string, message: string) => Object.assign(new Error(message), { code });
  for (const [e, re] of [
    [pgErr('28P01', 'password authentication failed for user "vigil"'), /refused the login: password authentication/],
    [pgErr('28000', 'no pg_hba.conf entry for host "10.0.0.2"'), /refused the login: no pg_hba\.conf entry/],
    [pgErr('3D000', 'database "fleet" does not exist'), /database "fleet" does not exist\. Create it/],
    [pgErr('42501', 'permission denied for schema public'), /permission denied for schema public/],
    [new Error('SASL: SCRAM-SERVER-FIRST-MESSAGE: client password must be a string'), /there is no password/],
  ] as const) {
    const refused = storeRefusal(e, url);
    t.is(refused?.code, 'store_misconfigured', e.message);
    t.regex(refused!.message, /^\[store\] /);
    t.regex(refused!.message, /db\.lan:5433/);
    t.regex(refused!.message, re);
    t.is(exitCodeFor(refused), EXIT.storeMisconfigured);
  }
  for (const e of [
    pgErr('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.1:5432'),
    pgErr('57P03', 'the database system is starting up'),
    pgErr('53300', 'sorry, too many clients already'),
    new Error('timeout exceeded when trying to connect'),
  ])
    t.is(storeRefusal(e, url), null, e.message);
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
