import test from 'ava';
import { configTextProblem, withAddonEnabled } from '../../src/addons/configEnablement.js';
import {
  classProbability,
  contextCrop,
  cropToTensor,
  LIVENESS_TEMPLATE_80,
  livenessInputProblem,
  livenessVerdict,
  REASON_BAD_LANDMARKS,
  REASON_OUT_OF_FRAME,
  templateOutsideFraction,
} from '../../src/inference/liveness.js';

/** Landmarks of a face whose template framing is `side` pixels wide, centred at (cx, cy). */
const landmarksAt = (cx: number, cy: number, side: number): [number, number][] =>
  LIVENESS_TEMPLATE_80.map(([x, y]) => [cx + ((x - 40) * side) / 80, cy + ((y - 40) * side) / 80]);

test('contextCrop follows Silent-Face: scaled about the centre, scale reduced to fit, shifted back inside', (t) => {
  t.deepEqual(contextCrop([400, 300, 500, 400], 1000, 800, 2), [350, 250, 550, 450]);
  // Too large for the image: the scale shrinks to (H-1)/h.
  t.deepEqual(contextCrop([100, 100, 300, 300], 1000, 500, 4), [0, 0, 499, 499]);
  // Near the left edge: shifted right, size kept.
  const [l, top, r, b] = contextCrop([0, 300, 100, 400], 1000, 800, 2.7);
  t.is(l, 0);
  t.is(r - l, 270);
  t.is(b - top, 270);
});

test('templateOutsideFraction: 0 for a centred face, the reference gate at 30%, null for degenerate landmarks', (t) => {
  t.is(templateOutsideFraction(landmarksAt(500, 500, 200), 1000, 1000), 0);
  // Shifted so that 25% of the 80x80 framing lies left of the image.
  const quarter = templateOutsideFraction(landmarksAt(50, 500, 200), 1000, 1000)!;
  t.true(Math.abs(quarter - 0.25) < 0.02, String(quarter));
  t.true(templateOutsideFraction(landmarksAt(20, 500, 200), 1000, 1000)! > 0.3);
  t.is(
    templateOutsideFraction(
      [
        [1, 1],
        [1, 1],
        [1, 1],
        [1, 1],
        [1, 1],
      ],
      100,
      100,
    ),
    null,
  );
  t.is(livenessInputProblem([300, 300, 700, 700], landmarksAt(500, 500, 400), 1000, 1000), null);
  t.is(livenessInputProblem([0, 300, 200, 700], landmarksAt(20, 500, 400), 1000, 1000), REASON_OUT_OF_FRAME);
  t.is(
    livenessInputProblem(
      [300, 300, 700, 700],
      [
        [NaN, 1],
        [2, 2],
        [3, 3],
        [4, 4],
        [5, 5],
      ],
      1000,
      1000,
    ),
    REASON_BAD_LANDMARKS,
  );
  t.is(
    livenessInputProblem(
      [300, 300, 700, 700],
      [
        [5, 5],
        [5, 5],
        [5, 5],
        [5, 5],
        [5, 5],
      ],
      1000,
      1000,
    ),
    REASON_BAD_LANDMARKS,
  );
});

test('cropToTensor: raw 0..255 planes in BGR order; a same-size crop copies pixels exactly', (t) => {
  const w = 4,
    h = 4;
  const rgb = new Uint8Array(w * h * 3);
  for (let i = 0; i < w * h; i++) rgb.set([i, 100 + i, 200 - i], i * 3);
  const out = cropToTensor(rgb, w, [1, 1, 2, 2], 2, 2, 'bgr');
  // Pixel (1,1) is index 5: B = 195, G = 105, R = 5.
  t.deepEqual(Array.from(out.subarray(0, 4)), [195, 194, 191, 190]);
  t.deepEqual(Array.from(out.subarray(4, 8)), [105, 106, 109, 110]);
  t.deepEqual(Array.from(out.subarray(8, 12)), [5, 6, 9, 10]);
});

test('softmax class probability, NaN for broken logits; the threshold is inclusive', (t) => {
  t.true(Math.abs(classProbability([0, Math.log(3), 0], 1) - 0.6) < 1e-12);
  t.true(Number.isNaN(classProbability([NaN, NaN, NaN], 1)));
  t.deepEqual(livenessVerdict([0.8, 0.8], 0.8), { status: 'ok', is_live: true, live_score: 0.8 });
  t.deepEqual(livenessVerdict([0.9, 0.1], 0.8), { status: 'ok', is_live: false, live_score: 0.5 });
});

test('withAddonEnabled keeps comments and values, handles inline and dotted tables, and is idempotent', (t) => {
  const plain =
    '# top\n[server]\nport = 8080 # the port\n\n[inference]\n# which addons\naddons = []\nliveness_mode = "observe"\n';
  const out = withAddonEnabled(plain, 'liveness');
  t.true(
    out.startsWith(
      '# top\n[server]\nport = 8080 # the port\n\n[inference]\n# which addons\naddons = ["liveness"]\nliveness_mode = "observe"\n',
    ),
  );
  t.regex(out, /\[addons\]\nauto_download = \[ ?"liveness" ?\]/);
  t.is(withAddonEnabled(out, 'liveness'), out);
  t.is(configTextProblem(out), null);

  const inline = 'inference = { addons = [], liveness_threshold = 0.7 }\n';
  const a = withAddonEnabled(inline, 'liveness');
  t.regex(a, /inference = \{ addons = \[ ?"liveness" ?\], liveness_threshold = 0\.7 \}/);
  t.is(configTextProblem(a), null);

  const dotted = 'inference.addons = []\ninference.liveness_threshold = 0.7\n';
  const b = withAddonEnabled(dotted, 'liveness');
  t.regex(b, /inference\.addons = \[ ?"liveness" ?\]\ninference\.liveness_threshold = 0\.7/);
  t.is(configTextProblem(b), null);

  t.regex(configTextProblem('[inference]\nbogus = 1\n')!, /bogus|Unrecognized/i);
});
