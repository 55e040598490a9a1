import test from 'ava';
import { spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { createBackup } from '../../src/cli/backup.js';
import { ClipStore } from '../../src/events/clipStore.js';
import { toRow } from '../../src/events/eventHistory.js';
import { HistoryStore } from '../../src/events/historyStore.js';
import { SnapshotStore } from '../../src/events/snapshotStore.js';
import { parseByteRange } from '../../src/http/byteRange.js';
import { RECORD_STALL_MS } from '../../src/monitors/clipPipeline.js';
import { ClipRecorder } from '../../src/monitors/clipRecorder.js';
import { Fmp4Splitter, scanClip, type Fragment, type InitInfo } from '../../src/monitors/fmp4.js';
import { openDatabase, type OpenedDatabase } from '../../src/store/database.js';
import { StorageGuard } from '../../src/store/storageGuard.js';
import { fileTempDir } from '../helpers/tempDir.js';

const root = fileTempDir('vigil-clips-unit-');
const opened: OpenedDatabase[] = [];
test.after.always(() => {
  for (const o of opened) o.close();
});

test('byte ranges: spans, suffixes, open ends; unsatisfiable ranges and multi-ranges refused', (t) => {
  t.is(parseByteRange(undefined, 1000), 'all');
  t.deepEqual(parseByteRange('bytes=0-99', 1000), { start: 0, end: 99 });
  t.deepEqual(parseByteRange('bytes=900-', 1000), { start: 900, end: 999 });
  t.deepEqual(parseByteRange('bytes=990-5000', 1000), { start: 990, end: 999 });
  t.deepEqual(parseByteRange('bytes=-100', 1000), { start: 900, end: 999 });
  t.deepEqual(parseByteRange('bytes=-5000', 1000), { start: 0, end: 999 });
  for (const bad of ['bytes=1000-', 'bytes=5-4', 'bytes=-0', 'bytes=-', 'bytes=0-1,5-6', 'items=0-1', 'bytes=a-b'])
    t.is(parseByteRange(bad, 1000), 'unsatisfiable', bad);
  t.is(parseByteRange('bytes=0-', 0), 'unsatisfiable');
});

/** A fragmented MP4 as the record branch's mp4mux writes it: 1 s fragments, a key frame each. */
function muxed(seconds: number): Uint8Array {
  const file = join(root, `muxed-${seconds}.mp4`);
  const r = spawnSync('gst-launch-1.0', [
    '-q',
    ...`videotestsrc num-buffers=${seconds * 10} ! video/x-raw,width=160,height=120,framerate=10/1 ! x264enc key-int-max=10 tune=zerolatency speed-preset=ultrafast ! h264parse ! mp4mux fragment-duration=10000 streamable=true ! filesink`.split(
      ' ',
    ),
    `location=${file}`,
  ]);
  if (r.status !== 0) throw new Error(String(r.stderr));
  return new Uint8Array(readFileSync(file));
}

function parts(bytes: Uint8Array): { init: Uint8Array; info: InitInfo; fragments: Fragment[] } {
  const s = new Fmp4Splitter();
  let init: { data: Uint8Array; info: InitInfo } | null = null;
  const fragments: Fragment[] = [];
  // Odd chunking, as the appsink hands the muxer's buffers.
  for (let i = 0; i < bytes.length; i += 997)
    for (const p of s.push(bytes.subarray(i, i + 997)))
      if (p.kind === 'init') init = p;
      else fragments.push(p.fragment);
  return { init: init!.data, info: init!.info, fragments };
}

test('a clip that no event names (its enter never written) goes to the trash when it ends', (t) => {
  const o = openDatabase(join(root, 'rec'));
  opened.push(o);
  const store = new HistoryStore(o.db);
  const snapshots = new SnapshotStore(join(root, 'rec'), {
    maxSide: 640,
    cropMargin: 0.3,
    cropMaxSide: 256,
    quality: 80,
  });
  const clips = new ClipStore(snapshots, store, pino({ level: 'silent' }));
  const { init, info, fragments } = parts(muxed(12));
  t.is(fragments.length, 12);
  t.true(fragments.every((f) => f.sync));
  let now = 0;
  const rec = new ClipRecorder('door', { preMs: 2000, postMs: 2000, maxMs: 60_000 }, clips, () => now);
  rec.start(init, info);
  // Fragments arrive at their end: fragment i covers [i, i+1) s.
  const feed = (i: number) => {
    now = (i + 1) * 1000;
    rec.fragment(fragments[i]!, now);
  };
  for (let i = 0; i < 5; i++) feed(i);
  now = 5000;
  const enter = rec.event({ type: 'person_enter', track_id: 't1' }, 5000);
  t.truthy(enter);
  t.is(rec.event({ type: 'zone_enter', track_id: 't1' }), enter, "a track's other events name its clip");
  for (let i = 5; i < 7; i++) feed(i);
  t.is(rec.event({ type: 'person_exit', track_id: 't1' }, 7000), enter);
  for (let i = 7; i < 12; i++) feed(i);
  t.is(rec.recording, null, 'ended after the post-roll');
  // No event row names it (the history never wrote one): a clip no event kept goes to the trash at its end.
  t.is(store.clipRow(enter!), null);
  t.is(store.trash(10).length, 1);
});

test('the recorder: pre-roll from the key frame before it, post-roll after the last exit, rebased to 0', (t) => {
  const o = openDatabase(join(root, 'rec2'));
  opened.push(o);
  const store = new HistoryStore(o.db);
  const snapshots = new SnapshotStore(join(root, 'rec2'), {
    maxSide: 640,
    cropMargin: 0.3,
    cropMaxSide: 256,
    quality: 80,
  });
  const clips = new ClipStore(snapshots, store, pino({ level: 'silent' }));
  const { init, info, fragments } = parts(muxed(12));
  let now = 0;
  const rec = new ClipRecorder('door', { preMs: 2000, postMs: 2000, maxMs: 60_000 }, clips, () => now);
  rec.start(init, info);
  const feed = (i: number) => {
    now = (i + 1) * 1000;
    rec.fragment(fragments[i]!, now);
  };
  for (let i = 0; i < 5; i++) feed(i);
  const id = rec.event({ type: 'person_enter', track_id: 't1' }, 5000)!;
  store.insert({
    ...toRow(
      {
        id: '11111111-0000-4000-8000-000000000000',
        type: 'person_enter',
        monitor_id: 'door',
        stream_epoch: 'e',
        sequence: 1,
        occurred_at: '1970-01-01T00:00:05.000Z',
        track_id: 't1',
      } as never,
      'gallery',
      'none',
      'box',
    ),
    clip_id: id,
  });
  feed(5);
  // A second face joins the clip; the clip ends 2 s after the last of them left.
  t.is(rec.event({ type: 'unknown_enter', track_id: 't2' }, 6000), id);
  feed(6);
  rec.event({ type: 'person_exit', track_id: 't1' }, 7000);
  feed(7);
  rec.event({ type: 'unknown_exit', track_id: 't2' }, 7500);
  for (let i = 8; i < 12; i++) feed(i);
  const row = store.clipRow(id)!;
  // From fragment 3 (the key frame at 3 s, 2 s before the enter) to the fragment ending at or after 9.5 s.
  t.like(row, { status: 'ready', end_reason: 'completed', duration_ms: 7000 });
  const scan = scanClip(new Uint8Array(readFileSync(snapshots.file(row.path, 'clip'))));
  t.is(scan.fragments, 7);
  t.is(scan.mediaTicks, 7 * info.timescale);
  t.is(rec.event({ type: 'person_enter', track_id: 't3' }, 20_000) !== id, true, 'a later enter starts a new clip');
});

test('clips share the pictures retention: bytes expire the oldest, the last event deleted deletes the clip; a torn clip is recovered; backups include them on request', async (t) => {
  const o = openDatabase(join(root, 'ret'));
  opened.push(o);
  const store = new HistoryStore(o.db);
  const snapshots = new SnapshotStore(join(root, 'ret'), {
    maxSide: 640,
    cropMargin: 0.3,
    cropMaxSide: 256,
    quality: 80,
  });
  const clips = new ClipStore(snapshots, store, pino({ level: 'silent' }));
  const { init, info, fragments } = parts(muxed(4));
  const record = (id: string) => {
    const w = clips.begin({ id, monitorId: 'door', startedAt: Date.parse('2026-01-02T00:00:00Z'), init, info })!;
    const events = ['person_enter', 'person_exit'].map((type, i) => ({
      ...toRow(
        {
          id: `${id.slice(0, 35)}${i}`,
          type,
          monitor_id: 'door',
          stream_epoch: 'e',
          sequence: i,
          occurred_at: '2026-01-02T00:00:01.000Z',
          track_id: id,
        } as never,
        'gallery',
        'none',
        'box',
      ),
      clip_id: id,
    }));
    for (const e of events) store.insert(e);
    return { w, events };
  };
  const a = record('aaaaaaaa-0000-4000-8000-000000000000');
  for (const f of fragments) a.w.append(f.data, f.duration);
  a.w.finish('completed');
  const b = record('bbbbbbbb-0000-4000-8000-000000000000');
  for (const f of fragments) b.w.append(f.data, f.duration);
  b.w.finish('completed');
  const ca = store.clipRow('aaaaaaaa-0000-4000-8000-000000000000')!;
  t.like(ca, { status: 'ready', duration_ms: 4000, end_reason: 'completed' });
  const fileA = snapshots.file(ca.path, 'clip');
  t.is(scanClip(new Uint8Array(readFileSync(fileA))).fragments, 4);
  t.is(store.clipBytes(), ca.bytes * 2);

  // Bytes retention: room for one clip; the older one expires, its file goes with the trash.
  t.is(store.expireSnapshotsBeyond(ca.bytes + 10), 1);
  t.like(store.clipRow(ca.id), { status: 'expired', bytes: 0 });
  t.deepEqual(store.trash(10), [ca.path]);
  snapshots.remove(ca.path);
  store.untrash([ca.path]);
  t.false(existsSync(fileA));

  // Deleting events: the clip stays while one of its events does, and goes with the last one.
  const cb = store.clipRow('bbbbbbbb-0000-4000-8000-000000000000')!;
  store.deleteWhere('id = ?', [b.events[0]!.id]);
  t.truthy(store.clipRow(cb.id));
  store.deleteWhere('id = ?', [b.events[1]!.id]);
  t.is(store.clipRow(cb.id), null);
  t.deepEqual(store.trash(10), [cb.path]);

  // A crash mid-recording: the row says recording, the file ends in half a fragment.
  const c = record('cccccccc-0000-4000-8000-000000000000');
  for (const f of fragments) c.w.append(f.data, f.duration);
  const cc = store.clipRow('cccccccc-0000-4000-8000-000000000000')!;
  const fileC = snapshots.file(cc.path, 'clip');
  writeFileSync(fileC, fragments[0]!.data.subarray(0, 100), { flag: 'a' });
  t.is(clips.recover(), 1);
  t.like(store.clipRow(cc.id), { status: 'ready', duration_ms: 4000, end_reason: 'recovered' });
  const scan = scanClip(new Uint8Array(readFileSync(fileC)));
  t.is(scan.wholeBytes, readFileSync(fileC).length, 'the torn end is cut');
  t.is(scan.fragments, 4);

  // Backups leave clips out unless asked (and say how many and how large).
  const said: string[] = [];
  const without = await createBackup(join(root, 'ret'), join(root, 'without.tar.gz'), (l) => said.push(l));
  t.false(without.files.some((f) => f.path.endsWith('.mp4')));
  t.true(
    said.some((l) => /left out \d+ event clips \(\d+\.\d MiB\): --clips/.test(l)),
    said.join(''),
  );
  const withClips = await createBackup(join(root, 'ret'), join(root, 'with.tar.gz'), undefined, undefined, {
    clips: true,
  });
  t.true(withClips.files.some((f) => f.path === `events/snapshots/${cc.path}.mp4`));
});

/** A recorder writing into a real ClipStore (its own database and pictures' folder), fed 1 s fragments. */
function recorderOn(
  name: string,
  o: { maxMs?: number; storage?: StorageGuard; dir?: string; reserveBytes?: number } = {},
) {
  const settings = o;
  const dir = o.dir ?? join(root, name);
  const db = openDatabase(dir, undefined, o.reserveBytes === undefined ? {} : { reserveBytes: o.reserveBytes });
  opened.push(db);
  // With reserveBytes, the guard is the database's own (the daemon's: the one whose reserve is in the data dir).
  const storage = o.reserveBytes === undefined ? o.storage : db.storage;
  const store = new HistoryStore(db.db);
  const snapshots = new SnapshotStore(dir, {
    maxSide: 640,
    cropMargin: 0.3,
    cropMaxSide: 256,
    quality: 80,
  });
  const clips = new ClipStore(snapshots, store, pino({ level: 'silent' }), storage);
  const { init, info, fragments } = parts(muxed(12));
  let now = 0;
  const rec = new ClipRecorder(
    'door',
    { preMs: 2000, postMs: 2000, maxMs: settings.maxMs ?? 60_000 },
    clips,
    () => now,
  );
  rec.connected(0);
  rec.start(init, info, 0);
  const feed = (i: number) => {
    now = (i + 1) * 1000;
    rec.fragment(fragments[i]!, now);
  };
  let seq = 0;
  // An event row naming the clip, as the history writes it (a clip no event names goes to the trash).
  const keep = (clipId: string, trackId: string) =>
    store.insert({
      ...toRow(
        {
          id: `11111111-0000-4000-8000-${String(++seq).padStart(12, '0')}`,
          type: 'person_enter',
          monitor_id: 'door',
          stream_epoch: 'e',
          sequence: seq,
          occurred_at: new Date(now).toISOString(),
          track_id: trackId,
        } as never,
        'gallery',
        'none',
        'box',
      ),
      clip_id: clipId,
    });
  const file = (clipId: string) => snapshots.file(store.clipRow(clipId)!.path, 'clip');
  const scan = (clipId: string) => scanClip(new Uint8Array(readFileSync(file(clipId))));
  const close = () => {
    opened.splice(opened.indexOf(db), 1);
    db.close();
  };
  return { rec, store, clips, feed, keep, scan, file, info, close };
}

test('a clip reaching max_seconds ends capped; its track keeps naming it, the next enter starts another', (t) => {
  const { rec, store, feed, keep, scan, info } = recorderOn('capped', { maxMs: 3000 });
  for (let i = 0; i < 5; i++) feed(i);
  const id = rec.event({ type: 'person_enter', track_id: 't1' }, 5000)!;
  keep(id, 't1');
  // The pre-roll (key frame at 3 s) holds 2 s; one more fragment reaches 3 s.
  t.is(rec.recording, id);
  feed(5);
  t.is(rec.recording, null, 'capped at 3 s');
  t.like(store.clipRow(id), { status: 'ready', end_reason: 'capped', duration_ms: 3000 });
  t.is(scan(id).mediaTicks, 3 * info.timescale);
  feed(6);
  t.is(rec.event({ type: 'zone_enter', track_id: 't1' }), id, 'the capped track still names its clip');
  t.is(rec.event({ type: 'person_enter', track_id: 't2' }, 7000) !== id, true, 'a new enter starts a new clip');
  t.is(rec.event({ type: 'person_exit', track_id: 't1' }, 7000), id);
});

test('a full disk during recording ends the clip disk_full with what it had; none starts while full', (t) => {
  const now = 0;
  const dir = join(root, 'full-guard');
  mkdirSync(dir, { recursive: true });
  const guard = new StorageGuard(dir, { reserveBytes: 4096, now: () => now });
  guard.init();
  const { rec, store, clips, feed, keep, scan, info } = recorderOn('full', { storage: guard });
  for (let i = 0; i < 5; i++) feed(i);
  const id = rec.event({ type: 'person_enter', track_id: 't1' }, 5000)!;
  keep(id, 't1');
  feed(5);
  // A write elsewhere in the data dir failed for lack of space: the guard refuses growth from now on.
  guard.markFull();
  feed(6);
  t.is(rec.recording, null);
  t.like(store.clipRow(id), { status: 'ready', end_reason: 'disk_full', duration_ms: 3000 });
  const s = scan(id);
  t.is(s.fragments, 3, 'the pre-roll and one fragment, whole');
  t.is(s.mediaTicks, 3 * info.timescale);
  t.is(clips.counters.endedFull, 1);
  t.is(rec.event({ type: 'person_enter', track_id: 't2' }, 7000), null, 'no clip while the disk is full');
  t.is(clips.counters.skippedFull, 1);
});

test('a record branch silent for RECORD_STALL_MS while frames decode ends the clip record_failed, once', (t) => {
  const { rec, store, feed, keep } = recorderOn('stall');
  for (let i = 0; i < 5; i++) feed(i);
  const id = rec.event({ type: 'person_enter', track_id: 't1' }, 5000)!;
  keep(id, 't1');
  // The last fragment came at 5 s: the muxer stopped there.
  t.false(rec.checkStall(5000 + RECORD_STALL_MS - 1));
  t.true(rec.checkStall(5000 + RECORD_STALL_MS));
  t.false(rec.checkStall(5000 + RECORD_STALL_MS + 1000), 'said once');
  t.is(rec.recording, null);
  t.like(store.clipRow(id), { status: 'ready', end_reason: 'record_failed', duration_ms: 2000 });
  t.is(rec.event({ type: 'person_enter', track_id: 't2' }, 26_000), null, 'no clip while the branch is silent');
  // The branch speaks again: clips start again.
  feed(5);
  t.truthy(rec.event({ type: 'person_enter', track_id: 't3' }, 27_000));
  // A new connection gives its branch the full time again.
  rec.streamEnded();
  t.false(rec.checkStall(100_000), 'not watched while disconnected');
  rec.connected(100_000);
  t.false(rec.checkStall(100_000 + RECORD_STALL_MS - 1));
});

/** Fills the file system holding `path` to the last byte (another writer of the data dir). */
function fillUp(path: string): void {
  const fd = openSync(path, 'w');
  for (const size of [64 * 1024, 512, 1])
    try {
      for (;;) writeSync(fd, Buffer.alloc(size, 1));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
    }
  closeSync(fd);
}

test('the disk filling up under a recording clip: it ends disk_full and its file holds only whole fragments', async (t) => {
  // A small real file system, filled by something else (as pictures or another camera's clip would).
  const mnt = join(root, 'tmpfs');
  mkdirSync(mnt);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt]).status !== 0) {
    t.log('SKIPPED: mounting a tmpfs is not permitted here');
    t.pass();
    return;
  }
  let close = () => {};
  try {
    // The database shares the full disk (as in the data dir): the guard's reserve, released by the failed
    // write, gives SQLite room to record the clip's end.
    const { rec, store, clips, feed, keep, scan, file, ...r } = recorderOn('tmpfs', {
      dir: mnt,
      reserveBytes: 256 * 1024,
    });
    close = r.close;
    for (let i = 0; i < 5; i++) feed(i);
    const id = rec.event({ type: 'person_enter', track_id: 't1' }, 5000)!;
    keep(id, 't1');
    feed(5);
    // Filled to the last byte: the clip's next write fits only into its file's last page, then none does.
    fillUp(join(mnt, 'filler'));
    for (let i = 6; i < 12 && rec.recording; i++) feed(i);
    t.is(rec.recording, null, 'ended by the full disk');
    const row = store.clipRow(id)!;
    t.like(row, { status: 'ready', end_reason: 'disk_full' });
    const s = scan(id);
    t.is(s.wholeBytes, statSync(file(id)).size, 'no torn or zero-filled fragment at its end');
    t.is(row.bytes, s.wholeBytes);
    t.is(row.duration_ms, Math.round((s.mediaTicks * 1000) / s.info!.timescale));
    t.true(clips.counters.endedFull >= 1);
    // Straight to the store's writer on the full disk: what it accepted is in the file, byte for byte, and
    // nothing else (a write the disk cut short is not counted, nor zero-filled).
    rmSync(join(mnt, 'filler'));
    // The guard looks at the disk again at most once a second; then it has room for its reserve again.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const { init, info, fragments } = parts(muxed(12));
    const w = clips.begin({ id: '22222222-0000-4000-8000-000000000000', monitorId: 'door', startedAt: 0, init, info })!;
    keep('22222222-0000-4000-8000-000000000000', 't9');
    const accepted: Uint8Array[] = [];
    for (const f of fragments.slice(0, 2)) if (w.append(f.data, f.duration)) accepted.push(f.data);
    fillUp(join(mnt, 'filler2'));
    for (const f of fragments.slice(2))
      if (w.append(f.data, f.duration)) accepted.push(f.data);
      else break;
    t.is(accepted.length < fragments.length, true, 'the full disk ended it');
    const written = readFileSync(file('22222222-0000-4000-8000-000000000000'));
    t.is(written.length, init.length + accepted.reduce((n, a) => n + a.length, 0), 'only what was accepted');
    t.deepEqual(new Uint8Array(written.subarray(init.length)), new Uint8Array(Buffer.concat(accepted)));
  } finally {
    close();
    spawnSync('umount', [mnt]);
  }
});
