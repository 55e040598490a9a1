import test from 'ava';
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { fileTempDir } from '../helpers/tempDir.js';

const mnt = fileTempDir('vigil-full-');
const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'tmpfs', mnt]).status === 0;
let d: TestDaemon | undefined;
test.after.always(async () => {
  await d?.close();
  if (mounted) spawnSync('umount', [mnt]);
});

/** Fills the file system with one file until ENOSPC; returns its path. */
function fill(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  } finally {
    closeSync(fd);
  }
  // The last partial blocks too.
  const fd2 = openSync(path, 'a');
  try {
    for (;;) writeSync(fd2, Buffer.alloc(512, 1));
  } catch {
    /* full */
  } finally {
    closeSync(fd2);
  }
  return path;
}

const bigMetadata = { blob: 'm'.repeat(256 * 1024) };

test('full disk: 507 insufficient_storage (not 500), deletes still work, health degraded, system writable false, recovery without restart', async (t) => {
  if (!mounted) {
    t.log('SKIPPED: mounting a tmpfs is not permitted here');
    t.pass();
    return;
  }
  d = await startTestDaemon({
    dir: mnt,
    server: [`storage_reserve_bytes = ${4 * 1024 * 1024}`, `max_request_bytes = ${1024 * 1024}`],
  });
  for (let i = 0; i < 3; i++)
    t.is(
      (await call(d, 'POST', '/v1/collections', { id: `keep${i}`, name: 'keep', metadata: bigMetadata })).status,
      201,
    );
  t.is((await call(d, 'GET', '/v1/health')).json.status, 'ready');
  const filler = fill(mnt);

  // Writes now run out of space (SQLite's WAL has to grow sooner or later).
  let r = await call(d, 'POST', '/v1/collections', { id: 'grow0', name: 'grow', metadata: bigMetadata });
  for (let i = 1; i < 200 && r.status === 201; i++)
    r = await call(d, 'POST', '/v1/collections', { id: `grow${i}`, name: 'grow', metadata: bigMetadata });
  t.is(r.status, 507, JSON.stringify(r.json));
  t.is(r.json.error.code, 'insufficient_storage');
  t.regex(r.json.error.details.reason, /SQLITE_FULL|ENOSPC/);
  t.is(r.json.error.details.reserve_bytes, 4 * 1024 * 1024);
  t.regex(r.json.request_id, /^[0-9a-f-]{36}$/);

  const health = await call(d, 'GET', '/v1/health');
  t.is(health.status, 200);
  t.is(health.json.status, 'degraded');
  t.is(health.json.reasons[0].code, 'insufficient_storage');
  const system = await call(d, 'GET', '/v1/system');
  t.is(system.json.data.writable, false);
  t.truthy(system.json.data.full_reason);

  // Further growth is refused up front; reads and pure compute still work.
  const again = await call(d, 'POST', '/v1/collections', { id: 'refused', name: 'refused' });
  t.is(again.status, 507);
  t.is((await call(d, 'GET', '/v1/collections')).status, 200);
  const detect = await post(d, '/v1/detect', form({ image: face('identities/obama/1.jpg') }));
  t.is(detect.res.status, 200, JSON.stringify(detect.json));

  // Deletes work while the disk is full (the released reserve gives SQLite room for them).
  for (let i = 0; i < 3; i++) {
    const del = await call(d, 'DELETE', `/v1/collections/keep${i}`);
    t.true(del.status < 300, JSON.stringify(del.json));
  }

  // Space comes back: the daemon notices on its own (no restart) and takes writes again.
  rmSync(filler);
  let status = '';
  for (let i = 0; i < 50 && status !== 'ready'; i++) {
    await new Promise((res) => setTimeout(res, 200));
    status = (await call(d, 'GET', '/v1/health')).json.status as string;
  }
  t.is(status, 'ready');
  t.is((await call(d, 'GET', '/v1/system')).json.data.writable, true);
  t.is((await call(d, 'POST', '/v1/collections', { id: 'after', name: 'after' })).status, 201);
});
