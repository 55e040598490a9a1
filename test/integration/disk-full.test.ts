import test, { type ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { fileTempDir } from '../helpers/tempDir.js';

/** A small real file system (tmpfs) per test, so the disk can really fill; null (the test passes, logged as skipped) where mounting is not permitted. */
const mounts: string[] = [];
function mountSmall(t: ExecutionContext, prefix: string, size: string): string | null {
  const mnt = fileTempDir(prefix);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mnt]).status !== 0) {
    t.log('SKIPPED: mounting a tmpfs is not permitted here');
    t.pass();
    return null;
  }
  mounts.push(mnt);
  return mnt;
}
const daemons: TestDaemon[] = [];
let rtsp: RtspServer | undefined;
test.after.always(async () => {
  await Promise.all(daemons.map((x) => x.close()));
  await rtsp?.stop();
  for (const m of mounts) spawnSync('umount', [m]);
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

// Under the 64 KiB metadata limit, so each write is accepted until the disk is full.
const bigMetadata = { blob: 'm'.repeat(60 * 1024) };

/** Writes growing collections until one answers 507 (SQLite's WAL has to grow sooner or later); returns that answer. */
async function writeUntilFull(d: TestDaemon) {
  let r = await call(d, 'POST', '/v1/collections', { id: 'grow0', name: 'grow', metadata: bigMetadata });
  for (let i = 1; i < 200 && r.status === 201; i++)
    r = await call(d, 'POST', '/v1/collections', { id: `grow${i}`, name: 'grow', metadata: bigMetadata });
  return r;
}

test.serial(
  'full disk: 507 insufficient_storage (not 500), deletes still work, health degraded, system writable false, recovery without restart',
  async (t) => {
    const mnt = mountSmall(t, 'vigil-full-', '48m');
    if (!mnt) return;
    const d = await startTestDaemon({
      dir: mnt,
      server: [`storage_reserve_bytes = ${4 * 1024 * 1024}`, `max_request_bytes = ${1024 * 1024}`],
    });
    daemons.push(d);
    for (let i = 0; i < 3; i++)
      t.is(
        (await call(d, 'POST', '/v1/collections', { id: `keep${i}`, name: 'keep', metadata: bigMetadata })).status,
        201,
      );
    t.is((await call(d, 'GET', '/v1/health')).json.status, 'ready');
    const filler = fill(mnt);

    // Writes now run out of space.
    const r = await writeUntilFull(d);
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
  },
);

test.serial(
  'full disk with a camera running: event pictures stop before the space reserve, person and event deletes still work',
  async (t) => {
    const mnt = mountSmall(t, 'vigil-full-camera-', '64m');
    if (!mnt) return;
    // Big pictures (full-size frames at quality 100) of a face that comes and goes: an identity event with a
    // picture every second or two.
    const FPS = 10;
    const frames = await renderScenario(
      [
        { image: face('identities/obama/1.jpg'), seconds: 1 },
        { image: null, seconds: 0.8 },
      ],
      { width: 1920, height: 1080, fps: FPS },
    );
    rtsp = await startRtspServer({ frames, fps: FPS });
    const reserve = 2 * 1024 * 1024;
    const d = await startTestDaemon({
      dir: mnt,
      server: [`storage_reserve_bytes = ${reserve}`, `max_request_bytes = ${1024 * 1024}`],
      toml: `${FAST_MONITORS_TOML}
[events]
flush_interval_ms = 100
snapshot_max_side = 4096
crop_max_side = 1024
jpeg_quality = 100`,
    });
    daemons.push(d);
    await enrollObamaBiden(d, 'gallery');
    const create = await call(d, 'POST', '/v1/monitors', {
      id: 'door',
      name: 'door',
      source: { url: rtsp.url() },
      collection_id: 'gallery',
      inference_fps: FPS,
      event_policy: { confirm_frames: 1, absence_timeout_seconds: 0.3, cooldown_seconds: 0 },
    });
    t.is(create.status, 201, JSON.stringify(create.json));
    const readyPictures = async () =>
      ((await call(d, 'GET', '/v1/events?limit=500')).json.events as { snapshot: { status: string } }[]).filter(
        (e) => e.snapshot.status === 'ready',
      ).length;
    await waitFor('pictures of the camera', async () => ((await readyPictures()) >= 2 ? true : undefined), 60_000);

    const filler = fill(mnt);
    const r = await writeUntilFull(d);
    t.is(r.status, 507, JSON.stringify(r.json));
    // The camera keeps recording for a while on the full disk (each of its pictures is bigger than 100 KB).
    const picturesAtFull = await readyPictures();
    await new Promise((res) => setTimeout(res, 8000));
    // (one picture may have been on its way to the disk when it filled)
    t.true((await readyPictures()) <= picturesAtFull + 1, 'no picture is written while the disk is full');
    const events = (await call(d, 'GET', '/v1/events?limit=500')).json.events as { id: string; type: string }[];
    t.true(events.length > 0);

    // The reserve is still there for deletes: an event and a person go.
    const delEvent = await call(d, 'DELETE', `/v1/events/${events[0]!.id}`);
    t.true(delEvent.status < 300, JSON.stringify(delEvent.json));
    const delPerson = await call(d, 'DELETE', '/v1/collections/gallery/persons/biden');
    t.true(delPerson.status < 300, JSON.stringify(delPerson.json));
    rmSync(filler);
  },
);
