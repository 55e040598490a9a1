import test from 'ava';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { tempDir } from '../helpers/tempDir.js';
import { scanClip, readBoxHeader } from '../../src/monitors/fmp4.js';

/**
 * Event clips (issue 41 item 3) on a real RTSP stream (test/rtsp/server.py, H.264, a key frame a second): a
 * room, a face for 3 s, the room again. The monitor records clips (2 s pre-roll, 2 s post-roll); the clip of
 * the pass is a fragmented MP4 of the encoded stream, served with range requests, kept across a restart, and
 * pruned by the pictures' retention.
 */
const FPS = 10;
const SIZE = { width: 640, height: 360, fps: FPS, room: true };
let server: RtspServer;

test.before(async () => {
  const obama = face('identities/obama/1.jpg');
  const frames = await renderScenario(
    [
      { image: null, seconds: 4 },
      { image: obama, seconds: 3, at: { x: 0.35, y: 0.1, width: 0.3 } },
      { image: null, seconds: 8 },
    ],
    SIZE,
  );
  server = await startRtspServer({ frames, fps: FPS });
});
test.after.always(async () => {
  await server?.stop();
});

const TOML = `${FAST_MONITORS_TOML}
[monitors.clips]
# Off by default: the monitor turns them on.
pre_seconds = 2
post_seconds = 2
[events]
flush_interval_ms = 100`;

type Ev = Record<string, any>;

/** The gallery, and the monitor 'door' on `url` recording clips (quick enters and exits). */
async function addDoor(d: TestDaemon, url: string) {
  await enrollObamaBiden(d, 'gallery');
  return call(d, 'POST', '/v1/monitors', {
    id: 'door',
    name: 'door',
    source: { url },
    collection_id: 'gallery',
    inference_fps: 5,
    event_policy: { confirm_frames: 2, absence_timeout_seconds: 1, cooldown_seconds: 0 },
    clips: { enabled: true },
  });
}

async function passWithClip(d: TestDaemon): Promise<{ enter: Ev; exit: Ev }> {
  return waitFor(
    'an enter and exit whose clip is ready',
    async () => {
      const r = await call(d, 'GET', '/v1/events?monitor_id=door&limit=50');
      const events = (r.json.events ?? []) as Ev[];
      const exit = events.find((e) => e.type === 'person_exit' && e.clip?.status === 'ready');
      const enter = exit && events.find((e) => e.type === 'person_enter' && e.track_id === exit.track_id);
      return enter && exit ? { enter, exit } : undefined;
    },
    90_000,
    500,
  );
}

