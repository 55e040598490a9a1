import test from 'ava';
import {
  contextCrop,
  cylinderTurn,
  gaussianBlur,
  HEAD_RADIUS,
  infraredGray,
  jpegRecompress,
  lowLight,
  motionBlur,
  scaleFace,
  seededRandom,
  smallFaceInFrame,
  yawCylinder,
  type RawImage,
} from '../../bench/quality/degradations.js';
import { boxStatistics } from '../../src/inference/quality.js';

/** A w x h image from a function of the pixel position. */
function image(w: number, h: number, f: (x: number, y: number) => [number, number, number]): RawImage {
  const data = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) data.set(f(x, y), (y * w + x) * 3);
  return { data, width: w, height: h };
}
const px = (img: RawImage, x: number, y: number) =>
  Array.from(img.data.subarray((y * img.width + x) * 3, (y * img.width + x) * 3 + 3));
const mean = (img: RawImage) => img.data.reduce((a, b) => a + b, 0) / img.data.length;
const sharpness = (img: RawImage) =>
  boxStatistics(img.data, img.width, img.height, [0, 0, img.width, img.height]).laplacianVariance;
const checker = image(64, 48, (x, y) => (((x >> 2) + (y >> 2)) % 2 ? [220, 180, 140] : [30, 40, 50]));
const columns = image(64, 48, (x) => (x % 6 < 3 ? [200, 200, 200] : [40, 40, 40]));
const rows = image(64, 48, (_x, y) => (y % 6 < 3 ? [200, 200, 200] : [40, 40, 40]));

test('contextCrop keeps one box of context, clamps at the edges and moves the box with it', (t) => {
  const img = image(100, 80, (x, y) => [x, y, 7]);
  const inner = contextCrop(img, [40, 30, 50, 40], 1);
  t.like(inner.image, { width: 30, height: 30 });
  t.deepEqual(inner.box, [10, 10, 20, 20]);
  t.deepEqual(px(inner.image, 0, 0), [30, 20, 7]);
  const edge = contextCrop(img, [2, 3, 22, 23], 1);
  t.like(edge.image, { width: 42, height: 43 });
  t.deepEqual(edge.box, [2, 3, 22, 23]);
  t.deepEqual(px(edge.image, 5, 6), [5, 6, 7]);
});

test('scaleFace makes the face box the asked width', async (t) => {
  const p = await scaleFace({ image: checker, box: [16, 12, 48, 36] }, 112);
  t.true(Math.abs(p.box[2] - p.box[0] - 112) < 0.5, `${p.box}`);
  t.is(p.image.width, 224);
  t.is(p.image.data.length, p.image.width * p.image.height * 3);
});

test('smallFaceInFrame puts a face of the asked width in the centre of a 720p grey frame', async (t) => {
  const p = await smallFaceInFrame({ image: checker, box: [16, 12, 48, 36] }, 40);
  t.like(p.image, { width: 1280, height: 720 });
  t.true(Math.abs(p.box[2] - p.box[0] - 40) < 0.5);
  t.true(Math.abs((p.box[0] + p.box[2]) / 2 - 640) <= 1 && Math.abs((p.box[1] + p.box[3]) / 2 - 360) <= 1, `${p.box}`);
  t.deepEqual(px(p.image, 5, 5), [118, 118, 118], 'the rest of the frame is grey');
});

test('Gaussian blur removes detail and keeps size and mean', async (t) => {
  const out = await gaussianBlur(checker, 2);
  t.like(out, { width: 64, height: 48 });
  t.true(sharpness(out) < sharpness(checker) / 10, `${sharpness(out)} vs ${sharpness(checker)}`);
  t.true(Math.abs(mean(out) - mean(checker)) < 3);
});

test('motion blur is horizontal: it smears vertical stripes and leaves horizontal ones alone', async (t) => {
  const smeared = await motionBlur(columns, 9);
  const kept = await motionBlur(rows, 9);
  t.true(sharpness(smeared) < sharpness(columns) / 5, `${sharpness(smeared)}`);
  t.deepEqual(px(kept, 32, 1), px(rows, 32, 1));
  t.deepEqual(px(kept, 32, 4), px(rows, 32, 4));
  t.throws(() => motionBlur(rows, 8), undefined, 'even lengths have no centre');
});

