/**
 * Track-level identity (issue 42): a track keeps a small bank of its best frames by quality, and its identity
 * is decided on one template pooled from their embeddings instead of on each frame alone, the way template
 * (IJB-C style) evaluation judges several images of a person at once.
 *
 * Pooling: the quality-weighted mean of the L2-normalised embeddings, renormalised. Noise that differs from
 * frame to frame (sensor noise, JPEG blocks, blur, small pose changes) partly cancels in the sum while the
 * identity's direction adds up, so the template lies closer to the person's clean embedding than most of its
 * frames; weighting by the pipeline's quality score lets a sharp frontal frame count more than a blurred
 * one. bench/quality.ts compares it with the plain mean and with the best of the per-frame similarities (max)
 * on track probes; see docs/performance.md, "Track-level identity".
 */

/** One frame kept in a track's bank: its embedding (unit length), quality score (0..1) and an opaque crop. */
export interface BankFrame<C> {
  embedding: Float32Array;
  quality: number;
  at: number;
  crop: C | null;
}

/**
 * The best `capacity` frames of a track by quality (ties: the newer frame wins, so a still face refreshes).
 * A frame worse than every kept one once the bank is full is not kept (and its crop is never made).
 */
export class TrackFrameBank<C> {
  private kept: BankFrame<C>[] = [];
  /** Frames offered, kept or not. */
  seen = 0;

  constructor(readonly capacity: number) {
    if (!(capacity >= 1)) throw new Error('a frame bank holds at least one frame');
  }

  /** Whether a frame of this quality would be kept now. */
  wouldKeep(quality: number): boolean {
    return this.kept.length < this.capacity || quality >= this.kept[this.kept.length - 1]!.quality;
  }

  /** Offers a frame; `crop` is only called when it is kept. True when it was kept. */
  offer(f: Omit<BankFrame<C>, 'crop'>, crop: () => C | null = () => null): boolean {
    this.seen++;
    if (!this.wouldKeep(f.quality)) return false;
    const frame = { ...f, crop: crop() };
    const at = this.kept.findIndex((k) => f.quality >= k.quality);
    if (at < 0) this.kept.push(frame);
    else this.kept.splice(at, 0, frame);
    if (this.kept.length > this.capacity) this.kept.pop();
    return true;
  }

  /** Best quality first. */
  get frames(): readonly BankFrame<C>[] {
    return this.kept;
  }

  get bestQuality(): number {
    return this.kept[0]?.quality ?? 0;
  }
}

/**
 * A frame's weight in the template: its quality score, floored so a frame the quality measure rates 0 still
 * counts a little (the score mixes detector confidence, sharpness, exposure, size and pose; a dark IR frame
 * can score low yet carry the identity).
 */
export const qualityWeight = (quality: number): number => Math.max(0.05, Number.isFinite(quality) ? quality : 0);

/**
 * The template of a set of frames: sum of weight x embedding (each of unit length), renormalised to unit
 * length. `weight` defaults to qualityWeight; pass () => 1 for the plain mean. Throws on no frames.
 */
export function poolTemplate(
  frames: readonly { embedding: Float32Array; quality: number }[],
  weight: (quality: number) => number = qualityWeight,
): Float32Array {
  if (frames.length === 0) throw new Error('no frames to pool');
  const dim = frames[0]!.embedding.length;
  const sum = new Float64Array(dim);
  for (const f of frames) {
    if (f.embedding.length !== dim) throw new Error('embeddings of different dimensions');
    const w = weight(f.quality);
    for (let i = 0; i < dim; i++) sum[i]! += w * f.embedding[i]!;
  }
  let sq = 0;
  for (let i = 0; i < dim; i++) sq += sum[i]! * sum[i]!;
  const norm = Math.sqrt(sq);
  const out = new Float32Array(dim);
  // Opposite embeddings that cancel exactly leave no direction: the first frame stands in.
  if (!(norm > 1e-12)) return Float32Array.from(frames[0]!.embedding);
  for (let i = 0; i < dim; i++) out[i] = sum[i]! / norm;
  return out;
}

/** A person the template was compared with. */
export interface RankedPerson {
  personId: string;
  similarity: number;
}

/**
 * The track's identity after a new template (pure; `ranked` best first, any length): `current` undefined is
 * the first decision (the threshold alone); afterwards a change needs the evidence to clear it by
 * `hysteresis`, so a template that hovers at the threshold or between two persons does not flap:
 * - unknown -> person: the best similarity >= threshold + hysteresis;
 * - person P -> another person Q: Q >= threshold and Q >= P's similarity + hysteresis;
 * - person P -> unknown: P's similarity < threshold - hysteresis (P not among `ranked` counts as below it)
 *   and nobody else reaches the threshold.
 */
export function decideIdentity(
  current: string | null | undefined,
  ranked: readonly RankedPerson[],
  threshold: number,
  hysteresis: number,
): string | null {
  const top = ranked[0];
  if (current === undefined) return top && top.similarity >= threshold ? top.personId : null;
  if (current === null) return top && top.similarity >= threshold + hysteresis ? top.personId : null;
  const mine = ranked.find((r) => r.personId === current)?.similarity ?? -Infinity;
  if (top && top.personId !== current && top.similarity >= threshold && top.similarity >= mine + hysteresis)
    return top.personId;
  if (mine >= threshold - hysteresis) return current;
  return top && top.personId !== current && top.similarity >= threshold ? top.personId : null;
}

/** The runner-up margin of a decision: the decided person's similarity minus the best other person's. */
export function runnerUp(
  decided: string | null,
  ranked: readonly RankedPerson[],
): { runnerUp: RankedPerson | null; margin: number | null } {
  if (decided === null) return { runnerUp: ranked[0] ?? null, margin: null };
  const mine = ranked.find((r) => r.personId === decided);
  const other = ranked.find((r) => r.personId !== decided) ?? null;
  return {
    runnerUp: other,
    margin: mine && other ? Math.round((mine.similarity - other.similarity) * 1e6) / 1e6 : null,
  };
}
