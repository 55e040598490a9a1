import test from 'ava';
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { InferenceEngine } from '../../src/inference/engine.js';
import { iou } from '../../src/inference/geometry.js';
import { cosineSimilarity, type AnalyzeRequest } from '../../src/inference/pipeline.js';
import { loadInstalledPack } from '../../src/models/installed.js';
import { modelsDirWith } from '../helpers/daemon.js';
import { FACES } from '../helpers/shared.js';

// Monitors detect a 16:9 frame with the letterbox trimmed (512x288 instead of 512x512, trimLetterbox): on a
// real group frame the same faces, boxes and embeddings as the profile's square letterbox, for less model work.
test('a video frame with its letterbox trimmed gives the faces of the square letterbox', async (t) => {
  const pack = await loadInstalledPack(await modelsDirWith('edge_s'), 'edge_s');
  const engine = await InferenceEngine.start({
    pack,
    providers: ['cpu'],
    deviceId: 0,
    workers: 1,
    intraOpThreads: 1,
    graphOptimization: 'extended',
    warmupSizes: [
      [96, 96],
      [512, 512],
    ],
  });
  t.teardown(() => engine.close());
  const { data, info } = await sharp(readFileSync(`${FACES}groups/t1_friends.jpg`))
    .resize(1280, 720, { fit: 'cover' })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const square = {
    input_sizes: [
      [96, 96],
      [512, 512],
    ] as [number, number][],
    threshold: 0.5,
    nms_threshold: 0.4,
    single_face_selection: 'largest' as const,
  };
  const req = (trimLetterbox: boolean): AnalyzeRequest => ({
    image: { raw: new Uint8Array(data), width: info.width, height: info.height },
    limits: { maxBytes: 1e9, maxPixels: 1e9 },
    profile: square,
    maxFaces: 100,
    embed: 'all',
    trimLetterbox,
  });
  const a = await engine.analyze(req(false));
  const b = await engine.analyze(req(true));
  t.true(a.faces.length >= 4, `faces in the frame: ${a.faces.length}`);
  t.is(b.faces.length, a.faces.length);
  for (const fa of a.faces) {
    const fb = b.faces.reduce((best, f) => (iou(f.box, fa.box) > iou(best.box, fa.box) ? f : best));
    t.true(
      iou(fa.box, fb.box) > 0.97,
      `box ${fa.box.map(Math.round).join(',')} vs ${fb.box.map(Math.round).join(',')}`,
    );
    t.true(Math.abs(fa.score - fb.score) < 0.02, `score ${fa.score} vs ${fb.score}`);
    const cos = cosineSimilarity(fa.embedding!, fb.embedding!);
    t.true(cos > 0.98, `embedding cosine ${cos}`);
  }
});
