import test from 'ava';
import sharp from 'sharp';
import { call, DEFAULT_THRESHOLD, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { allEvents, enrollObamaBiden, FAST_MONITORS_TOML, waitFor, type MonitorEvent } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { MultipartParser } from '../../src/web/mjpegParser.js';

/**
 * Monitors on a real RTSP stream (test/rtsp/server.py, GStreamer's RTSP server) made from the fixture
 * photos: Obama, nobody, Biden, nobody, an unenrolled face, nobody, in a loop.
 */
const FPS = 10;
let d: TestDaemon;
let scenario: RtspServer;
let still: RtspServer;
const servers: RtspServer[] = [];

test.before(async () => {
  const [frames, obamaOnly] = await Promise.all([
    renderScenario(
      [
        { image: face('identities/obama/1.jpg'), seconds: 4 },
        { image: null, seconds: 2.5 },
        { image: face('identities/biden/1.jpg'), seconds: 4 },
        { image: null, seconds: 2.5 },
        { image: face('identities/nathalie_baye/1.jpg'), seconds: 4 },
        { image: null, seconds: 2.5 },
      ],
      { width: 640, height: 360, fps: FPS },
    ),
    renderScenario([{ image: face('identities/obama/1.jpg'), seconds: 2 }], { width: 640, height: 360, fps: FPS }),
  ]);
  [d, scenario, still] = await Promise.all([
    startTestDaemon({ toml: FAST_MONITORS_TOML }),
    startRtspServer({ frames, fps: FPS }),
    startRtspServer({ frames: obamaOnly, fps: FPS }),
  ]);
  servers.push(scenario, still);
  await enrollObamaBiden(d, 'gallery');
});
test.after.always(async () => {
  await d?.close();
  await Promise.all(servers.map((s) => s.stop()));
});

const personEvents = (events: MonitorEvent[]) =>
  events
    .filter((e) => e.type.startsWith('person_') || e.type.startsWith('unknown_'))
    .map((e) => `${e.type}:${e.person?.id ?? '-'}`);

test.serial('person and unknown enter/exit events, state and counters from a real H.264 stream', async (t) => {
  const create = await call(d, 'POST', '/v1/monitors', {
    id: 'door',
    name: 'Front door',
    source: { url: scenario.url() },
    collection_id: 'gallery',
    inference_fps: 4,
    event_policy: { confirm_frames: 2, absence_timeout_seconds: 1, cooldown_seconds: 60 },
  });
  t.is(create.status, 201, JSON.stringify(create.json));
  t.is(create.json.monitor.source.url, scenario.url());
  const running = await waitFor('running', async () => {
    const s = await call(d, 'GET', '/v1/monitors/door/state');
    return s.json.state.status === 'running' &&
      s.json.state.inference.processed_frames > 0 &&
      s.json.state.source.source_fps !== null
      ? s.json.state
      : undefined;
  });
  t.like(running.source, { width: 640, height: 360 });
  // Frames past the monitor's rate are dropped before conversion; the source rate is measured from the decoder's count.
  t.true(Math.abs(running.source.source_fps - FPS) <= 1, String(running.source.source_fps));
  t.true(
    running.inference.decoded_frames > running.inference.frame_sequence,
    'more frames decoded than delivered to inference',
  );
  const events = await waitFor(
    'unknown_exit',
    async () => {
      const ev = await allEvents(d, 'door');
      return ev.some((e) => e.type === 'unknown_exit') ? ev : undefined;
    },
    45_000,
    500,
  );
  t.deepEqual(personEvents(events).slice(0, 6), [
    'person_enter:obama',
    'person_exit:obama',
    'person_enter:biden',
    'person_exit:biden',
    'unknown_enter:-',
    'unknown_exit:-',
  ]);
  const enter = events.find((e) => e.type === 'person_enter')!;
  t.is(enter.monitor_id, 'door');
  t.is(enter.stream_epoch, running.stream_epoch);
  t.is(typeof enter.track_id, 'string');
  t.true((enter.similarity as number) >= DEFAULT_THRESHOLD);
  t.is(enter.threshold, DEFAULT_THRESHOLD);
  t.is(typeof enter.matched_face_id, 'string');
  t.truthy((enter.face as { bbox: unknown }).bbox);
  t.deepEqual(
    events.map((e) => e.sequence),
    events.map((_, i) => i + 1),
  );
  const exit = events.find((e) => e.type === 'person_exit')!;
  t.is(exit.track_id, enter.track_id);

  const s = (await call(d, 'GET', '/v1/monitors/door/state')).json.state;
  t.is(s.status, 'running');
  t.true(s.connected);
  t.true(s.inference.decoded_frames > s.inference.processed_frames, JSON.stringify(s.inference));
  t.true(s.inference.processed_frames > 10);
  t.true(
    s.inference.decoded_frames > s.inference.frame_sequence,
    'the pipeline drops frames past the monitor rate before conversion',
  );
  t.true(s.inference.dropped_frames > 0, 'inference at 4 fps on a 10 fps stream skips frames');
  t.true(s.inference.actual_fps > 0 && s.inference.actual_fps <= 4.5, String(s.inference.actual_fps));
  t.is(s.inference.configured_fps, 4);
  t.is(typeof s.inference.processing_ms, 'number');
  t.is(s.threshold, DEFAULT_THRESHOLD);
  t.is(s.liveness_blocked_faces, 0);
  t.is(s.reconnects, 0, JSON.stringify(events.filter((e) => e.type.startsWith('monitor_'))));
  t.is(s.inference_errors, 0);
  t.is(s.matched_faces + s.unknown_faces, s.faces.length);
  t.is((await call(d, 'DELETE', '/v1/monitors/door')).status, 204);
});

test.serial('the RTSP server dies and comes back: reconnecting, monitor_error, then monitor_recovered', async (t) => {
  const m = await call(d, 'POST', '/v1/monitors', {
    id: 'flaky',
    name: 'Flaky',
    source: { url: still.url() },
    collection_id: 'gallery',
    inference_fps: 2,
  });
  t.is(m.status, 201);
  await waitFor('running', async () =>
    (await call(d, 'GET', '/v1/monitors/flaky')).json.monitor.runtime.status === 'running' ? true : undefined,
  );
  const port = still.port;
  await still.stop();
  const down = await waitFor('reconnecting', async () => {
    const r = (await call(d, 'GET', '/v1/monitors/flaky')).json.monitor.runtime;
    return r.status === 'reconnecting' ? r : undefined;
  });
  t.false(down.connected);
  t.is(down.last_error.code, 'rtsp_source_unavailable');
  await waitFor('the cause', async () =>
    (await call(d, 'GET', '/v1/monitors/flaky')).json.monitor.runtime.last_error?.cause === 'connection_refused'
      ? true
      : undefined,
  );
  const restarted = await startRtspServer({ frames: still.frames, fps: FPS, port });
  servers.push(restarted);
  const events = await waitFor(
    'monitor_recovered',
    async () => {
      const ev = await allEvents(d, 'flaky');
      return ev.some((e) => e.type === 'monitor_recovered') ? ev : undefined;
    },
    60_000,
    500,
  );
  const types = events.map((e) => e.type);
  const error = events.find((e) => e.type === 'monitor_error')!;
  t.is(error.error?.code, 'rtsp_source_unavailable');
  t.is(types.filter((x) => x === 'monitor_error').length, 1, 'one monitor_error per outage, however many retries');
  t.true(['connection_refused', 'timeout'].includes(error.error?.cause as string), String(error.error?.cause));
  t.true(types.indexOf('monitor_error') < types.indexOf('monitor_recovered'));
  const s = (await call(d, 'GET', '/v1/monitors/flaky/state')).json.state;
  t.is(s.status, 'running');
  t.true(s.reconnects >= 1);
  t.is(s.stream_epoch, events[0]!.stream_epoch, 'a reconnect keeps the stream epoch');
  t.is((await call(d, 'DELETE', '/v1/monitors/flaky')).status, 204);
});

test.serial('MJPEG preview: several JPEG parts, viewer count, Bearer required, 409 and 503', async (t) => {
  t.is(
    (
      await call(d, 'POST', '/v1/monitors', {
        id: 'cam',
        name: 'Cam',
        source: { url: scenario.url('/stream') },
        collection_id: 'gallery',
        inference_fps: 1,
        preview_enabled: true,
      })
    ).status,
    201,
  );
  await waitFor('connected', async () =>
    (await call(d, 'GET', '/v1/monitors/cam')).json.monitor.runtime.connected ? true : undefined,
  );
  t.is((await fetch(`${d.url}/v1/monitors/cam/preview.mjpeg`)).status, 401);
  const controller = new AbortController();
  const res = await fetch(`${d.url}/v1/monitors/cam/preview.mjpeg`, { headers: d.auth, signal: controller.signal });
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'multipart/x-mixed-replace; boundary=frame');
  t.is(res.headers.get('cache-control'), 'no-store, no-cache, must-revalidate');
  const reader = res.body!.getReader();
  const parser = new MultipartParser('frame');
  const parts: Buffer[] = [];
  while (parts.length < 3) {
    const { value, done } = await reader.read();
    if (done) break;
    // Each part: Content-Type, Content-Length and X-Frame-Seq (the frame's number, rising).
    for (const part of parser.pushParts(value)) {
      t.is(part.headers['content-type'], 'image/jpeg');
      t.is(Number(part.headers['content-length']), part.body.length);
      t.regex(part.headers['x-frame-seq'] ?? '', /^\d+$/);
      parts.push(Buffer.from(part.body));
    }
  }
  t.true(parts.length >= 3, String(parts.length));
  for (const p of parts) {
    const meta = await sharp(p).metadata();
    t.is(meta.format, 'jpeg');
    t.is(meta.width, 640);
    t.is(meta.height, 360);
  }
  const watching = (await call(d, 'GET', '/v1/monitors/cam/state')).json.state.preview;
  t.like(watching, { enabled: true, active: true, viewers: 1 });
  t.true(watching.frames >= 3);
  controller.abort();
  await waitFor('viewer gone', async () =>
    (await call(d, 'GET', '/v1/monitors/cam')).json.monitor.runtime.preview_viewers === 0 ? true : undefined,
  );

  t.is((await call(d, 'PATCH', '/v1/monitors/cam', { preview_enabled: false })).status, 200);
  const disabled = await call(d, 'GET', '/v1/monitors/cam/preview.mjpeg');
  t.is(disabled.status, 409);
  t.is(disabled.json.error.code, 'preview_disabled');
  t.is((await call(d, 'PATCH', '/v1/monitors/cam', { enabled: false, preview_enabled: true })).status, 200);
  const stopped = await call(d, 'GET', '/v1/monitors/cam/preview.mjpeg');
  t.is(stopped.status, 503);
  t.is(stopped.json.error.code, 'stream_unavailable');
  t.is((await call(d, 'DELETE', '/v1/monitors/cam')).status, 204);
});
