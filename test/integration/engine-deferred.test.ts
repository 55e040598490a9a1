import test from 'ava';
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { InferenceEngine, WORKER_DECODE_MAX_BYTES } from '../../src/inference/engine.js';
import { decodeImage } from '../../src/inference/image.js';
import type { AnalyzeRequest, AnalyzeResult } from '../../src/inference/pipeline.js';
import { loadInstalledPack } from '../../src/models/installed.js';
import { modelsDirWith } from '../helpers/daemon.js';
import { FACES } from '../helpers/shared.js';

const profile = {
  input_sizes: [
    [96, 96],
    [512, 512],
  ] as [number, number][],
  threshold: 0.5,
  nms_threshold: 0.4,
  single_face_selection: 'largest' as const,
};
const limits = { maxBytes: 1e8, maxPixels: 1e8 };

/** An engine of one worker holding one job, on the CPU, with the edge_s pack. */
async function oneWorkerEngine(): Promise<InferenceEngine> {
  return InferenceEngine.start({
    pack: await loadInstalledPack(await modelsDirWith('edge_s'), 'edge_s'),
    providers: ['cpu'],
    deviceId: 0,
    workers: 1,
    intraOpThreads: 1,
    graphOptimization: 'extended',
    warmupSizes: profile.input_sizes,
  });
}

// A monitor hands the engine a function: the frame is chosen when a worker is free, so it never ages in
// the queue. With one worker busy, the function must not run until that job is done, and the result must
// be that of the request the function returned.
test('a deferred request is built only when a worker is free, and its request is the one analysed', async (t) => {
  const engine = await oneWorkerEngine();
  t.teardown(() => engine.close());
  const group = await decodeImage(readFileSync(`${FACES}groups/t1_friends.jpg`), limits);
  const single = await decodeImage(readFileSync(`${FACES}identities/obama/1.jpg`), limits);
  const raw = (img: typeof group): AnalyzeRequest => ({
    image: { raw: img.data, width: img.width, height: img.height },
    limits,
    profile,
    maxFaces: 100,
    embed: 'all',
  });

  const events: string[] = [];
  const first = engine.analyze(raw(group));
  const deferred = engine.analyze(() => {
    events.push(`built, ${engine.stats().active} active`);
    return raw(single);
  });
  await new Promise((r) => setImmediate(r));
  t.deepEqual(events, [], 'not built while the only worker is busy');
  const [a, b] = await Promise.all([first, deferred]);
  // Built once, holding the slot the first job gave back (1 active: its own).
  t.deepEqual(events, ['built, 1 active']);
  t.deepEqual([a.width, a.height], [group.width, group.height]);
  t.deepEqual([b.width, b.height], [single.width, single.height]);
  t.true(b.faces.length >= 1 && b.faces.every((f) => f.embedding instanceof Float32Array));

  // Encoded images cannot be deferred (they go through the decode stage first).
  await t.throwsAsync(
    engine.analyze(() => ({ ...raw(single), image: { encoded: new Uint8Array([0xff, 0xd8, 0xff]) } })),
    { message: /raw image/ },
  );
});

