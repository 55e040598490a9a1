import test from 'ava';
import {
  announcedFigures,
  announcedPersons,
  clusterVisitors,
  perFrameScores,
  scoreTracks,
  shuffled,
  TRACK_METHODS,
  type GalleryFace,
  type TrackProbe,
} from '../../bench/quality/tracks.js';

const unit = (...v: number[]) => {
  const n = Math.hypot(...v);
  return Float32Array.from(v.map((x) => x / n));
};
/** Ann twice (she is findable), Bob once (a stranger to the gallery: only his own source photo). */
const gallery: GalleryFace[] = [
  { label: 'ann', embedding: unit(1, 0, 0, 0) },
  { label: 'ann', embedding: unit(1, 0.1, 0, 0) },
  { label: 'bob', embedding: unit(0, 1, 0, 0) },
];
/** Frames of Ann, each only 0.35 like her (below a 0.4 threshold) with noise in its own direction. */
const annFrames = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ embedding: unit(0.35, 0, i % 2 ? 0.93 : 0, i % 2 ? 0 : 0.93), quality: 0.8 }));
const bank = TRACK_METHODS.find((m) => m.name === 'quality_mean_bank')!;

test('scoring a track: pairs with every other gallery face, a track without a face is a miss', (t) => {
  const tracks: TrackProbe[] = [
    { sample: 0, visit: 0, frames: annFrames(4) },
    { sample: 2, visit: 0, frames: [{ embedding: null, quality: 0 }] },
  ];
  const s = scoreTracks(gallery, tracks, bank);
  t.is(s.fta, 1);
  t.is(s.genuine.length, 1, "Ann's track against her other photo; Bob has no other photo");
  t.is(s.impostor.length, 1, "Ann's track against Bob");
  t.deepEqual(s.nonMatedBest, [], 'a stranger without a face has no best score');
  t.true(s.genuine[0]! > 0.4, `pooled ${s.genuine[0]}`);
  const frames = perFrameScores(gallery, tracks);
  t.is(frames.probes, 5);
  t.true(
    frames.genuine.every((g) => g < 0.4),
    'each frame alone is below the threshold',
  );
});

test('announced persons: confirm_frames equal decisions, per frame or with the track bank', (t) => {
  const track: TrackProbe = { sample: 0, visit: 0, frames: annFrames(6) };
  const o = { threshold: 0.4, hysteresis: 0.03, confirm: 3, bank: 5 };
  t.deepEqual(announcedPersons(gallery, track, 'frame', o), []);
  t.deepEqual(announcedPersons(gallery, track, 'track', o), ['ann']);
  const clear = {
    sample: 0,
    visit: 0,
    frames: [1, 2, 3].map(() => ({ embedding: unit(1, 0.05, 0, 0), quality: 0.9 })),
  };
  t.deepEqual(announcedPersons(gallery, clear, 'frame', o), ['ann']);
  t.deepEqual(announcedPersons(gallery, { ...clear, frames: clear.frames.slice(0, 2) }, 'frame', o), [], 'two frames');
  const figures = announcedFigures(gallery, [track, { sample: 2, visit: 0, frames: annFrames(3) }], 'track', o);
  t.like(figures, { mated: 1, dir: 1, strangers: 1, fpir: 0, misidentified: 0 });
});

test('visitors are grouped by person; the order is shuffled the same way every time', (t) => {
  const tracks: TrackProbe[] = [0, 1, 2, 0, 2].map((sample, i) => ({
    sample,
    visit: i,
    frames: [{ embedding: gallery[sample]!.embedding, quality: 0.9 }],
  }));
  t.like(clusterVisitors(gallery, tracks, { threshold: 0.5, confirmFrames: 3, seed: 1 }), {
    purity: 1,
    completeness: 1,
    clusters: 2,
  });
  t.like(clusterVisitors(gallery, tracks, { threshold: -1, confirmFrames: 3, seed: 1 }), { clusters: 1 });
  t.deepEqual(shuffled([1, 2, 3, 4, 5], 7), shuffled([1, 2, 3, 4, 5], 7));
  t.deepEqual([...shuffled([1, 2, 3, 4, 5], 7)].sort(), [1, 2, 3, 4, 5]);
});
