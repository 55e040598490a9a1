import test from 'ava';
import {
  boxArea,
  byAreaDesc,
  clipCandidate,
  iou,
  matchKnownBoxes,
  nms,
  selectSingleFace,
  type Candidate,
} from '../../src/inference/geometry.js';

const LM: [number, number][] = [
  [0, 0],
  [0, 0],
  [0, 0],
  [0, 0],
  [0, 0],
];
const cand = (box: [number, number, number, number], score = 0.9, tag?: string): Candidate & { tag?: string } => ({
  box,
  score,
  landmarks: LM,
  tag,
});

test('boxArea is width*height and zero for inverted boxes', (t) => {
  t.is(boxArea([10, 20, 30, 60]), 800);
  t.is(boxArea([30, 20, 10, 60]), 0);
});

test('iou: disjoint boxes give 0 (including touching edges)', (t) => {
  t.is(iou([0, 0, 10, 10], [20, 20, 30, 30]), 0);
  t.is(iou([0, 0, 10, 10], [10, 0, 20, 10]), 0);
});

test('iou: identical boxes give 1', (t) => {
  t.is(iou([3, 4, 13, 24], [3, 4, 13, 24]), 1);
});

test('iou: partial overlap matches hand computed value', (t) => {
  // A = [0,0,10,10] (100), B = [5,5,15,15] (100), inter = 25, union = 175
  t.true(Math.abs(iou([0, 0, 10, 10], [5, 5, 15, 15]) - 25 / 175) < 1e-12);
  // A = [0,0,4,2] (8), B = [2,0,6,4] (16), inter = 2*2 = 4, union = 20
  t.true(Math.abs(iou([0, 0, 4, 2], [2, 0, 6, 4]) - 0.2) < 1e-12);
  // symmetric
  t.is(iou([2, 0, 6, 4], [0, 0, 4, 2]), iou([0, 0, 4, 2], [2, 0, 6, 4]));
});

test('nms keeps the highest score and suppresses overlaps above the threshold', (t) => {
  const low = cand([0, 0, 10, 10], 0.6, 'low');
  const high = cand([1, 0, 11, 10], 0.95, 'high'); // iou with low = 90/110 ~ 0.818
  const far = cand([50, 50, 60, 60], 0.3, 'far');
  const kept = nms([low, far, high], 0.4);
  t.deepEqual(
    kept.map((c) => (c as { tag?: string }).tag),
    ['high', 'far'],
  );
});

test('nms keeps a candidate whose IoU equals the threshold exactly (<=)', (t) => {
  // iou([0,0,4,2],[2,0,6,4]) = 0.2 exactly
  const a = cand([0, 0, 4, 2], 0.9, 'a');
  const b = cand([2, 0, 6, 4], 0.8, 'b');
  t.is(nms([a, b], 0.2).length, 2);
  t.deepEqual(
    nms([a, b], 0.19).map((c) => (c as { tag?: string }).tag),
    ['a'],
  );
});

test('nms is global across candidates from different input sizes', (t) => {
  // Same face seen at two resolutions plus a second face; inputs arrive concatenated per source.
  const fromSmall = [cand([100, 100, 200, 200], 0.7, 'small-face1'), cand([400, 100, 480, 180], 0.8, 'small-face2')];
  const fromLarge = [cand([102, 98, 201, 203], 0.92, 'large-face1')];
  const kept = nms([...fromSmall, ...fromLarge], 0.4);
  t.deepEqual(
    kept.map((c) => (c as { tag?: string }).tag),
    ['large-face1', 'small-face2'],
  );
});

test('nms does not mutate the input array', (t) => {
  const input = [cand([0, 0, 10, 10], 0.1), cand([0, 0, 10, 10], 0.9)];
  const copy = [...input];
  nms(input, 0.5);
  t.deepEqual(input, copy);
});

test('clipCandidate clips the box to the image and the score to [0,1]', (t) => {
  const c = clipCandidate(cand([-5, -3, 120, 90], 1.3), 100, 80);
  t.deepEqual(c?.box, [0, 0, 100, 80]);
  t.is(c?.score, 1);
  t.is(clipCandidate(cand([10, 10, 20, 20], -0.2), 100, 80)?.score, 0);
  const inside = cand([10.5, 11.25, 40, 50], 0.5);
  t.deepEqual(clipCandidate(inside, 100, 80)?.box, [10.5, 11.25, 40, 50]);
});

test('clipCandidate drops boxes that become empty or thinner than a pixel', (t) => {
  t.is(clipCandidate(cand([110, 10, 150, 40]), 100, 80), null); // fully right of the image
  t.is(clipCandidate(cand([10, -40, 50, -1]), 100, 80), null); // fully above
  t.is(clipCandidate(cand([10, 10, 10.5, 40]), 100, 80), null); // 0.5 px wide
  t.not(clipCandidate(cand([10, 10, 11, 11]), 100, 80), null); // exactly 1 px kept
});

test('clipCandidate keeps extra fields and landmarks', (t) => {
  const c = { ...cand([1, 2, 30, 40], 0.5), extra: 42 };
  const out = clipCandidate(c, 100, 100);
  t.is(out?.extra, 42);
  t.is(out?.landmarks, LM);
});