// With a second set of sessions for lone jobs, a job that runs alone uses it and jobs that overlap do not;
// both sets give the same faces and the same embeddings (same models and optimisation levels, only the
// ORT thread count differs).
test('a job alone runs on the alone sessions, overlapping jobs on the shared ones, with the same results', async (t) => {
  const modelsDir = await modelsDirWith('edge_s');
  const pack = await loadInstalledPack(modelsDir, 'edge_s');
  const engine = await InferenceEngine.start({
    pack,
    providers: ['cpu'],
    deviceId: 0,
    workers: 2,
    intraOpThreads: 1,
    aloneIntraOpThreads: 2,
    graphOptimization: 'extended',
    warmupSizes: profile.input_sizes,
  });
  t.teardown(() => engine.close());
  t.like(engine.stats(), { workers: 2, intra_op_threads: 1, alone_intra_op_threads: 2, alone_jobs: 0 });
  const group = await decodeImage(readFileSync(`${FACES}groups/t1_friends.jpg`), limits);
  const req: AnalyzeRequest = {
    image: { raw: group.data, width: group.width, height: group.height },
    limits,
    profile,
    maxFaces: 100,
    embed: 'all',
  };

  const lone = await engine.analyze(req);
  t.is(engine.stats().alone_jobs, 1, 'the lone job ran on the alone sessions');
  const overlapping = await Promise.all([engine.analyze(req), engine.analyze(req)]);
  t.is(engine.stats().alone_jobs, 1, 'two jobs that hold the limiter together both run on the shared sessions');

  t.true(lone.faces.length >= 4);
  for (const other of overlapping) {
    t.is(other.faces.length, lone.faces.length);
    other.faces.forEach((f, i) => {
      const a = lone.faces[i]!;
      t.deepEqual(
        f.box.map((v) => Math.round(v)),
        a.box.map((v) => Math.round(v)),
      );
      let dot = 0;
      for (let j = 0; j < a.embedding!.length; j++) dot += a.embedding![j]! * f.embedding![j]!;
      t.true(dot > 0.9999, `face ${i}: cosine ${dot}`);
    });
  }
});

// Uploads up to workerDecodeMaxPixels are decoded in the worker that runs their models, anything else in
// the decode stage. Both paths must give the same faces and embeddings, and refuse with the same errors.
test('an upload is decoded in the worker or in the decode stage with the same results and the same refusals', async (t) => {
  const modelsDir = await modelsDirWith('edge_s');
  const pack = await loadInstalledPack(modelsDir, 'edge_s');
  const base = {
    pack,
    providers: ['cpu' as const],
    deviceId: 0,
    workers: 1,
    intraOpThreads: 1,
    graphOptimization: 'extended' as const,
    warmupSizes: profile.input_sizes,
  };
  const inWorker = await InferenceEngine.start(base);
  t.teardown(() => inWorker.close());
  const inStage = await InferenceEngine.start({ ...base, workerDecodeMaxPixels: 0 });
  t.teardown(() => inStage.close());
  const encoded = (file: string, l = limits): AnalyzeRequest => ({
    image: { encoded: readFileSync(`${FACES}${file}`) },
    limits: l,
    profile,
    maxFaces: 100,
    embed: 'all',
  });

  for (const file of ['groups/t1_friends.jpg', 'identities/obama/1.jpg']) {
    const a = await inWorker.analyze(encoded(file));
    const b = await inStage.analyze(encoded(file));
    t.deepEqual([a.width, a.height], [b.width, b.height], file);
    t.true(a.faces.length >= 1, file);
    t.is(a.faces.length, b.faces.length, file);
    a.faces.forEach((f, i) =>
      t.deepEqual(Array.from(f.embedding!), Array.from(b.faces[i]!.embedding!), `${file} face ${i}`),
    );
  }
  t.like(inWorker.stats(), { worker_decodes: 2, decoding: 0 });
  t.like(inStage.stats(), { worker_decodes: 0 });

  // The request's own limits and the stage's shape limits hold in the worker too, with the same errors.
  for (const l of [
    { maxBytes: 1e8, maxPixels: 1000 },
    { maxBytes: 1000, maxPixels: 1e8 },
  ]) {
    const fromWorker = await t.throwsAsync(inWorker.analyze(encoded('identities/obama/1.jpg', l)));
    const fromStage = await t.throwsAsync(inStage.analyze(encoded('identities/obama/1.jpg', l)));
    t.like(fromWorker, { code: 'image_too_large' });
    t.deepEqual(
      [(fromWorker as { code?: string }).code, (fromWorker as { details?: unknown }).details],
      [(fromStage as { code?: string }).code, (fromStage as { details?: unknown }).details],
    );
  }
  t.is(inWorker.stats().worker_decodes, 4, 'both refusals came from the worker');
  // Bytes whose header this code cannot read go through the stage (sharp reads it there): 422 either way.
  const garbage: AnalyzeRequest = {
    ...encoded('identities/obama/1.jpg'),
    image: { encoded: new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0, 1, 2, 3, 4, 5, 6]) },
  };
  await t.throwsAsync(inWorker.analyze(garbage), { message: /could not be decoded/ });
  t.is(inWorker.stats().worker_decodes, 4);
});

