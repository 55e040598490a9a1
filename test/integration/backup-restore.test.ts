import test from 'ava';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tar from 'tar';
import Database from 'better-sqlite3';
import { createBackup, restoreBackup } from '../../src/cli/backup.js';
import { buildCommit, VERSION } from '../../src/contract/version.js';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { enrollObamaBiden } from '../helpers/monitors.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Backup while the daemon runs and registers faces (load), restore on a stopped box: the restored
 * daemon has the manifest's counts and answers the same searches with the same results.
 */
const QUERIES = ['identities/obama/1.jpg', 'identities/biden/1.jpg', 'identities/nathalie_baye/1.jpg'];
const LOAD = ['rob_lowe', 'rose_leslie', 'yifei', 'kit_harington'];

async function searches(d: TestDaemon) {
  const out = [];
  for (const q of QUERIES) {
    const r = await post(d, '/v1/collections/gallery/search', form({ image: face(q), limit: '5' }));
    out.push(r.json.matches ?? r.json);
  }
  return out;
}

test('a backup taken under load restores to an identical gallery; tampering, a running daemon and a non-empty target are refused', async (t) => {
  // Its own dir: the source database is read again after a.close().
  const a = await startTestDaemon({ dir: tempDir(t, 'vigil-source-') });
  const aDir = a.runtime.loaded.config.server.data_dir;
  const dir = tempDir(t, 'vigil-backup-');
  const archive = join(dir, 'box.tar.gz');
  let manifest;
  let before;
  try {
    await enrollObamaBiden(a, 'gallery');
    t.is((await call(a, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/hook', enabled: false })).status, 201);
    t.is((await call(a, 'POST', '/v1/kiosk-tokens', { monitor_ids: ['door'] })).status, 201);
    before = await searches(a);
    t.true(before[0].length >= 1, JSON.stringify(before[0]));
    t.is((await call(a, 'POST', '/v1/collections', { id: 'load', name: 'load' })).status, 201);
    // Load: registrations committing while the backup runs.
    const load = Promise.all(
      LOAD.map((p) =>
        post(a, '/v1/collections/load/persons', form({ id: p, name: p, images: [face(`identities/${p}/1.jpg`)] })),
      ),
    );
    manifest = await createBackup(aDir, archive);
    await load;
    // A running daemon is never restored over (its kernel lock on the data dir), --force included.
    for (const force of [false, true]) {
      const running = await t.throwsAsync(restoreBackup(aDir, archive, { force }));
      t.is((running as any).code, 'data_dir_locked');
    }
  } finally {
    await a.close();
  }
  t.is(manifest.format, 'vigil-backup-1');
  t.deepEqual(manifest.store, { kind: 'sqlite', scope: 'full' }, 'a single box: the archive is the whole gallery');
  t.is(manifest.vigil_version, VERSION);
  t.is(manifest.vigil_commit, buildCommit());
  t.true(manifest.files.some((f) => f.path === 'vigil.db'));
  t.true(manifest.files.some((f) => f.path === 'cursor.key'));
  t.is(manifest.counts.collections, 2);
  const persons = manifest.counts.persons ?? 0;
  t.true(persons >= 2 && persons <= 2 + LOAD.length);
  t.is(manifest.counts.webhooks, 1);
  t.is(manifest.counts.kiosk_tokens, 1);

  // Restore into a fresh box (the daemon's data dir), then start it there.
  const bRoot = tempDir(t, 'vigil-restored-');
  const bData = join(bRoot, 'data');
  const restored = await restoreBackup(bData, archive);
  t.deepEqual(restored.counts, manifest.counts);
  // A second restore over it needs --force, and keeps the previous contents aside.
  t.is(((await t.throwsAsync(restoreBackup(bData, archive))) as any).code, 'restore_target_in_use');
  await restoreBackup(bData, archive, { force: true });
  const b = await startTestDaemon({ dir: bRoot });
  try {
    const sys = (await call(b, 'GET', '/v1/system')).json;
    t.is(sys.stats.collection_count, manifest.counts.collections);
    t.is(sys.stats.person_count, manifest.counts.persons);
    t.is(sys.stats.face_count, manifest.counts.faces);
    // The same matches (persons and matched faces); similarities agree to 1e-5 (the query is embedded anew by
    // another process, whose float sums may differ in the last bits; the stored embeddings are compared exactly below).
    const after = await searches(b);
    t.deepEqual(
      after.map((ms: any[]) => ms.map((m) => [m.person.id, m.matched_face_id])),
      before.map((ms: any[]) => ms.map((m) => [m.person.id, m.matched_face_id])),
    );
    after.forEach((ms: any[], i: number) =>
      ms.forEach((m, j) => t.true(Math.abs(m.similarity - before[i][j].similarity) < 1e-5)),
    );
    const gallery = (await call(b, 'GET', '/v1/collections/gallery/persons')).json.persons.map((p: any) => p.id).sort();
    t.deepEqual(gallery, ['biden', 'obama']);
    // Cursor signing and kiosk tokens came along (the key files and the tables).
    t.is((await call(b, 'GET', '/v1/kiosk-tokens')).json.kiosk_tokens.length, 1);
    t.is((await call(b, 'GET', '/v1/webhooks')).json.webhooks.length, 1);
  } finally {
    await b.close();
  }

  // Every face row of the restored box (embeddings, crops, metadata) is byte-identical to the source's.
  const rows = (path: string) => {
    const conn = new Database(path, { readonly: true });
    try {
      return (conn.prepare('SELECT * FROM face_samples ORDER BY id').all() as Record<string, unknown>[]).map((r) =>
        JSON.stringify(r),
      );
    } finally {
      conn.close();
    }
  };
  const source = new Set(rows(join(aDir, 'vigil.db')));
  const copy = rows(join(bData, 'vigil.db'));
  t.is(copy.length, manifest.counts.faces ?? -1);
  t.true(copy.every((r) => source.has(r)));

  // A tampered archive: one byte of the database changed; verification refuses it and restores nothing.
  const x = tempDir(t, 'vigil-tamper-');
  await tar.x({ file: archive, cwd: x });
  const db = readFileSync(join(x, 'vigil.db'));
  db[db.length - 100] = db[db.length - 100]! ^ 0xff;
  writeFileSync(join(x, 'vigil.db'), db);
  const bad = join(dir, 'tampered.tar.gz');
  await tar.c({ gzip: true, file: bad, cwd: x }, ['manifest.json', ...manifest.files.map((f) => f.path)]);
  const empty = join(tempDir(t, 'vigil-empty-'), 'data');
  const err = await t.throwsAsync(restoreBackup(empty, bad));
  t.is((err as any).code, 'backup_invalid');
  t.regex(err!.message, /vigil\.db fails its SHA-256 checksum/);
  t.deepEqual(
    (await import('node:fs')).readdirSync(empty).filter((n) => n !== 'vigil.lock'),
    [],
  );
});