test('byAreaDesc sorts by area descending, ties by higher score', (t) => {
  const a = cand([0, 0, 10, 10], 0.5, 'a'); // 100
  const b = cand([0, 0, 20, 20], 0.1, 'b'); // 400
  const c = cand([5, 5, 15, 15], 0.9, 'c'); // 100, higher score than a
  const sorted = [a, b, c].sort(byAreaDesc);
  t.deepEqual(
    sorted.map((x) => (x as { tag?: string }).tag),
    ['b', 'c', 'a'],
  );
});

test('selectSingleFace: empty -> null', (t) => {
  t.is(selectSingleFace([], 'largest', 100, 100), null);
  t.is(selectSingleFace([], 'center_largest', 100, 100), null);
});

test('selectSingleFace largest picks the biggest box regardless of score', (t) => {
  const small = cand([0, 0, 10, 10], 0.99, 'small');
  const big = cand([50, 50, 90, 90], 0.2, 'big');
  t.is((selectSingleFace([small, big], 'largest', 100, 100) as { tag?: string }).tag, 'big');
});

test('selectSingleFace center_largest prefers a slightly smaller centred face over a larger corner face', (t) => {
  const W = 400,
    H = 400;
  const corner = cand([0, 0, 60, 60], 0.9, 'corner'); // area 3600, centre (30,30), d2 = 170^2*2 = 57800 -> 3600 - 115600 < 0
  const centred = cand([175, 175, 225, 225], 0.9, 'centred'); // area 2500, at image centre -> 2500
  const faces = [corner, centred];
  t.is((selectSingleFace(faces, 'largest', W, H) as { tag?: string }).tag, 'corner');
  t.is((selectSingleFace(faces, 'center_largest', W, H) as { tag?: string }).tag, 'centred');
});

test('selectSingleFace center_largest uses area - 2*(dx^2+dy^2) exactly', (t) => {
  const W = 200,
    H = 200;
  // A: centred, area 40*40 = 1600 -> 1600.
  // B: area 50*50 = 2500, centre offset dx = 15, dy = 0 -> 2500 - 2*225 = 2050 > 1600 -> B wins.
  const A = cand([80, 80, 120, 120], 0.5, 'A');
  const B = cand([90, 75, 140, 125], 0.5, 'B');
  t.is((selectSingleFace([B, A], 'center_largest', W, H) as { tag?: string }).tag, 'B');
  // C: same area as B but dx = 25 -> 2500 - 1250 = 1250 < 1600 -> A wins.
  const C = cand([100, 75, 150, 125], 0.5, 'C');
  t.is((selectSingleFace([C, A], 'center_largest', W, H) as { tag?: string }).tag, 'A');
  // With factor 1 instead of 2 C would have scored 1875 > 1600, so this distinguishes the formula.
});

test('selectSingleFace exact tie -> first face in area order', (t) => {
  const first = cand([0, 0, 20, 20], 0.1, 'first');
  const second = cand([50, 50, 70, 70], 0.9, 'second');
  t.is((selectSingleFace([first, second], 'largest', 100, 100) as { tag?: string }).tag, 'first');
  // Mirror-symmetric about the centre: identical centre distance and area.
  const l = cand([10, 40, 30, 60], 0.1, 'l');
  const r = cand([70, 40, 90, 60], 0.9, 'r');
  t.is((selectSingleFace([l, r], 'center_largest', 100, 100) as { tag?: string }).tag, 'l');
  t.is((selectSingleFace([r, l], 'center_largest', 100, 100) as { tag?: string }).tag, 'r');
});

test('matchKnownBoxes: a face takes the known box it overlaps by at least minIou, one to one, best overlap first', (t) => {
  const known = [
    [100, 100, 200, 200],
    [400, 100, 500, 200],
  ];
  // Face 0 sits on known 0 (IoU 0.82), face 1 moved half its width off known 1 (IoU 1/3), face 2 is new.
  const faces = [
    [105, 105, 205, 205],
    [450, 100, 550, 200],
    [700, 700, 800, 800],
  ];
  t.deepEqual(matchKnownBoxes(faces, known, 0.5), [0, -1, -1]);
  t.deepEqual(matchKnownBoxes(faces, known, 0.3), [0, 1, -1]);
  // Two faces on one known box: only the better one takes it (the other is embedded as a new face).
  t.deepEqual(
    matchKnownBoxes(
      [
        [110, 110, 210, 210],
        [101, 101, 201, 201],
      ],
      [[100, 100, 200, 200]],
      0.5,
    ),
    [-1, 0],
  );
  // A face between two known boxes takes the one it overlaps most, and each known box serves one face.
  t.deepEqual(
    matchKnownBoxes(
      [
        [100, 100, 200, 200],
        [102, 100, 202, 200],
      ],
      [
        [101, 100, 201, 200],
        [100, 100, 200, 200],
      ],
      0.5,
    ),
    [1, 0],
  );
  t.deepEqual(matchKnownBoxes(faces, [], 0.5), [-1, -1, -1]);
  t.deepEqual(matchKnownBoxes([], known, 0.5), []);
});