test.serial('an event gets a clip: a fragmented MP4 of the stream, range requests, restart, retention', async (t) => {
  const dir = tempDir(t, 'vigil-clips-');
  let d = await startTestDaemon({ toml: TOML, dir });
  try {
    const created = await addDoor(d, server.url());
    t.is(created.status, 201, JSON.stringify(created.json));
    t.like(created.json.monitor.clips, { enabled: true, pre_seconds: null, post_seconds: null });

    const { enter, exit } = await passWithClip(d);
    t.is(enter.person?.id, 'obama');
    t.is(enter.clip.id, exit.clip.id, "a track's enter and exit share one clip");
    t.is(exit.clip.url, `/v1/events/${exit.id}/clip.mp4`);
    t.is(exit.clip.end_reason, 'completed');

    const whole = await fetch(d.url + exit.clip.url, { headers: d.auth });
    t.is(whole.status, 200);
    t.is(whole.headers.get('content-type'), 'video/mp4');
    t.is(whole.headers.get('accept-ranges'), 'bytes');
    const mp4 = new Uint8Array(await whole.arrayBuffer());
    t.is(mp4.length, exit.clip.bytes);
    // ftyp, moov (the init segment), then moof + mdat fragments.
    const top: string[] = [];
    for (let at = 0; at < mp4.length;) {
      const b = readBoxHeader(mp4, at)!;
      top.push(b.type);
      at += b.size;
    }
    t.deepEqual(top.slice(0, 4), ['ftyp', 'moov', 'moof', 'mdat']);
    const scan = scanClip(mp4);
    t.is(scan.wholeBytes, mp4.length, 'no torn fragment');
    const seconds = scan.mediaTicks / scan.info!.timescale;
    // The face is in view about 3 s (+1 s absence timeout); the clip adds the pre-roll (from the key frame
    // before it) and the post-roll.
    t.true(seconds >= 5 && seconds <= 12, `clip of ${seconds} s`);
    t.true(Math.abs(exit.clip.duration_ms / 1000 - seconds) < 0.05);

    // GStreamer plays it: qtdemux reads it as MP4 and the decoder decodes every frame to the end.
    const file = join(dir, 'data', 'events', 'snapshots', exit.clip.started_at.slice(0, 10), `${exit.clip.id}.mp4`);
    t.is(statSync(file).mode & 0o777, 0o600);
    const play = spawnSync(
      'gst-launch-1.0',
      ['-q', 'filesrc', `location=${file}`, '!', 'qtdemux', '!', 'decodebin', '!', 'fakesink', 'sync=false'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    t.is(play.status, 0, `${play.stdout}${play.stderr}`);

    // Range requests: a span, a suffix, one past the end (416 in the envelope).
    const part = await fetch(d.url + exit.clip.url, { headers: { ...d.auth, Range: 'bytes=100-1099' } });
    t.is(part.status, 206);
    t.is(part.headers.get('content-range'), `bytes 100-1099/${mp4.length}`);
    t.deepEqual(new Uint8Array(await part.arrayBuffer()), mp4.subarray(100, 1100));
    const tail = await fetch(d.url + exit.clip.url, { headers: { ...d.auth, Range: 'bytes=-500' } });
    t.is(tail.status, 206);
    t.deepEqual(new Uint8Array(await tail.arrayBuffer()), mp4.subarray(mp4.length - 500));
    const bad = await fetch(d.url + exit.clip.url, { headers: { ...d.auth, Range: `bytes=${mp4.length}-` } });
    t.is(bad.status, 416);
    t.is(((await bad.json()) as Ev).error?.code ?? '', 'range_not_satisfiable');

    // An event without a clip: 404 clip_not_found.
    const other = await call(d, 'GET', '/v1/events?monitor_id=nobody');
    t.is(other.status, 200);
    const missing = await fetch(`${d.url}/v1/events/00000000-0000-4000-8000-000000000000/clip.mp4`, {
      headers: d.auth,
    });
    t.is(missing.status, 404);

    // The clip survives a restart.
    await call(d, 'PATCH', '/v1/monitors/door', { enabled: false });
    await d.close();
    d = await startTestDaemon({ toml: TOML, dir });
    const again = await fetch(d.url + exit.clip.url, { headers: d.auth });
    t.is(again.status, 200);
    t.deepEqual(new Uint8Array(await again.arrayBuffer()), mp4);

    // Retention by bytes (pictures and clips together) expires it, and its file goes.
    const patched = await call(d, 'PATCH', '/v1/settings', { 'events.max_snapshot_bytes': 1000 });
    t.true(patched.status < 300, JSON.stringify(patched.json));
    const expired = await waitFor('the clip expired', async () => {
      const e = (await call(d, 'GET', `/v1/events/${exit.id}`)).json.event as Ev;
      return e.clip?.status === 'expired' && !existsSync(file) ? e : undefined;
    });
    t.is(expired.clip.url, null);
    const gone = await fetch(d.url + exit.clip.url, { headers: d.auth });
    t.is(gone.status, 404);
    t.is(((await gone.json()) as Ev).error?.code, 'clip_not_found');
    t.false(
      readdirSync(join(dir, 'data', 'events', 'snapshots', exit.clip.started_at.slice(0, 10))).some((f) =>
        f.startsWith(exit.clip.id),
      ),
    );
  } finally {
    await d.close();
  }
});

test.serial(
  'a stream the muxer cannot take (frames without timestamps) stops recording, never the camera',
  async (t) => {
    // The pre-encoded replay's access units after the first have no PTS (one RTP timestamp for all): mp4mux
    // errors on them. Decoding does not need them, so the camera must keep running and detecting.
    const obama = face('identities/obama/1.jpg');
    const frames = await renderScenario(
      [
        { image: null, seconds: 2 },
        { image: obama, seconds: 4, at: { x: 0.35, y: 0.1, width: 0.3 } },
        { image: null, seconds: 4 },
      ],
      SIZE,
    );
    const replay = await startRtspServer({ frames, fps: FPS, preencoded: { mountOffsetsSeconds: [0] } });
    const d = await startTestDaemon({ toml: TOML, dir: tempDir(t, 'vigil-clips-nopts-') });
    try {
      const created = await addDoor(d, replay.url());
      t.is(created.status, 201, JSON.stringify(created.json));
      const events = async () =>
        ((await call(d, 'GET', '/v1/events?monitor_id=door&limit=50')).json.events ?? []) as Ev[];
      const enter = await waitFor(
        'a person_enter',
        async () => (await events()).find((e) => e.type === 'person_enter'),
        30_000,
        500,
      );
      t.is(enter.person?.id, 'obama');
      // The recording that could not be muxed ends failed with its reason once the branch has been silent for
      // 20 s while frames were decoded; the camera never reconnected meanwhile.
      // The init segment came before the muxer stopped, so the enter began a clip.
      t.truthy(enter.clip, 'the enter names the clip it began');
      const failed = await waitFor(
        'the clip failed',
        async () => {
          const e = (await call(d, 'GET', `/v1/events/${enter.id}`)).json.event as Ev;
          return e.clip?.status === 'failed' ? e : undefined;
        },
        40_000,
        500,
      );
      t.is(failed.clip.end_reason, 'record_failed');
      t.is(failed.clip.url, null);
      const state = (await call(d, 'GET', '/v1/monitors/door/state')).json.state as Ev;
      t.is(state.reconnects, 0, JSON.stringify(state.last_error));
      t.true(state.connected);
      // A later pass (the replay loops every 10 s) is still detected.
      const later = await waitFor(
        'a later person_enter',
        async () => (await events()).find((e) => e.type === 'person_enter' && e.id !== enter.id),
        30_000,
        500,
      );
      t.truthy(later);
      t.is(((await call(d, 'GET', '/v1/monitors/door/state')).json.state as Ev).reconnects, 0);
    } finally {
      await d.close();
      await replay.stop();
    }
  },
);
