import test from 'ava';
import sharp from 'sharp';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { allEvents, enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { iou } from '../../src/inference/geometry.js';

/**
 * [monitors] reidentify_interval_seconds (default 1 s): a confirmed person's face in (nearly) the same box
 * keeps its identity without a new embedding, and is searched again every interval. The stream swaps
 * Obama for Biden with Biden's face placed on Obama's face box, with no gap: only the periodic search can
 * tell the swap (the box stays where the settled track is).
 */
const W = 640,
  H = 360,
  FPS = 10;
let d: TestDaemon;
let server: RtspServer | undefined;

type Px = { x: number; y: number; width: number; height: number };
async function faceBox(image: Buffer): Promise<Px> {
  const r = await post(d, '/v1/detect', form({ image }));
  if (r.res.status !== 200 || r.json.faces.length !== 1) throw new Error(`detect: ${JSON.stringify(r.json)}`);
  return r.json.faces[0].bbox.pixels as Px;
}
const corners = (b: Px) => [b.x, b.y, b.x + b.width, b.y + b.height];

/** The photo scaled and moved so that its face lands on `target`, on the scenario's grey W x H canvas. */
async function placeFaceOn(photo: Buffer, target: Px): Promise<Buffer> {
  const upright = await sharp(photo).rotate().jpeg({ quality: 95 }).toBuffer();
  const src = await faceBox(upright);
  const meta = await sharp(upright).metadata();
  const s = target.width / src.width;
  const rw = Math.round(meta.width! * s),
    rh = Math.round(meta.height! * s);
  const left = Math.round(target.x - src.x * s),
    top = Math.round(target.y - src.y * s);
  const x0 = Math.max(0, -left),
    y0 = Math.max(0, -top),
    x1 = Math.min(rw, W - left),
    y1 = Math.min(rh, H - top);
  const part = await sharp(upright)
    .resize(rw, rh, { fit: 'fill' })
    .extract({ left: x0, top: y0, width: x1 - x0, height: y1 - y0 })
    .toBuffer();
  return sharp({ create: { width: W, height: H, channels: 3, background: { r: 96, g: 96, b: 96 } } })
    .composite([{ input: part, left: left + x0, top: top + y0 }])
    .jpeg({ quality: 90 })
    .toBuffer();
}

test.before(async () => {
  d = await startTestDaemon({ toml: FAST_MONITORS_TOML });
  await enrollObamaBiden(d, 'gallery');
});
test.after.always(async () => {
  await d?.close();
  await server?.stop();
});

test('a settled person is not embedded every frame, and a face swapped into the same box is still identified', async (t) => {
  const obama = await sharp(face('identities/obama/1.jpg'))
    .rotate()
    .resize(W, H, { fit: 'contain', background: { r: 96, g: 96, b: 96 } })
    .jpeg({ quality: 90 })
    .toBuffer();
  const obamaBox = await faceBox(obama);
  const biden = await placeFaceOn(face('identities/biden/1.jpg'), obamaBox);
  // The premise: Biden's face sits where Obama's was (well above the reuse IoU of 0.5).
  const overlap = iou(corners(obamaBox), corners(await faceBox(biden)));
  t.true(overlap >= 0.7, `face boxes overlap by IoU ${overlap}`);

  const frames = await renderScenario(
    [
      { image: obama, seconds: 4 },
      { image: biden, seconds: 4 },
    ],
    { width: W, height: H, fps: FPS },
  );
  server = await startRtspServer({ frames, fps: FPS });
  const create = await call(d, 'POST', '/v1/monitors', {
    id: 'swap',
    name: 'Swap',
    source: { url: server.url() },
    collection_id: 'gallery',
    inference_fps: 5,
    event_policy: { confirm_frames: 2, absence_timeout_seconds: 1, cooldown_seconds: 0 },
  });
  t.is(create.status, 201, JSON.stringify(create.json));
  // Both identities enter (in either order: the loop may start in either half), each after the other.
  const events = await waitFor(
    'person_enter of both, twice',
    async () => {
      const enters = (await allEvents(d, 'swap')).filter((e) => e.type === 'person_enter').map((e) => e.person?.id);
      return enters.filter((p) => p === 'obama').length >= 2 && enters.filter((p) => p === 'biden').length >= 2
        ? enters
        : undefined;
    },
    60_000,
    500,
  );
  for (let i = 1; i < events.length; i++) t.not(events[i], events[i - 1], `enters alternate: ${events.join(',')}`);
  const all = await allEvents(d, 'swap');
  t.false(
    all.some((e) => e.type === 'monitor_error'),
    JSON.stringify(all.filter((e) => e.type.startsWith('monitor_'))),
  );

  const s = (await call(d, 'GET', '/v1/monitors/swap/state')).json.state;
  t.true(s.inference.reused_identities > 0, JSON.stringify(s.inference));
  t.true(s.inference.embedded_faces > 0, JSON.stringify(s.inference));
  // Every processed frame has the one face: at most one in two was embedded (most are reused for 1 s).
  t.true(s.inference.embedded_faces < s.inference.processed_frames / 2, JSON.stringify(s.inference));
  t.is((await call(d, 'DELETE', '/v1/monitors/swap')).status, 204);
});
