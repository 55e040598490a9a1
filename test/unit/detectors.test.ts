import test from 'ava';
import {
  decodeScrfd,
  decodeYunet,
  detectorCanvas,
  placeInCanvas,
  type OutputArrays,
  type Placement,
} from '../../src/inference/detectors.js';

const close = (a: number, b: number, eps = 1e-6) => Math.abs(a - b) < eps;

function assertPoints(
  t: import('ava').ExecutionContext,
  got: readonly number[],
  want: readonly number[],
  what: string,
): void {
  t.is(got.length, want.length, what);
  for (let i = 0; i < want.length; i++) t.true(close(got[i]!, want[i]!), `${what}[${i}]: ${got[i]} vs ${want[i]}`);
}

// ---------------------------------------------------------------------------------------------
// placeInCanvas
// ---------------------------------------------------------------------------------------------

test('placeInCanvas margin 0: top-left letterbox, scale = resizedH / height', (t) => {
  const p = placeInCanvas(640, 480, 64, 64);
  t.deepEqual(p, { scale: 48 / 480, padX: 0, padY: 0, resizedW: 64, resizedH: 48 });
  const tall = placeInCanvas(300, 600, 128, 128);
  t.is(tall.resizedH, 128);
  t.is(tall.resizedW, 64);
  t.is(tall.scale, 128 / 600);
  t.is(tall.padX, 0);
  t.is(tall.padY, 0);
});

test('placeInCanvas with odd sizes uses the integer resize for the scale', (t) => {
  // 1000x333 into 64x64: scale 0.064, resizedH = floor(21.312) = 21 -> scale 21/333.
  const p = placeInCanvas(1000, 333, 64, 64);
  t.is(p.resizedW, 64);
  t.is(p.resizedH, 21);
  t.is(p.scale, 21 / 333);
});

test('placeInCanvas margin 0.2: image centred with black padding around it', (t) => {
  // avail = 64 * 0.6 = 38.4 -> scale = min(38.4/640, 38.4/480) = 0.06 -> 38 x 28
  const p = placeInCanvas(640, 480, 64, 64, 0.2);
  t.is(p.resizedW, 38);
  t.is(p.resizedH, 28);
  t.is(p.padX, 13); // floor((64-38)/2)
  t.is(p.padY, 18); // floor((64-28)/2)
  t.is(p.scale, 28 / 480);
  // The resized image stays inside the canvas with at least the margin on each side.
  t.true(p.padX >= Math.floor(64 * 0.2) && p.padX + p.resizedW <= 64);
  t.true(p.padY >= Math.floor(64 * 0.2) && p.padY + p.resizedH <= 64);
});

test('placeInCanvas never returns a zero-sized image', (t) => {
  const p = placeInCanvas(10000, 1, 64, 64);
  t.is(p.resizedH, 1);
  t.is(p.resizedW, 64);
});

// Reference (insightface SCRFD.detect): when the image is taller than the canvas ratio, new_height = input
// height exactly and det_scale = new_height / h. Float rounding in floor(h * (inputH / h)) loses a pixel here.
test('placeInCanvas margin 0 fills the limiting side exactly (49x49 into 512x512)', (t) => {
  const p = placeInCanvas(49, 49, 512, 512);
  t.is(p.resizedH, 512);
  t.is(p.resizedW, 512);
  t.is(p.scale, 512 / 49);
});

// ---------------------------------------------------------------------------------------------
// SCRFD
// ---------------------------------------------------------------------------------------------

const STRIDES = [8, 16, 32] as const;

/** Nine zeroed SCRFD outputs (scores x3, boxes x3, kps x3) for an inputW x inputH canvas, 2 anchors per cell. */
function scrfdOutputs(
  inputW: number,
  inputH: number,
): {
  outputs: OutputArrays;
  set: (stride: number, anchor: number, score: number, dist: number[], kps: number[]) => void;
} {
  const cells = STRIDES.map((s) => Math.ceil(inputW / s) * Math.ceil(inputH / s));
  const outputs: OutputArrays = [
    ...STRIDES.map((s, i) => ({ name: `score_${s}`, data: new Float32Array(cells[i]! * 2) })),
    ...STRIDES.map((s, i) => ({ name: `bbox_${s}`, data: new Float32Array(cells[i]! * 2 * 4) })),
    ...STRIDES.map((s, i) => ({ name: `kps_${s}`, data: new Float32Array(cells[i]! * 2 * 10) })),
  ];
  const set = (stride: number, anchor: number, score: number, dist: number[], kps: number[]) => {
    const si = STRIDES.indexOf(stride as 8 | 16 | 32);
    outputs[si]!.data[anchor] = score;
    outputs[si + 3]!.data.set(dist, anchor * 4);
    outputs[si + 6]!.data.set(kps, anchor * 10);
  };
  return { outputs, set };
}

const KPS = [0.5, -1, 1.5, -1, 1, 0, 0.5, 1, 1.5, 1];

