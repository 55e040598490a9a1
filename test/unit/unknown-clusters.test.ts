import test from 'ava';
import { clusteringScores, UnknownClusters } from '../../src/events/unknownClusters.js';

const unit = (...v: number[]) => {
  const n = Math.hypot(...v);
  return Float32Array.from(v.map((x) => x / n));
};

test('a visit joins the nearest cluster at or above the threshold, else starts its own', (t) => {
  const c = new UnknownClusters(0.5);
  t.deepEqual(c.assign(unit(1, 0, 0), 1, 'a'), { id: 'a', created: true, similarity: null });
  const near = c.assign(unit(1, 0.2, 0), 1, 'x');
  t.is(near.id, 'a');
  t.false(near.created);
  t.true(near.similarity! > 0.9);
  const far = c.assign(unit(0, 0, 1), 1, 'b');
  t.deepEqual([far.id, far.created], ['b', true]);
  t.is(c.size, 2);
  // Exactly at the threshold joins (inclusive, like the matching threshold).
  const at = new UnknownClusters(0.6);
  at.assign(Float32Array.of(1, 0), 1, 'a');
  t.is(at.assign(Float32Array.of(0.6, 0.8), 1, 'b').id, 'a');
});

test('the nearest of two clusters wins, the older one on a tie', (t) => {
  const c = new UnknownClusters(0.3);
  c.assign(unit(1, 0, 0), 1, 'old');
  c.assign(unit(0, 1, 0), 1, 'new');
  t.is(c.nearest(unit(0.2, 1, 0))!.id, 'new');
  t.is(c.nearest(unit(1, 1, 0))!.id, 'old', 'a tie goes to the older cluster');
  t.is(c.assign(unit(0.2, 1, 0), 1, 'z').id, 'new');
});

test('the centroid is the weighted mean direction; a withdrawn contribution leaves no trace', (t) => {
  const c = new UnknownClusters(0.1);
  c.assign(unit(1, 0), 3, 'a');
  c.contribute('a', unit(0, 1), 1);
  const m = c.centroid('a')!;
  t.true(Math.abs(m[0]! - 3 / Math.hypot(3, 1)) < 1e-6);
  c.contribute('a', unit(0, 1), 1, -1);
  t.true(Math.abs(c.centroid('a')![1]!) < 1e-6);
  t.is(c.get('a')!.weight, 3);
});

test('clusters whose centroids converge merge into the older one', (t) => {
  const c = new UnknownClusters(0.8);
  c.assign(unit(1, 0.5, 0), 1, 'first');
  c.assign(unit(1, -0.5, 0), 1, 'second'); // cos 0.6 with the first: apart
  t.is(c.size, 2);
  t.deepEqual(c.mergeConverged('second'), []);
  // A better visit of the second moves its centroid towards the first's.
  c.contribute('second', unit(1, 0.45, 0), 4);
  const merges = c.mergeConverged('second');
  t.is(merges.length, 1);
  t.like(merges[0], { into: 'first', from: 'second' });
  t.is(c.size, 1);
  t.true(c.has('first'));
  t.is(c.get('first')!.weight, 6);
});

test('loaded clusters keep their age order for merges and new ids', (t) => {
  const c = new UnknownClusters(0.9);
  c.load({ id: 'stored', sum: unit(1, 0), weight: 1, order: 41 });
  c.assign(unit(0, 1), 1, 'fresh');
  t.true(c.get('fresh')!.order > 41);
  c.contribute('fresh', unit(1, 0), 10);
  t.deepEqual(
    c.mergeConverged('fresh').map((m) => m.into),
    ['stored'],
  );
});

test('purity and completeness', (t) => {
  const items = [
    { label: 'ann', cluster: '1' },
    { label: 'ann', cluster: '1' },
    { label: 'ann', cluster: '2' },
    { label: 'bob', cluster: '2' },
  ];
  // Cluster 1: ann 2/2; cluster 2: ann 1, bob 1 (majority 1): purity 3/4. ann's largest cluster 2/3, bob 1/1: 3/4.
  t.deepEqual(clusteringScores(items), { purity: 0.75, completeness: 0.75, clusters: 2, labels: 2 });
  t.like(
    clusteringScores([
      { label: 'a', cluster: 'x' },
      { label: 'b', cluster: 'y' },
    ]),
    { purity: 1, completeness: 1 },
  );
  t.like(clusteringScores([]), { purity: 1, completeness: 1 });
});
