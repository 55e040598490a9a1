import test from 'ava';
import {
  faceDropReason,
  pointInPolygon,
  polygonArea,
  rasterizePolygons,
  ZoneTracker,
  type Polygon,
} from '../../src/monitors/zones.js';

const square: Polygon = [
  [0.2, 0.2],
  [0.6, 0.2],
  [0.6, 0.6],
  [0.2, 0.6],
];
// A U shape: its notch (0.45..0.55 wide, down to 0.5) is outside.
const u: Polygon = [
  [0.1, 0.1],
  [0.45, 0.1],
  [0.45, 0.5],
  [0.55, 0.5],
  [0.55, 0.1],
  [0.9, 0.1],
  [0.9, 0.9],
  [0.1, 0.9],
];

test('pointInPolygon: inside, outside, and a concave notch', (t) => {
  t.true(pointInPolygon(0.4, 0.4, square));
  t.false(pointInPolygon(0.7, 0.4, square));
  t.false(pointInPolygon(0.4, 0.1, square));
  t.true(pointInPolygon(0.2 + 1e-9, 0.5, square));
  t.true(pointInPolygon(0.3, 0.3, u));
  t.false(pointInPolygon(0.5, 0.3, u), 'in the notch');
  t.true(pointInPolygon(0.5, 0.7, u), 'below the notch');
});

test('polygonArea: shoelace, either winding; 0 for collinear points', (t) => {
  t.true(Math.abs(polygonArea(square) - 0.16) < 1e-12);
  t.true(Math.abs(polygonArea([...square].reverse()) - 0.16) < 1e-12);
  t.is(
    polygonArea([
      [0, 0],
      [0.5, 0.5],
      [1, 1],
    ]),
    0,
  );
});

test('rasterizePolygons marks the pixels whose centres are inside; none gives null', (t) => {
  t.is(rasterizePolygons([], 10, 10), null);
  const m = rasterizePolygons([square], 10, 10)!;
  // Centres 0.25..0.55 in both directions: pixels 2..5.
  const rows = Array.from({ length: 10 }, (_, y) => Array.from(m.subarray(y * 10, y * 10 + 10)).join(''));
  t.deepEqual(rows, [
    '0000000000',
    '0000000000',
    '0011110000',
    '0011110000',
    '0011110000',
    '0011110000',
    '0000000000',
    '0000000000',
    '0000000000',
    '0000000000',
  ]);
});

test('faceDropReason: the box centre in the face mask, or the short side below min_face_size', (t) => {
  t.is(faceDropReason([0.3, 0.3, 0.1, 0.1], 50, [square], 0), 'face_mask');
  // The box overlaps the mask but its centre is outside it: kept.
  t.is(faceDropReason([0.55, 0.3, 0.2, 0.1], 50, [square], 0), null);
  t.is(faceDropReason([0.7, 0.7, 0.1, 0.1], 39, [square], 40), 'min_face_size');
  t.is(faceDropReason([0.7, 0.7, 0.1, 0.1], 40, [square], 40), null);
  t.is(faceDropReason([0.7, 0.7, 0.1, 0.1], 1, [], 0), null);
});

test('ZoneTracker: a face enters and leaves a zone after its inertia, and remembers where it has been', (t) => {
  const z = new ZoneTracker([
    { name: 'door', polygon: square, inertia: 2 },
    { name: 'hall', polygon: u, inertia: 1 },
  ]);
  // Outside both.
  t.deepEqual(z.observe('t1', [0.95, 0.95]), { entered: [], left: [] });
  // Into both: hall (inertia 1) at once, door after a second frame.
  t.deepEqual(z.observe('t1', [0.3, 0.3]), { entered: ['hall'], left: [] });
  t.deepEqual(z.inside('t1'), ['hall']);
  t.deepEqual(z.observe('t1', [0.3, 0.3]), { entered: ['door'], left: [] });
  t.deepEqual(z.inside('t1'), ['door', 'hall']);
  // One frame outside the door does not leave it (inertia 2); back inside resets the count.
  t.deepEqual(z.observe('t1', [0.65, 0.3]), { entered: [], left: [] });
  t.deepEqual(z.observe('t1', [0.3, 0.3]), { entered: [], left: [] });
  t.deepEqual(z.observe('t1', [0.65, 0.3]), { entered: [], left: [] });
  t.deepEqual(z.observe('t1', [0.65, 0.3]), { entered: [], left: ['door'] });
  t.deepEqual(z.observe('t1', [0.95, 0.95]), { entered: [], left: ['hall'] });
  t.deepEqual(z.inside('t1'), []);
  t.deepEqual(z.visited('t1'), ['hall', 'door']);
  // Tracks are separate; dropped ones are forgotten.
  t.deepEqual(z.observe('t2', [0.3, 0.3]), { entered: ['hall'], left: [] });
  z.retain(new Set(['t2']));
  t.deepEqual(z.visited('t1'), []);
  z.drop('t2');
  t.deepEqual(z.inside('t2'), []);
});

test('ZoneTracker without zones does nothing', (t) => {
  const z = new ZoneTracker([]);
  t.deepEqual(z.observe('t1', [0.5, 0.5]), { entered: [], left: [] });
  t.deepEqual(z.visited('t1'), []);
});
