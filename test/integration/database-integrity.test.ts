import test from 'ava';
import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { call, startTestDaemon, TEST_KEY } from '../helpers/daemon.js';
import { startChild, startDaemonProcess } from '../helpers/daemonProcess.js';
import { tempDir } from '../helpers/tempDir.js';

/** Garbage over b-tree pages of a filler table near the end of the file: the daemon opens and migrates, only quick_check can tell. */
function damageFillerPages(path: string): void {
  const raw = new Database(path);
  raw.exec('CREATE TABLE filler (id INTEGER PRIMARY KEY, v BLOB)');
  const insert = raw.prepare('INSERT INTO filler (v) VALUES (randomblob(300))');
  raw.transaction(() => {
    for (let i = 0; i < 3000; i++) insert.run();
  })();
  raw.pragma('wal_checkpoint(TRUNCATE)');
  const pageSize = raw.pragma('page_size', { simple: true }) as number;
  raw.close();
  const bytes = readFileSync(path);
  const pages = bytes.length / pageSize;
  bytes.fill(0x5a, (pages - 3) * pageSize, (pages - 1) * pageSize);
  writeFileSync(path, bytes);
}

test('a restart after an orderly stop is ready with the database known good from its clean-shutdown marker, no quick_check', async (t) => {
  const dir = tempDir(t, 'vigil-integrity-');
  let d = await startTestDaemon({ dir });
  try {
    t.is((await call(d, 'POST', '/v1/collections', { id: 'c1', name: 'c1' })).status, 201);
  } finally {
    await d.close();
  }
  d = await startTestDaemon({ dir });
  try {
    // At the moment the daemon is ready, with no check having run.
    t.is(d.runtime.db.integrity, 'ok');
    t.is(d.runtime.db.integrityProof, 'clean_shutdown');
    const health = await call(d, 'GET', '/v1/health');
    t.is(health.json.status, 'ready');
    const sys = await call(d, 'GET', '/v1/system');
    t.like(sys.json.database, { quick_check: 'ok', integrity_proof: 'clean_shutdown' });
  } finally {
    await d.close();
  }
});

test('after a SIGKILL the daemon is ready before quick_check runs; a damaged page is still found: then not_ready, 503 everywhere', async (t) => {
  const proc = await startDaemonProcess({ logLevel: 'info' });
  const auth = { Authorization: `Bearer ${TEST_KEY}`, 'Content-Type': 'application/json' };
  const created = await fetch(`${proc.url}/v1/collections`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ id: 'c1', name: 'c1' }),
  });
  t.is(created.status, 201);
  await proc.kill();
  damageFillerPages(join(proc.dataDir, 'vigil.db'));

  const { child, url } = startChild(join(dirname(proc.dataDir), 'server.toml'));
  t.teardown(() => void child.kill('SIGKILL'));
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  const base = await url;
  const logged = (msg: string) => out.split('\n').findIndex((l) => l.includes(`"msg":"${msg}`));
  for (let i = 0; i < 600 && logged('database integrity check failed') < 0; i++)
    await new Promise((r) => setTimeout(r, 100));
  const ready = logged('ready');
  const failed = logged('database integrity check failed');
  t.true(failed >= 0, out);
  t.true(ready >= 0 && ready < failed, 'ready (cameras started, READY=1) comes before the check ends');
  t.regex(out.split('\n')[ready]!, /"database_integrity":"checking"/);

  const health = await fetch(`${base}/v1/health`);
  t.is(health.status, 503);
  t.is(((await health.json()) as { status: string }).status, 'not_ready');
  const sys = (await (await fetch(`${base}/v1/system`, { headers: auth })).json()) as {
    database: { quick_check: string; integrity_proof: string };
  };
  t.not(sys.database.quick_check, 'ok');
  t.is(sys.database.integrity_proof, 'quick_check');
  for (const [method, path, body] of [
    ['GET', '/v1/collections', undefined],
    ['POST', '/v1/collections', JSON.stringify({ id: 'c2', name: 'c2' })],
    ['DELETE', '/v1/collections/c1?force=true', undefined],
  ] as const) {
    const r = await fetch(base + path, { method, headers: auth, body });
    t.is(r.status, 503);
    const json = (await r.json()) as { error: { code: string; details: { quick_check: string } } };
    t.is(json.error.code, 'database_not_verified');
    t.is(json.error.details.quick_check, sys.database.quick_check);
  }
});