test('JPEG q30 changes the pixels but not the picture', async (t) => {
  const out = await jpegRecompress(checker, 30);
  t.like(out, { width: 64, height: 48 });
  let diff = 0,
    changed = 0;
  for (let i = 0; i < out.data.length; i++) {
    diff += Math.abs(out.data[i]! - checker.data[i]!);
    if (out.data[i] !== checker.data[i]) changed++;
  }
  t.true(changed > out.data.length / 4, 'visible compression artefacts');
  t.true(diff / out.data.length < 25, `mean abs error ${diff / out.data.length}`);
});

test('low light darkens by the exposure, adds noise of the given sigma, and repeats per seed', (t) => {
  const flat = image(100, 100, () => [160, 160, 160]);
  const dark = lowLight(flat, { exposure: 0.25, noiseSigma: 5, seed: 7 });
  const m = mean(dark);
  t.true(Math.abs(m - 40) < 0.5, `mean ${m}`);
  const sd = Math.sqrt(dark.data.reduce((a, v) => a + (v - m) ** 2, 0) / dark.data.length);
  t.true(Math.abs(sd - 5) < 0.3, `sd ${sd}`);
  t.deepEqual(lowLight(flat, { exposure: 0.25, noiseSigma: 5, seed: 7 }).data, dark.data);
  t.notDeepEqual(lowLight(flat, { exposure: 0.25, noiseSigma: 5, seed: 8 }).data, dark.data);
  t.deepEqual(Array.from(flat.data.subarray(0, 3)), [160, 160, 160], 'input untouched');
});

test('seededRandom is uniform enough on [0, 1)', (t) => {
  const r = seededRandom(1);
  const xs = Array.from({ length: 10000 }, r);
  t.true(xs.every((x) => x >= 0 && x < 1));
  t.true(Math.abs(xs.reduce((a, b) => a + b, 0) / xs.length - 0.5) < 0.02);
});

test('IR-like grey: one red-weighted channel replicated', (t) => {
  const out = infraredGray(image(2, 1, (x) => (x ? [0, 0, 255] : [200, 100, 0])));
  t.deepEqual(px(out, 0, 0), [165, 165, 165]); // 0.7 * 200 + 0.25 * 100
  t.deepEqual(px(out, 1, 0), [13, 13, 13]); // 0.05 * 255
});

test('cylinderTurn: the axis moves by r·sin(θ), the silhouette stays, the far side hides', (t) => {
  const r = 10,
    rad = Math.PI / 6;
  t.true(Math.abs(cylinderTurn(0, r, rad) - 5) < 1e-12);
  t.is(cylinderTurn(12, r, rad), 12, 'outside the head nothing moves');
  t.true(Math.abs(cylinderTurn(9.9, r, rad) - r) < 1e-9, 'turned past the silhouette: stays at the edge');
  t.true(Math.abs(cylinderTurn(-3, r, -rad) + cylinderTurn(3, r, rad)) < 1e-12, 'symmetric');
});

test('yawCylinder: 0 degrees is the identity; 30 degrees moves the face centre right and narrows the box', (t) => {
  const img = image(200, 40, (x) => (x === 100 ? [255, 0, 0] : [0, 0, 0]));
  const box: [number, number, number, number] = [75, 5, 125, 35];
  t.deepEqual(yawCylinder({ image: img, box }, 0).image.data, img.data);
  const turned = yawCylinder({ image: img, box }, 30);
  // The red column at the axis (x = 100) lands near 100 + r·sin 30° = 100 + 0.6·50·0.5 = 115.
  const red = Array.from({ length: 200 }, (_, x) => px(turned.image, x, 20)[0]!);
  const peak = red.indexOf(Math.max(...red));
  t.true(Math.abs(peak - (100 + HEAD_RADIUS * 50 * 0.5)) <= 1, `peak at ${peak}`);
  const width = turned.box[2] - turned.box[0];
  t.true(width < 50 && width > 40, `box width ${width}`);
  t.true(turned.box[0] > box[0], 'the near edge moves towards the turn');
  t.deepEqual(px(turned.image, 10, 20), px(img, 10, 20), 'background outside the head is unchanged');
  const back = yawCylinder({ image: img, box }, -30);
  const peakBack = Array.from({ length: 200 }, (_, x) => px(back.image, x, 20)[0]!).reduce(
    (b, v, x, a) => (v > a[b]! ? x : b),
    0,
  );
  t.true(Math.abs(peakBack - 85) <= 1, `peak at ${peakBack}`);
});