// Raw images up to Full HD reach a worker through one of its slot's shared buffers (one per job it may
// hold), reused by every job of that slot: one worker, different frames one after the other and queued
// together, each result must be that frame's alone (the same as from a fresh engine of one job per
// worker), and the caller's buffer is never touched. With two jobs per worker, two frames are in the
// worker at once, each in its own buffer.
for (const jobsPerWorker of [1, 2])
  test(`raw frames through reused slot buffers give each frame its own result (${jobsPerWorker} job(s) per worker)`, async (t) => {
    const modelsDir = await modelsDirWith('edge_s');
    const pack = await loadInstalledPack(modelsDir, 'edge_s');
    const start = (depth = 1) =>
      InferenceEngine.start({
        pack,
        providers: ['cpu'],
        deviceId: 0,
        workers: 1,
        jobsPerWorker: depth,
        intraOpThreads: 1,
        graphOptimization: 'extended',
        warmupSizes: profile.input_sizes,
      });
    const engine = await start(jobsPerWorker);
    t.teardown(() => engine.close());
    const group = await decodeImage(readFileSync(`${FACES}groups/t1_friends.jpg`), limits);
    const single = await decodeImage(readFileSync(`${FACES}identities/obama/1.jpg`), limits);
    const raw = (img: typeof group): AnalyzeRequest => ({
      image: { raw: img.data, width: img.width, height: img.height },
      limits,
      profile,
      maxFaces: 100,
      embed: 'all',
    });
    const groupCopy = Buffer.from(group.data);
    const summary = (r: Awaited<ReturnType<typeof engine.analyze>>) => ({
      size: [r.width, r.height],
      faces: r.faces.map((f) => ({ box: f.box, embedding: Array.from(f.embedding!) })),
    });

    const sequence = [group, single, group, single];
    const results = [];
    for (const img of sequence) results.push(summary(await engine.analyze(raw(img))));
    // Queued behind each other on the one slot as well.
    const queued = (await Promise.all(sequence.map((img) => engine.analyze(raw(img))))).map(summary);

    const fresh = await start();
    t.teardown(() => fresh.close());
    const expected = {
      group: summary(await fresh.analyze(raw(group))),
      single: summary(await fresh.analyze(raw(single))),
    };
    t.true(expected.group.faces.length >= 4 && expected.single.faces.length >= 1);
    for (const rs of [results, queued]) {
      t.deepEqual(rs[0], expected.group);
      t.deepEqual(rs[1], expected.single);
      t.deepEqual(rs[2], expected.group);
      t.deepEqual(rs[3], expected.single);
    }
    t.true(groupCopy.equals(Buffer.from(group.data)), "the caller's pixels are unchanged");
    t.like(engine.stats(), {
      workers: 1,
      jobs_per_worker: jobsPerWorker,
      max_concurrency: jobsPerWorker,
      peak_active: jobsPerWorker,
      active: 0,
    });
    // Encoded uploads, decoded in the worker, two at a time as well.
    const encoded = (file: string): AnalyzeRequest => ({
      image: { encoded: readFileSync(`${FACES}${file}`) },
      limits,
      profile,
      maxFaces: 100,
      embed: 'all',
    });
    const uploads = (
      await Promise.all(
        ['groups/t1_friends.jpg', 'identities/obama/1.jpg', 'groups/t1_friends.jpg'].map((f) =>
          engine.analyze(encoded(f)),
        ),
      )
    ).map(summary);
    t.deepEqual(uploads, [expected.group, expected.single, expected.group]);
  });

