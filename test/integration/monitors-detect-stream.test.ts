import test from 'ava';
import Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * Two streams per camera (issue 41 item 5): the same scripted scene served at 1280x720 (the main stream) and at
 * 640x360 (the detect sub-stream) by two GStreamer RTSP test servers. Detection reads the sub-stream; the
 * event pictures come from the main stream, opened while something moves or a face is tracked.
 */
const FPS = 10;
const SECRET = 'rtsp://viewer:s3cr3t-sub@127.0.0.1:9/sub?token=abc123';
let d: TestDaemon;
let dir: string;
let main: RtspServer, sub: RtspServer;

test.before(async () => {
  const obama = face('identities/obama/1.jpg');
  // A still room, then a face in the middle for 4 s (enter, then exit after it is gone).
  const scene = [
    { image: null, seconds: 2 },
    { image: obama, seconds: 4, at: { x: 0.35, y: 0.1, width: 0.3 } },
    { image: null, seconds: 3 },
  ];
  const [mainFrames, subFrames] = await Promise.all([
    renderScenario(scene, { width: 1280, height: 720, fps: FPS, room: true }),
    renderScenario(scene, { width: 640, height: 360, fps: FPS, room: true }),
  ]);
  [main, sub] = await Promise.all([
    startRtspServer({ frames: mainFrames, fps: FPS }),
    startRtspServer({ frames: subFrames, fps: FPS }),
  ]);
  dir = fileTempDir('vigil-detect-stream-');
  d = await startTestDaemon({
    dir,
    // Crops up to 1024 px: the main stream's crop must not be capped to the sub-stream's size.
    toml: `${FAST_MONITORS_TOML}\n[events]\nflush_interval_ms = 100\ncrop_max_side = 1024`,
  });
  await enrollObamaBiden(d, 'gallery');
});
test.after.always(async () => {
  await d?.close();
  await Promise.all([main, sub].map((s) => s?.stop()));
});

const monitor = (id: string, extra: Record<string, unknown> = {}) =>
  call(d, 'POST', '/v1/monitors', {
    id,
    name: id,
    source: { url: main.url() },
    collection_id: 'gallery',
    inference_fps: 5,
    event_policy: { confirm_frames: 2, absence_timeout_seconds: 1, cooldown_seconds: 0 },
    ...extra,
  });

test.serial('detect_url: redacted in the API, encrypted at rest, cleared by null, validated', async (t) => {
  const r = await monitor('creds', { detect_url: SECRET, enabled: false });
  t.is(r.status, 201, JSON.stringify(r.json));
  t.is(r.json.monitor.detect_url, 'rtsp://127.0.0.1:9/sub');
  for (const body of [JSON.stringify(r.json), JSON.stringify((await call(d, 'GET', '/v1/monitors/creds')).json)]) {
    t.false(body.includes('s3cr3t'));
    t.false(body.includes('abc123'));
  }
  const db = new Database(join(dir, 'data', 'vigil.db'), { readonly: true });
  const row = db.prepare('SELECT * FROM monitors WHERE id = ?').get('creds') as Record<string, unknown>;
  db.close();
  t.regex(String(row.detect_url_encrypted), /^v1\.[A-Za-z0-9_-]+$/);
  t.false(JSON.stringify(row).includes('s3cr3t'));
  try {
    t.false(readFileSync(join(dir, 'data', 'vigil.db-wal')).includes('s3cr3t'));
  } catch {
    /* no WAL file */
  }
  const bad = await call(d, 'PATCH', '/v1/monitors/creds', { detect_url: 'http://cam.lan/sub' });
  t.is(bad.status, 400);
  t.is(bad.json.error.code, 'invalid_request');
  const cleared = await call(d, 'PATCH', '/v1/monitors/creds', { detect_url: null });
  t.is(cleared.status, 200, JSON.stringify(cleared.json));
  t.is(cleared.json.monitor.detect_url, null);
  t.is((await monitor('plain', { enabled: false })).json.monitor.detect_url, null);
  for (const id of ['creds', 'plain']) t.is((await call(d, 'DELETE', `/v1/monitors/${id}`)).status, 204);
});

test.serial("detection reads the sub-stream; the event pictures are cut from the main stream's frame", async (t) => {
  const r = await monitor('dual', { detect_url: sub.url() });
  t.is(r.status, 201, JSON.stringify(r.json));
  // The enter and the exit of the face: at least one of them found the main stream open (the motion of the
  // face opens it, so usually both), and its crop has the main stream's resolution.
  const events = await waitFor(
    'dual events with pictures',
    async () => {
      const e = (await call(d, 'GET', '/v1/events?monitor_id=dual&limit=50')).json.events as {
        type: string;
        face: { bbox: { pixels: { width: number } } } | null;
        snapshot: { status: string; crop_width: number | null; width: number | null };
      }[];
      const ready = e.filter((x) => x.face && x.snapshot.status === 'ready');
      return ready.some((x) => x.type.endsWith('_exit')) ? ready : undefined;
    },
    60_000,
  );
  const state = (await call(d, 'GET', '/v1/monitors/dual/state')).json.state;
  // The state's source is the stream detection reads.
  t.like(state.source, { width: 640, height: 360 });
  t.like(state.streams.main, { width: 1280, height: 720 });
  t.true(state.streams.pictures_from_main >= 1, JSON.stringify(state.streams));
  // A picture from the detect frame: the crop is the face box and its margin (0.5 of it on each side),
  // about 2x the box in the sub-stream's pixels; from the main stream it is twice that.
  const ratios = events.map((e) => e.snapshot.crop_width! / (2 * e.face!.bbox.pixels.width));
  t.true(
    ratios.some((x) => x > 1.6),
    `crop / (2 x detect box): ${ratios.map((x) => x.toFixed(2)).join(', ')}`,
  );
  // The stored crop is that size.
  const withMain = events[ratios.findIndex((x) => x > 1.6)]!;
  const crop = await fetch(`${d.url}/v1/events/${(withMain as unknown as { id: string }).id}/crop.jpg`, {
    headers: d.auth,
  });
  t.is(crop.status, 200);
  t.is((await sharp(Buffer.from(await crop.arrayBuffer())).metadata()).width, withMain.snapshot.crop_width!);
  t.is((await call(d, 'DELETE', '/v1/monitors/dual')).status, 204);
});
