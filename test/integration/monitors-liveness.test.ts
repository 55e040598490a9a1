import test from 'ava';
import { installLiveness } from '../../src/addons/livenessFiles.js';
import { installPack } from '../../src/models/installer.js';
import { call, face, form, MODELS_MIRROR, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { allEvents, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { Sink } from '../helpers/shared.js';
import { fileTempDir } from '../helpers/tempDir.js';

/** Normal-mode liveness on a monitor: a replayed (screen) face is blocked, never searched, never "enters". */
const FPS = 10;
let d: TestDaemon;
let rtsp: RtspServer;

test.before(async () => {
  const models = fileTempDir('vigil-mon-live-');
  await installPack({
    packId: 'edge_s',
    modelsDir: models,
    mirror: MODELS_MIRROR,
    acceptLicense: true,
    io: { stdout: new Sink(), stderr: new Sink() } as never,
  });
  await installLiveness({ modelsDir: models, mirror: MODELS_MIRROR });
  const frames = await renderScenario([{ image: face('liveness/spoof_screen_F2.jpg'), seconds: 3 }], {
    width: 640,
    height: 360,
    fps: FPS,
  });
  [d, rtsp] = await Promise.all([
    startTestDaemon({
      modelsDir: models,
      toml: `${FAST_MONITORS_TOML}\n[inference]\naddons = ["liveness"]\nliveness_mode = "normal"\n`,
    }),
    startRtspServer({ frames, fps: FPS }),
  ]);
});
test.after.always(async () => {
  await d?.close();
  await rtsp?.stop();
});

test('a spoofed face on the stream is liveness_blocked: counted apart, no match, no enter events', async (t) => {
  t.is((await call(d, 'POST', '/v1/collections', { id: 'g', name: 'G' })).status, 201);
  // Enrol the person whose photo is replayed, so a missed block would show up as a match.
  t.is(
    (await post(d, '/v1/collections/g/persons', form({ id: 'screen', images: face('liveness/spoof_screen_F2.jpg') })))
      .res.status,
    201,
  );
  const create = await call(d, 'POST', '/v1/monitors', {
    id: 'lobby',
    name: 'Lobby',
    source: { url: rtsp.url() },
    collection_id: 'g',
    inference_fps: 4,
    event_policy: { confirm_frames: 2, absence_timeout_seconds: 1, cooldown_seconds: 60 },
  });
  t.is(create.status, 201, JSON.stringify(create.json));
  const state = await waitFor(
    'blocked faces',
    async () => {
      const s = (await call(d, 'GET', '/v1/monitors/lobby/state')).json.state;
      return s.inference.processed_frames >= 6 && s.liveness_blocked_faces > 0 ? s : undefined;
    },
    45_000,
    300,
  );
  t.is(state.matched_faces, 0);
  t.is(state.unknown_faces, 0);
  t.like(state.faces[0], { status: 'liveness_blocked', person: null, similarity: null });
  t.like(state.faces[0].face.liveness, { status: 'ok', is_live: false });
  const events = await allEvents(d, 'lobby');
  t.false(
    events.some((e) => /_enter$/.test(e.type)),
    JSON.stringify(events.map((e) => e.type)),
  );
});