test('decodeScrfd maps one anchor back through the placement (scale + padding)', (t) => {
  const { outputs, set } = scrfdOutputs(64, 64);
  // stride 8, cell row 3 col 5 (cell 29), second anchor -> index 59; centre (40, 24) in the canvas.
  set(8, 2 * (3 * 8 + 5) + 1, 0.75, [1, 2, 3, 4], KPS);
  const place: Placement = { scale: 0.5, padX: 4, padY: 2 };
  const found = decodeScrfd(outputs, 64, 64, 0.5, place);
  t.is(found.length, 1);
  const f = found[0]!;
  t.true(close(f.score, 0.75));
  // canvas box [40-8, 24-16, 40+24, 24+32] = [32, 8, 64, 56] -> image ((x-4)/0.5, (y-2)/0.5)
  assertPoints(t, f.box, [56, 12, 120, 108], 'box');
  const wantLm = [];
  for (let k = 0; k < 5; k++) wantLm.push((40 + KPS[2 * k]! * 8 - 4) / 0.5, (24 + KPS[2 * k + 1]! * 8 - 2) / 0.5);
  assertPoints(t, f.landmarks.flat(), wantLm, 'landmarks');
  t.is(f.landmarks.length, 5);
});

test('decodeScrfd: strides 16 and 32 use their own grids and stride units', (t) => {
  const { outputs, set } = scrfdOutputs(64, 64);
  set(16, 2 * (2 * 4 + 3), 0.9, [0.5, 0.5, 0.5, 0.5], KPS); // row 2 col 3 -> centre (48, 32)
  set(32, 2 * (1 * 2 + 0) + 1, 0.6, [1, 1, 1, 1], KPS); // row 1 col 0 -> centre (0, 32)
  const found = decodeScrfd(outputs, 64, 64, 0.5, { scale: 1, padX: 0, padY: 0 });
  t.is(found.length, 2);
  const s16 = found.find((f) => close(f.score, 0.9))!;
  const s32 = found.find((f) => close(f.score, 0.6))!;
  assertPoints(t, s16.box, [40, 24, 56, 40], 'stride16 box');
  assertPoints(t, s32.box, [-32, 0, 32, 64], 'stride32 box');
  assertPoints(t, s32.landmarks[0]!, [0 + 0.5 * 32, 32 - 32], 'stride32 lm0');
});

test('decodeScrfd on a non-square canvas lays cells out by the input width', (t) => {
  const { outputs, set } = scrfdOutputs(96, 64);
  // stride 32: 3 columns x 2 rows; cell 4 = row 1, col 1 -> centre (32, 32).
  set(32, 2 * 4, 0.8, [1, 1, 1, 1], KPS);
  const [f] = decodeScrfd(outputs, 96, 64, 0.5, { scale: 1, padX: 0, padY: 0 });
  assertPoints(t, f!.box, [0, 0, 64, 64], 'box');
});

test('decodeScrfd threshold filtering: below is dropped, at threshold is kept', (t) => {
  const { outputs, set } = scrfdOutputs(64, 64);
  set(8, 0, 0.49, [1, 1, 1, 1], KPS);
  set(8, 10, 0.5, [1, 1, 1, 1], KPS);
  set(16, 3, 0.2, [1, 1, 1, 1], KPS);
  const found = decodeScrfd(outputs, 64, 64, 0.5, { scale: 1, padX: 0, padY: 0 });
  t.deepEqual(
    found.map((f) => f.score),
    [0.5],
  );
  t.is(decodeScrfd(outputs, 64, 64, 0.1, { scale: 1, padX: 0, padY: 0 }).length, 3);
});

test('decodeScrfd rejects models without keypoint outputs', (t) => {
  const { outputs } = scrfdOutputs(64, 64);
  t.throws(() => decodeScrfd(outputs.slice(0, 6), 64, 64, 0.5, { scale: 1, padX: 0, padY: 0 }), {
    message: /9 outputs/,
  });
});

// ---------------------------------------------------------------------------------------------
// YuNet
// ---------------------------------------------------------------------------------------------

function yunetOutputs(
  inputW: number,
  inputH: number,
): {
  outputs: OutputArrays;
  set: (stride: number, cell: number, cls: number, obj: number, bbox: number[], kps: number[]) => void;
} {
  const outputs: OutputArrays = [];
  for (const s of STRIDES) {
    const n = Math.floor(inputW / s) * Math.floor(inputH / s);
    outputs.push(
      { name: `cls_${s}`, data: new Float32Array(n) },
      { name: `obj_${s}`, data: new Float32Array(n) },
      { name: `bbox_${s}`, data: new Float32Array(n * 4) },
      { name: `kps_${s}`, data: new Float32Array(n * 10) },
    );
  }
  const get = (name: string) => outputs.find((o) => o.name === name)!.data;
  const set = (s: number, cell: number, cls: number, obj: number, bbox: number[], kps: number[]) => {
    get(`cls_${s}`)[cell] = cls;
    get(`obj_${s}`)[cell] = obj;
    get(`bbox_${s}`).set(bbox, cell * 4);
    get(`kps_${s}`).set(kps, cell * 10);
  };
  // Shuffle the order: YuNet outputs are looked up by name, not position.
  outputs.reverse();
  return { outputs, set };
}

