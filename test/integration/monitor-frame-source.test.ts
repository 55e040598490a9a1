import { createRequire } from 'node:module';
import test from 'ava';
import { DEFAULT_MONITOR_PIPELINE } from '../../src/config/schema.js';
import {
  FramePixels,
  GstFrameSource,
  liveNativePipelines,
  type FrameSourceOptions,
} from '../../src/monitors/frameSource.js';
import { waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';

// Each source parks a GStreamer pull in libuv's pool; these run one after another.
const OPTIONS: FrameSourceOptions = {
  pipeline: DEFAULT_MONITOR_PIPELINE,
  latencyMs: 100,
  openTimeoutMs: 8000,
  readTimeoutMs: 1500,
};
let server: RtspServer;

test.before(async () => {
  const frames = await renderScenario([{ image: null, seconds: 2 }], { width: 320, height: 240, fps: 25 });
  server = await startRtspServer({ frames, fps: 25 });
});
test.after.always(async () => server?.stop());

/** Starts a source and resolves with it once `n` frames have arrived. */
async function receiving(url: string, n: number, failed: (reason: string) => void = () => {}) {
  let frames = 0;
  const source = new GstFrameSource(url, OPTIONS, {
    caps: () => {},
    frame: () => {
      frames++;
    },
    failed,
  });
  source.start();
  await waitFor(`${n} frames`, async () => (frames >= n ? true : undefined), 15_000, 20);
  return source;
}

test.serial('stopped sources free their native pipelines, so reconnects do not pile them up', async (t) => {
  t.is(liveNativePipelines(), 0);
  for (let i = 0; i < 5; i++) {
    const source = await receiving(server.url(), 3);
    t.is(liveNativePipelines(), 1);
    source.stop();
    source.stop(); // idempotent
    // The pull parked in libuv's pool comes back once the pipeline is stopped; only then is it freed.
    await waitFor('the pipeline disposed', async () => (liveNativePipelines() === 0 ? true : undefined), 5000, 10);
  }
  t.is(liveNativePipelines(), 0);
});

test.serial('a source that fails by itself (camera gone) frees its pipeline too', async (t) => {
  const frames = await renderScenario([{ image: null, seconds: 1 }], { width: 320, height: 240, fps: 25 });
  const doomed = await startRtspServer({ frames, fps: 25 });
  let reason = '';
  await receiving(doomed.url(), 3, (r) => {
    reason = r;
  });
  await doomed.stop();
  await waitFor('the source failed', async () => (reason ? true : undefined), 10_000, 20);
  t.regex(reason, /no frame for|ended/);
  await waitFor('the pipeline disposed', async () => (liveNativePipelines() === 0 ? true : undefined), 5000, 10).catch(
    () => undefined,
  );
  t.is(liveNativePipelines(), 0, 'the failed source freed its pipeline');
});

test.serial('a template without src/sink is refused and leaves nothing behind', (t) => {
  const source = new GstFrameSource(
    server.url(),
    { ...OPTIONS, pipeline: 'videotestsrc name=src ! fakesink name=out' },
    { caps: () => {}, frame: () => {}, failed: () => {} },
  );
  t.throws(() => source.start(), { message: /src and sink/ });
  t.is(liveNativePipelines(), 0);
});

test.serial(
  'a frame is read out of GStreamer only when asked: read() returns one packed array every time, an unread released frame refuses',
  async (t) => {
    const got: { pixels: FramePixels; width: number; height: number }[] = [];
    const source = new GstFrameSource(server.url(), OPTIONS, {
      caps: () => {},
      frame: (pixels, width, height) => {
        got.push({ pixels, width, height });
      },
      failed: () => {},
    });
    source.start();
    await waitFor('3 frames', async () => (got.length >= 3 ? true : undefined), 15_000, 20);
    source.stop();
    const [first, second] = got as [(typeof got)[0], (typeof got)[0]];
    t.is(first.width, 320);
    const data = first.pixels.read();
    t.is(data.length, 320 * 240 * 3);
    t.is(first.pixels.read(), data, 'the same copy on every read');
    first.pixels.release();
    t.is(first.pixels.read(), data, 'what was read stays readable');
    second.pixels.release();
    second.pixels.release();
    t.throws(() => second.pixels.read(), { message: /released before it was read/ });
    for (const g of got) g.pixels.release();
    await waitFor('the pipeline disposed', async () => (liveNativePipelines() === 0 ? true : undefined), 5000, 10);
  },
);

interface TestSample {
  size: number;
  copy(): Buffer;
  view(): Buffer;
  release(): void;
  copyTo(target: Uint8Array, offset?: number): number;
}
interface TestSink {
  pullSample(cb: (s: TestSample | null, caps: Record<string, unknown>) => void): void;
}

test.serial(
  'the installed addon is our build (vigil.5): pullSample hands samples without copying and the caps object once per caps',
  async (t) => {
    const { Pipeline } = createRequire(import.meta.url)('gstreamer-superficial') as {
      Pipeline: new (launch: string) => { play(): void; dispose(): void; findChild(n: string): TestSink };
    };
    const p = new Pipeline(
      'videotestsrc num-buffers=3 ! video/x-raw,format=RGB,width=64,height=48 ! appsink name=sink',
    );
    const sink = p.findChild('sink');
    p.play();
    const pull = () =>
      new Promise<[TestSample | null, Record<string, unknown>]>((resolve) =>
        sink.pullSample((s, caps) => resolve([s, caps])),
      );
    const [a, capsA] = await pull();
    const [b, capsB] = await pull();
    t.is(capsA.width, 64);
    t.is(capsA.format, 'RGB');
    t.is(capsB, capsA, 'the same caps object while the caps do not change');
    t.is(a!.size, 64 * 48 * 3);
    const copy = a!.copy();
    const view = a!.view();
    t.is(copy.length, 64 * 48 * 3);
    t.true(view.equals(copy), 'the view shows the same pixels as the copy');
    // copyTo: into an existing array (a SharedArrayBuffer's too) at an offset, no new Buffer.
    const target = new Uint8Array(new SharedArrayBuffer(64 * 48 * 3 + 8));
    t.is(a!.copyTo(target, 8), 64 * 48 * 3);
    t.true(Buffer.from(target.buffer, 8).equals(copy), 'copyTo writes the same pixels at the offset');
    t.throws(() => a!.copyTo(new Uint8Array(64 * 48 * 3 - 1)), { message: /too small/ });
    t.throws(() => a!.copyTo(target, 9), { message: /too small/ });
    // FramePixels.copyInto takes the pixels straight from the sample while nothing has read them.
    const fromSample = new Uint8Array(64 * 48 * 3);
    new FramePixels(a as never, 64, 48).copyInto(fromSample);
    t.true(Buffer.from(fromSample).equals(copy));
    a!.release();
    a!.release();
    t.is(a!.size, 0);
    t.throws(() => a!.copy(), { message: /released/ });
    t.throws(() => a!.view(), { message: /released/ });
    t.throws(() => a!.copyTo(target), { message: /released/ });
    t.true(view.equals(copy), 'a view outlives the release of its sample');
    // copyInto holds its sample until settle(): a newer frame releasing it meanwhile only asks.
    const kept = new FramePixels(b as never, 64, 48);
    kept.copyInto(new Uint8Array(64 * 48 * 3));
    kept.release();
    t.true(b!.size > 0, 'held until settle');
    kept.settle(true);
    t.is(b!.size, 0, 'settle(true) reads the pixels (a view) and lets the sample go');
    t.is(kept.read().length, 64 * 48 * 3, 'kept pixels stay readable');
    const [c] = await pull();
    const dropped = new FramePixels(c as never, 64, 48);
    dropped.copyInto(new Uint8Array(64 * 48 * 3));
    dropped.release();
    t.true(c!.size > 0);
    dropped.settle(false);
    t.is(c!.size, 0, 'settle(false) after a release request hands the buffer back');
    t.throws(() => dropped.read(), { message: /released/ });
    const [end] = await pull();
    t.is(end, null, 'end of stream');
    p.dispose();
  },
);

test.serial('FramePixels packs rows that GStreamer padded to 4 bytes', async (t) => {
  const { Pipeline } = createRequire(import.meta.url)('gstreamer-superficial') as {
    Pipeline: new (launch: string) => { play(): void; dispose(): void; findChild(n: string): TestSink };
  };
  const p = new Pipeline('videotestsrc num-buffers=1 ! video/x-raw,format=RGB,width=3,height=2 ! appsink name=sink');
  p.play();
  const sample = await new Promise<TestSample | null>((resolve) => p.findChild('sink').pullSample((s) => resolve(s)));
  t.is(sample!.size, 12 * 2, 'rows of 9 bytes padded to 12');
  const padded = sample!.copy();
  const pixels = new FramePixels(sample, 3, 2);
  const data = pixels.read();
  t.is(data.length, 18);
  t.deepEqual(Array.from(data), [...padded.subarray(0, 9), ...padded.subarray(12, 21)]);
  // copyInto of padded rows gives the packed pixels too (through read()).
  const packed = new Uint8Array(18);
  pixels.copyInto(packed);
  t.deepEqual(Array.from(packed), Array.from(data));
  p.dispose();
});

test.serial('the installed addon is our build: a disposed pipeline refuses further use', (t) => {
  const { Pipeline } = createRequire(import.meta.url)('gstreamer-superficial') as {
    Pipeline: new (launch: string) => { play(): void; dispose(): void };
  };
  const p = new Pipeline('fakesrc num-buffers=1 ! fakesink');
  p.dispose();
  p.dispose();
  t.throws(() => p.play(), { message: /disposed/ });
});
