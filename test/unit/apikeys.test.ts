import test from 'ava';
import { join } from 'node:path';
import { ApiKeyStore } from '../../src/auth/apiKeyStore.js';
import { openDatabase, type OpenedDatabase } from '../../src/store/database.js';
import { fileTempDir } from '../helpers/tempDir.js';

const root = fileTempDir('vigil-keys-test-');
const opened: OpenedDatabase[] = [];
test.after.always(() => {
  for (const o of opened) o.close();
});
let n = 0;
function freshStore(): { store: ApiKeyStore; db: OpenedDatabase['db'] } {
  const o = openDatabase(join(root, `data-${n++}`));
  opened.push(o);
  return { store: new ApiKeyStore(o.db), db: o.db };
}

const KEY_A = 'first-key-0123456789abcdef';
const KEY_B = 'second-key-zyxwvutsrqponm';

interface Row {
  id: number;
  label: string;
  active: number;
  salt: Buffer;
  digest: Buffer;
}

test('ensureKey: created, unchanged, rotated (old row inactive)', (t) => {
  const { store, db } = freshStore();
  t.false(store.hasActiveKey());
  t.is(store.ensureKey(KEY_A), 'created');
  t.true(store.hasActiveKey());
  t.is(store.ensureKey(KEY_A), 'unchanged');
  t.is((db.prepare('SELECT count(*) AS n FROM api_keys').get() as { n: number }).n, 1);
  t.is(store.ensureKey(KEY_B, 'rotation'), 'rotated');
  const rows = db.prepare('SELECT id, label, active, salt, digest FROM api_keys ORDER BY id').all() as Row[];
  t.is(rows.length, 2);
  t.is(rows[0]!.active, 0);
  t.is(rows[1]!.active, 1);
  t.is(rows[1]!.label, 'rotation');
  t.is(rows[0]!.label, 'startup');
  // Stored as salted digests, never the plain key.
  for (const r of rows) {
    t.is(r.salt.length, 16);
    t.is(r.digest.length, 32);
    t.false(r.digest.toString('latin1').includes('key'));
  }
  t.notDeepEqual(rows[0]!.salt, rows[1]!.salt);
  t.is(store.ensureKey(KEY_B), 'unchanged');
});

test('verify: true for the key, false for others and empty', async (t) => {
  const { store } = freshStore();
  t.false(await store.verify(KEY_A), 'no key configured yet');
  store.ensureKey(KEY_A);
  t.true(await store.verify(KEY_A));
  t.true(await store.verify(KEY_A), 'cached path');
  t.false(await store.verify(KEY_B));
  t.false(await store.verify(''));
  t.false(await store.verify(KEY_A.slice(0, -1)));
  t.false(await store.verify(`${KEY_A} `));
});

test('verify after rotation rejects the old key and accepts the new one', async (t) => {
  const { store } = freshStore();
  store.ensureKey(KEY_A);
  t.true(await store.verify(KEY_A)); // warms the per-process cache for KEY_A
  store.ensureKey(KEY_B);
  t.false(await store.verify(KEY_A));
  t.true(await store.verify(KEY_B));
  t.false(await store.verify(KEY_A));
});

test('a rotation by another store instance on the same database invalidates cached verification', async (t) => {
  const { store, db } = freshStore();
  store.ensureKey(KEY_A);
  t.true(await store.verify(KEY_A));
  new ApiKeyStore(db).ensureKey(KEY_B);
  t.false(await store.verify(KEY_A));
  t.true(await store.verify(KEY_B));
});

test('a rotation through another connection (a vigil command beside the daemon) is seen on the next request', async (t) => {
  const dir = join(root, `data-${n++}`);
  const a = openDatabase(dir);
  const b = openDatabase(dir, undefined, { lock: false }); // as an admin command opens it
  opened.push(a, b);
  const daemon = new ApiKeyStore(a.db);
  daemon.ensureKey(KEY_A);
  t.true(await daemon.verify(KEY_A));
  t.true(daemon.fastPath);
  new ApiKeyStore(b.db).ensureKey(KEY_B, 'cli');
  t.false(daemon.fastPath, 'the active key read again after the other connection committed');
  t.false(await daemon.verify(KEY_A));
  t.true(await daemon.verify(KEY_B));
  // Nothing changed since: the cached row is used, and still right.
  t.true(await daemon.verify(KEY_B));
  t.false(await daemon.verify(KEY_A));
});

test('the key survives reopening the database', async (t) => {
  const dir = join(root, `data-${n++}`);
  const first = openDatabase(dir);
  new ApiKeyStore(first.db).ensureKey(KEY_A);
  first.close();
  const second = openDatabase(dir);
  opened.push(second);
  const store = new ApiKeyStore(second.db);
  t.true(store.hasActiveKey());
  t.is(store.ensureKey(KEY_A), 'unchanged');
  t.true(await store.verify(KEY_A));
});

test('a key configured at start-up is verified once: wrong keys never run scrypt', async (t) => {
  const { store, db } = freshStore();
  store.ensureKey(KEY_A);
  // A fresh store on the same database, as after a restart with the key in the environment.
  const restarted = new ApiKeyStore(db);
  t.is(restarted.ensureKey(KEY_A), 'unchanged');
  t.true(restarted.fastPath);
  for (let i = 0; i < 50; i++) t.false(await restarted.verify(`wrong-key-${i}-0123456789abcdef`));
  t.true(await restarted.verify(KEY_A));
  t.is(restarted.scryptVerifications, 0);
});

test('without the key at start-up a repeated wrong key costs scrypt once; the right key then takes the fast path', async (t) => {
  const { store, db } = freshStore();
  store.ensureKey(KEY_A);
  const restarted = new ApiKeyStore(db); // started without the key: only the digest is known
  t.false(restarted.fastPath);
  const wrong = await Promise.all(Array.from({ length: 5 }, () => restarted.verify(KEY_B)));
  t.deepEqual(wrong, [false, false, false, false, false]);
  for (let i = 0; i < 20; i++) t.false(await restarted.verify(KEY_B));
  t.true(restarted.scryptVerifications <= 5);
  const before = restarted.scryptVerifications;
  t.true(await restarted.verify(KEY_A));
  t.true(restarted.fastPath);
  t.false(await restarted.verify('another-wrong-key-0123456789'));
  t.is(restarted.scryptVerifications, before + 1);
});
