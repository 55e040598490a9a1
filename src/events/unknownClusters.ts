/**
 * Incremental grouping of unknown visitors (issue 42): online agglomerative clustering with centroid
 * linkage. Each cluster keeps the weighted sum of the unit-length templates of its visits (one template
 * per track, see src/monitors/trackIdentity.ts); its centroid is that sum renormalised. A new visit joins the
 * cluster whose centroid is most similar, when that similarity reaches `threshold`, else it starts a
 * cluster of its own. When a visit moved a centroid, clusters whose centroids have come within
 * `mergeThreshold` of it are merged (the older one keeps its id), so two clusters of one person that the
 * first, poorer visits kept apart converge into one. Pure (no storage, no clock): the unknowns service
 * persists what it decides, and bench/quality.ts measures purity and completeness with this same code.
 */
import { cosineSimilarity } from '../inference/pipeline.js';

export interface ClusterState {
  id: string;
  /** Weighted sum of the member templates (each of unit length). */
  sum: Float32Array;
  weight: number;
  /** Lower = older; the older of two merged clusters keeps its id. */
  order: number;
}

export function normalised(v: Float32Array): Float32Array {
  let sq = 0;
  for (let i = 0; i < v.length; i++) sq += v[i]! * v[i]!;
  const n = Math.sqrt(sq);
  return n > 0 ? v.map((x) => x / n) : Float32Array.from(v);
}

export class UnknownClusters {
  private readonly clusters = new Map<string, ClusterState>();
  private nextOrder = 0;

  /** Both may change while it runs ([monitors] unknown_threshold): they apply from the next visit. */
  constructor(
    public threshold: number,
    public mergeThreshold: number = threshold,
  ) {}

  get size(): number {
    return this.clusters.size;
  }

  has(id: string): boolean {
    return this.clusters.has(id);
  }

  /** Loads a stored cluster (startup). */
  load(c: ClusterState): void {
    this.clusters.set(c.id, { ...c, sum: Float32Array.from(c.sum) });
    this.nextOrder = Math.max(this.nextOrder, c.order + 1);
  }

  get(id: string): ClusterState | undefined {
    return this.clusters.get(id);
  }

  centroid(id: string): Float32Array | null {
    const c = this.clusters.get(id);
    return c ? normalised(c.sum) : null;
  }

  /** The most similar cluster (ties: the older), with its similarity; null when there is none. */
  nearest(template: Float32Array, exclude?: string): { id: string; similarity: number } | null {
    let best: { id: string; similarity: number; order: number } | null = null;
    for (const c of this.clusters.values()) {
      if (c.id === exclude) continue;
      const s = cosineSimilarity(template, c.sum);
      if (!best || s > best.similarity || (s === best.similarity && c.order < best.order))
        best = { id: c.id, similarity: s, order: c.order };
    }
    return best && { id: best.id, similarity: best.similarity };
  }

  /**
   * Where a visit's template belongs: the nearest cluster at or above the threshold, else a new cluster
   * named `newId` (created with the template). The template is added to a joined cluster too.
   */
  assign(
    template: Float32Array,
    weight: number,
    newId: string,
  ): { id: string; created: boolean; similarity: number | null } {
    const near = this.nearest(template);
    if (near && near.similarity >= this.threshold) {
      this.contribute(near.id, template, weight);
      return { id: near.id, created: false, similarity: near.similarity };
    }
    this.clusters.set(newId, { id: newId, sum: template.map((v) => v * weight), weight, order: this.nextOrder++ });
    return { id: newId, created: true, similarity: near?.similarity ?? null };
  }

  /** Adds (sign 1) or withdraws (sign -1) a template's contribution to a cluster. */
  contribute(id: string, template: Float32Array, weight: number, sign: 1 | -1 = 1): void {
    const c = this.clusters.get(id);
    if (!c) return;
    for (let i = 0; i < c.sum.length; i++) c.sum[i]! += sign * weight * template[i]!;
    c.weight = Math.max(0, c.weight + sign * weight);
  }

  /**
   * The clusters to merge with `id` now: every other cluster whose centroid is within mergeThreshold of
   * id's, as [keep, absorbed] pairs (the older keeps its id). Repeats until nothing converges (a merge moves
   * the centroid again). Applies the merges and returns them in order.
   */
  mergeConverged(id: string): { into: string; from: string; similarity: number }[] {
    const merges: { into: string; from: string; similarity: number }[] = [];
    let current = id;
    for (;;) {
      const c = this.clusters.get(current);
      if (!c) return merges;
      let best: { other: ClusterState; s: number } | null = null;
      for (const o of this.clusters.values()) {
        if (o.id === current) continue;
        const s = cosineSimilarity(c.sum, o.sum);
        if (s >= this.mergeThreshold && (!best || s > best.s)) best = { other: o, s };
      }
      if (!best) return merges;
      const [into, from] = c.order <= best.other.order ? [c, best.other] : [best.other, c];
      this.merge(into.id, from.id);
      merges.push({ into: into.id, from: from.id, similarity: best.s });
      current = into.id;
    }
  }

  /** `from` joins `into` (sums and weights add); `from` is gone afterwards. */
  merge(into: string, from: string): void {
    const a = this.clusters.get(into),
      b = this.clusters.get(from);
    if (!a || !b || a === b) return;
    for (let i = 0; i < a.sum.length; i++) a.sum[i]! += b.sum[i]!;
    a.weight += b.weight;
    a.order = Math.min(a.order, b.order);
    this.clusters.delete(from);
  }

  remove(id: string): void {
    this.clusters.delete(id);
  }

  ids(): string[] {
    return [...this.clusters.keys()];
  }
}

/**
 * Purity and completeness of a clustering against true labels (both in 0..1): purity = the share of items
 * whose cluster's most common label is their own (1 = no cluster mixes people); completeness = the share of
 * items in the largest cluster of their label (1 = every person is one cluster), i.e. inverse purity.
 */
export function clusteringScores(items: readonly { label: string; cluster: string }[]): {
  purity: number;
  completeness: number;
  clusters: number;
  labels: number;
} {
  const byCluster = new Map<string, Map<string, number>>(),
    byLabel = new Map<string, Map<string, number>>();
  const bump = (m: Map<string, Map<string, number>>, k: string, v: string) => {
    const inner = m.get(k) ?? new Map<string, number>();
    inner.set(v, (inner.get(v) ?? 0) + 1);
    m.set(k, inner);
  };
  for (const it of items) {
    bump(byCluster, it.cluster, it.label);
    bump(byLabel, it.label, it.cluster);
  }
  const majority = (m: Map<string, Map<string, number>>) =>
    [...m.values()].reduce((a, inner) => a + Math.max(...inner.values()), 0);
  const n = items.length;
  return {
    purity: n ? majority(byCluster) / n : 1,
    completeness: n ? majority(byLabel) / n : 1,
    clusters: byCluster.size,
    labels: byLabel.size,
  };
}
