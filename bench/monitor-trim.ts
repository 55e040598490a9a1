/**
 * [monitors] trim_letterbox: what running the letterboxed detector size over the image only (512x288 for a
 * 16:9 frame at 512x512) changes, against the full canvas, on every fixture photo in three layouts: the photo
 * as it is, letterboxed into 1280x720, and in the lower half of a 1280x720 frame (faces touching the bottom
 * edge). Prints per layout the lowest box IoU, the largest score change and the lowest embedding cosine
 * between the two, and every face found by one and not the other.
 * Usage: npx tsx bench/monitor-trim.ts
 */
import sharp from 'sharp';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { FacePipeline, cosineSimilarity, type AnalyzeRequest } from '../src/inference/pipeline.js';
import { tunedSession } from '../src/inference/sessions.js';
import { loadInstalledPack } from '../src/models/installed.js';
import { iou } from '../src/inference/geometry.js';
import { modelsDirWith, FACES } from '../test/helpers/daemon.js';

const modelsDir = await modelsDirWith('edge_s');
const pack = await loadInstalledPack(modelsDir, 'edge_s');
const settings = { providers: ['cpu' as const], deviceId: 0, intraOpThreads: 2, graphOptimization: 'auto' as const };
const det = (await tunedSession(pack.detector.path, settings, [1, 3, 512, 512])).session;
const rec = (await tunedSession(pack.recognizer.path, settings, [1, 3, 112, 112])).session;
const p = new FacePipeline({
  detector: { spec: pack.detector, session: det },
  recognizer: { spec: pack.recognizer, session: rec },
});
const profile = {
  input_sizes: [
    [96, 96],
    [512, 512],
  ] as [number, number][],
  threshold: 0.5,
  nms_threshold: 0.4,
  single_face_selection: 'largest' as const,
};
const files: string[] = [];
const walk = (d: string) => {
  for (const f of readdirSync(d)) {
    const q = join(d, f);
    if (statSync(q).isDirectory()) walk(q);
    else if (/\.(jpe?g|png)$/i.test(f)) files.push(q);
  }
};
walk(FACES);
let n = 0,
  countDiff = 0;
const W: Record<string, { iou: number; score: number; cos: number; faces: number }> = {};
for (const f of files) {
  for (const layout of ['photo', '720p', '720p-bottom']) {
    const grey = { r: 96, g: 96, b: 96 };
    let img = sharp(readFileSync(f)).rotate();
    if (layout === '720p') img = img.resize(1280, 720, { fit: 'contain', background: grey });
    if (layout === '720p-bottom')
      img = sharp(await img.resize(1280, 360, { fit: 'contain', background: grey }).toBuffer()).extend({
        top: 360,
        background: grey,
      });
    const { data, info } = await img.removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const req = (trim: boolean): AnalyzeRequest => ({
      image: { raw: new Uint8Array(data), width: info.width, height: info.height },
      limits: { maxBytes: 1e12, maxPixels: 1e12 },
      profile,
      maxFaces: 100,
      embed: 'all',
      trimLetterbox: trim,
    });
    const a = await p.analyze(req(false)),
      b = await p.analyze(req(true));
    n++;
    if (a.faces.length !== b.faces.length) {
      countDiff++;
      console.log(
        'count',
        f,
        layout,
        a.faces.length,
        b.faces.length,
        a.faces.map((x) => x.score.toFixed(3)),
        b.faces.map((x) => x.score.toFixed(3)),
      );
      continue;
    }
    const w = (W[layout] ??= { iou: 1, score: 0, cos: 1, faces: 0 });
    a.faces.forEach((fa, i) => {
      // Faces come largest first: two of nearly the same size can swap places, so pair by overlap.
      const fb = b.faces.reduce((best, x) => (iou(fa.box, x.box) > iou(fa.box, best.box) ? x : best), b.faces[i]!);
      w.faces++;
      w.iou = Math.min(w.iou, iou(fa.box, fb.box));
      w.score = Math.max(w.score, Math.abs(fa.score - fb.score));
      const c = fa.embedding && fb.embedding ? cosineSimilarity(fa.embedding, fb.embedding) : 1;
      if (c < 0.99)
        console.log(
          layout,
          f.split('/').slice(-2).join('/'),
          'cos',
          c.toFixed(3),
          'box',
          fa.box.map(Math.round),
          `${info.width}x${info.height}`,
        );
      w.cos = Math.min(w.cos, c);
    });
  }
}
console.log({ images: n, countDiff }, W);
await p.close();