// A pixel source that fails when the engine copies it (a monitor frame released by a stopping reader)
// fails that request only: the one worker slot is free again for the next one.
test('a pixel source that throws fails its request and leaves the worker slot free', async (t) => {
  const engine = await oneWorkerEngine();
  t.teardown(() => engine.close());
  const single = await decodeImage(readFileSync(`${FACES}identities/obama/1.jpg`), limits);
  const base = { limits, profile, maxFaces: 100, embed: 'all' as const };
  const failing: AnalyzeRequest = {
    ...base,
    image: {
      pixels: {
        byteLength: single.data.byteLength,
        copyInto: () => {
          throw new Error('the frame was released before it was read');
        },
      },
      width: single.width,
      height: single.height,
    },
  };
  await t.throwsAsync(engine.analyze(failing), { message: /released before it was read/ });
  t.is(engine.stats().active, 0);
  const copied: AnalyzeRequest = {
    ...base,
    image: {
      pixels: { byteLength: single.data.byteLength, copyInto: (target) => target.set(single.data) },
      width: single.width,
      height: single.height,
    },
  };
  const ok = await engine.analyze(copied);
  const direct = await engine.analyze({
    ...base,
    image: { raw: single.data, width: single.width, height: single.height },
  });
  t.deepEqual(
    ok.faces.map((f) => Array.from(f.embedding!)),
    direct.faces.map((f) => Array.from(f.embedding!)),
    'a pixel source gives what raw pixels give',
  );
});

// Issue 36.1: uploads must not hold up the cameras. A camera frame (a raw or deferred request) waits for one
// job at most, however many uploads are queued; and a Full HD file over WORKER_DECODE_MAX_BYTES (whose
// progressive decode time grows with its bytes) is decoded in the decode stage, outside the inference slot.
test('issue 36.1: a camera frame goes before queued uploads, and a large Full HD file is decoded outside the inference slot', async (t) => {
  const engine = await oneWorkerEngine();
  t.teardown(() => engine.close());
  const upload = (file: string): AnalyzeRequest => ({
    image: { encoded: readFileSync(`${FACES}${file}`) },
    limits,
    profile,
    maxFaces: 100,
    embed: 'all',
  });
  const single = await decodeImage(readFileSync(`${FACES}identities/obama/1.jpg`), limits);
  const done: string[] = [];
  const note = (name: string) => (r: AnalyzeResult) => {
    done.push(name);
    return r;
  };
  const uploads = [1, 2, 3, 4].map((i) => engine.analyze(upload('groups/t1_friends.jpg')).then(note(`upload ${i}`)));
  await new Promise((r) => setImmediate(r));
  t.like(engine.stats(), { active: 1, waiting: 3 });
  const frame = engine
    .analyze(() => ({
      ...upload('identities/obama/1.jpg'),
      image: { raw: single.data, width: single.width, height: single.height },
    }))
    .then(note('camera'));
  await Promise.all([...uploads, frame]);
  t.deepEqual(done.slice(0, 2), ['upload 1', 'camera']);

  // 1920x1080 at quality 100 over noise: ~3 MB, so it goes through the decode stage.
  const noise = Buffer.alloc(1920 * 1080 * 3);
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
  const large = await sharp(noise, { raw: { width: 1920, height: 1080, channels: 3 } })
    .jpeg({ quality: 100, progressive: true })
    .toBuffer();
  t.true(large.length > WORKER_DECODE_MAX_BYTES);
  const before = engine.stats().worker_decodes;
  const r = await engine.analyze({ ...upload('identities/obama/1.jpg'), image: { encoded: large } });
  t.deepEqual([r.width, r.height], [1920, 1080]);
  t.is(engine.stats().worker_decodes, before, 'decoded in the stage, not in the worker');
});