test('decodeYunet decodes one cell (score = sqrt(cls*obj)) and maps through the placement', (t) => {
  const { outputs, set } = yunetOutputs(64, 64);
  // stride 16 grid is 4x4; cell 9 = row 2, col 1.
  set(16, 9, 0.81, 1, [0.5, 0.25, Math.log(2), 0], KPS);
  const place: Placement = { scale: 2, padX: 6, padY: 4 };
  const found = decodeYunet(outputs, 64, 64, 0.5, place);
  t.is(found.length, 1);
  const f = found[0]!;
  t.true(close(f.score, 0.9));
  // centre ((1+0.5)*16, (2+0.25)*16) = (24, 36); w = 2*16 = 32, h = 16 -> canvas [8, 28, 40, 44]
  assertPoints(t, f.box, [(8 - 6) / 2, (28 - 4) / 2, (40 - 6) / 2, (44 - 4) / 2], 'box');
  const wantLm = [];
  for (let k = 0; k < 5; k++) wantLm.push(((KPS[2 * k]! + 1) * 16 - 6) / 2, ((KPS[2 * k + 1]! + 2) * 16 - 4) / 2);
  assertPoints(t, f.landmarks.flat(), wantLm, 'landmarks');
});

test('decodeYunet: strides 8 and 32 and a non-square canvas use floor(inputW / stride) columns', (t) => {
  const { outputs, set } = yunetOutputs(96, 64);
  set(8, 12 * 2 + 7, 1, 1, [0, 0, 0, 0], KPS); // stride 8: 12 cols; row 2 col 7 -> centre (56, 16), 8x8
  set(32, 4, 0.64, 1, [0, 0, 0, 0], KPS); // stride 32: 3 cols; cell 4 = row 1 col 1 -> centre (32, 32), 32x32
  const found = decodeYunet(outputs, 96, 64, 0.5, { scale: 1, padX: 0, padY: 0 });
  t.is(found.length, 2);
  const a = found.find((f) => close(f.score, 1))!;
  const b = found.find((f) => close(f.score, 0.8))!;
  assertPoints(t, a.box, [52, 12, 60, 20], 'stride8 box');
  assertPoints(t, b.box, [16, 16, 48, 48], 'stride32 box');
});

test('decodeYunet threshold filtering clamps cls/obj to [0,1] before the geometric mean', (t) => {
  const { outputs, set } = yunetOutputs(64, 64);
  set(8, 0, 0.2, 0.3, [0, 0, 0, 0], KPS); // sqrt(0.06) ~ 0.245 -> dropped at 0.5
  set(8, 1, 4, 0.16, [0, 0, 0, 0], KPS); // clamp -> sqrt(1*0.16) = 0.4 -> dropped (0.8 unclamped)
  set(8, 2, 0.36, 1, [0, 0, 0, 0], KPS); // 0.6 -> kept
  set(32, 3, -1, 1, [0, 0, 0, 0], KPS); // clamp -> 0
  const found = decodeYunet(outputs, 64, 64, 0.5, { scale: 1, padX: 0, padY: 0 });
  t.is(found.length, 1);
  t.true(close(found[0]!.score, 0.6));
  const all = decodeYunet(outputs, 64, 64, 0.3, { scale: 1, padX: 0, padY: 0 });
  t.deepEqual(all.map((f) => Math.round(f.score * 1000) / 1000).sort(), [0.4, 0.6]);
});

test('decodeYunet throws when a stride is missing', (t) => {
  const { outputs } = yunetOutputs(64, 64);
  t.throws(
    () =>
      decodeYunet(
        outputs.filter((o) => o.name !== 'kps_32'),
        64,
        64,
        0.5,
        { scale: 1, padX: 0, padY: 0 },
      ),
    { message: /stride 32/ },
  );
});

test('detectorCanvas: trim cuts a letterboxed size to the image rounded up to 32; close-up sizes and trim=false keep the canvas', (t) => {
  const wh = (c: { w: number; h: number }) => [c.w, c.h];
  t.deepEqual(
    wh(detectorCanvas(1280, 720, [512, 512], 0, true)),
    [512, 288],
    '16:9 at 512: 288 rows of image, no fill',
  );
  t.deepEqual(wh(detectorCanvas(720, 1280, [512, 512], 0, true)), [288, 512], 'portrait: the fill beside it goes');
  t.deepEqual(wh(detectorCanvas(1000, 700, [512, 512], 0, true)), [512, 384], '358 rows rounded up to 384');
  t.deepEqual(wh(detectorCanvas(1280, 720, [640, 480], 0, true)), [640, 384], '360 rows rounded up to 384');
  t.deepEqual(wh(detectorCanvas(1280, 720, [512, 512], 0, false)), [512, 512]);
  t.deepEqual(wh(detectorCanvas(1280, 720, [96, 96], 0.2, true)), [96, 96], 'a close-up size keeps its context');
  t.deepEqual(wh(detectorCanvas(512, 512, [512, 512], 0, true)), [512, 512]);
  // The placement is placeInCanvas's either way: boxes map back the same.
  t.deepEqual(detectorCanvas(1280, 720, [512, 512], 0, true).place, placeInCanvas(1280, 720, 512, 512, 0));
});
