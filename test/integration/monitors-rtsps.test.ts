import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { DEFAULT_MONITOR_PIPELINE } from '../../src/config/schema.js';
import { GstFrameSource } from '../../src/monitors/frameSource.js';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { allEvents, enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * rtsps:// end to end: GStreamer's RTSP server with a self-signed certificate made at test time. By
 * default rtspsrc validates the certificate (and refuses this one); a camera with a self-signed
 * certificate needs `tls-validation-flags=0` in [monitors].pipeline, which the daemon below uses.
 */
const NO_VALIDATION = DEFAULT_MONITOR_PIPELINE.replace('protocols=tcp', 'protocols=tcp tls-validation-flags=0');
let dir: string;
let server: RtspServer;
let d: TestDaemon | undefined;

test.before(async () => {
  dir = fileTempDir('vigil-rtsps-');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  writeFileSync(
    join(dir, 'server.pem'),
    readFileSync(join(dir, 'cert.pem'), 'utf8') + readFileSync(join(dir, 'key.pem'), 'utf8'),
  );
  const frames = await renderScenario([{ image: face('identities/obama/1.jpg'), seconds: 2 }], {
    width: 640,
    height: 360,
    fps: 10,
  });
  server = await startRtspServer({ frames, fps: 10, tlsPem: join(dir, 'server.pem') });
});
test.after.always(async () => {
  await d?.close();
  await server?.stop();
});

/** Frames a frame source gets from the TLS server within a few seconds, or why it gave up. */
async function tryFrames(pipeline: string): Promise<{ frames: number; failed: string | null }> {
  let frames = 0,
    failed: string | null = null;
  const source = new GstFrameSource(
    server.url(),
    { pipeline, latencyMs: 0, openTimeoutMs: 4000, readTimeoutMs: 1500 },
    {
      caps: () => {},
      frame: () => {
        frames++;
      },
      failed: (r) => {
        failed = r;
      },
    },
  );
  source.start();
  await waitFor('frames or a failure', async () => (frames >= 3 || failed ? true : undefined), 15_000, 20);
  source.stop();
  return { frames, failed };
}

test.serial('the default pipeline validates the camera certificate: a self-signed one gets no frames', async (t) => {
  t.true(server.url().startsWith('rtsps://'));
  const r = await tryFrames(DEFAULT_MONITOR_PIPELINE);
  t.is(r.frames, 0);
  t.regex(r.failed ?? '', /no frame within/);
});

test.serial(
  'with tls-validation-flags=0 in [monitors].pipeline, an rtsps:// monitor streams and recognises',
  async (t) => {
    t.true((await tryFrames(NO_VALIDATION)).frames >= 3);
    d = await startTestDaemon({ toml: `${FAST_MONITORS_TOML}\npipeline = "${NO_VALIDATION}"` });
    await enrollObamaBiden(d, 'gallery');
    const m = await call(d, 'POST', '/v1/monitors', {
      id: 'tls',
      name: 'TLS camera',
      source: { url: server.url() },
      collection_id: 'gallery',
      inference_fps: 4,
    });
    t.is(m.status, 201, JSON.stringify(m.json));
    t.is(m.json.monitor.source.url, server.url());
    const events = await waitFor(
      'person_enter',
      async () => {
        const ev = await allEvents(d!, 'tls');
        return ev.some((e) => e.type === 'person_enter') ? ev : undefined;
      },
      60_000,
      300,
    );
    t.is(events.find((e) => e.type === 'person_enter')!.person?.id, 'obama');
    const s = (await call(d, 'GET', '/v1/monitors/tls/state')).json.state;
    t.is(s.status, 'running');
    t.true(s.connected);
  },
);
