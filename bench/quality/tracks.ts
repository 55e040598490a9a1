/**
 * Track probes for the quality bench (issue 42): a camera sees a face for several frames, so a probe is a
 * sequence of frames of one fixture face, each made anew with its own variation (scale or approach, position,
 * a small head turn, its own noise, blur or JPEG quality), then scored per frame and per track.
 *
 * Every frame of a track comes from the same source photo. The protocol compares a probe with every gallery
 * face except its own source; frames from a second photo of the identity would take that photo out of the
 * gallery too, and most fixture identities have only two photos (nothing genuine would be left to find). What
 * makes the frames differ is what differs between the frames of one pass in front of a camera: distance, place
 * in the picture, head pose, sensor noise and compression.
 */
import { decideIdentity, poolTemplate, TrackFrameBank, type RankedPerson } from '../../src/monitors/trackIdentity.js';
import { clusteringScores, UnknownClusters } from '../../src/events/unknownClusters.js';
import {
  gaussianBlur,
  infraredGray,
  jpegRecompress,
  lowLight,
  scaleFace,
  seededRandom,
  smallFaceInFrame,
  yawCylinder,
  type Probe,
} from './degradations.js';
import { clopperPearson, dPrime, openSet, rocAuc, tarAtFar } from './metrics.js';

/** What the frame maker may draw from: a seeded random source per track, the frame index and the count. */
export interface FrameContext {
  index: number;
  frames: number;
  rnd: () => number;
  /** A seed of this frame's own (noise). */
  seed: number;
  /** +1 or -1 per track: the side the head is turned to in yaw_30. */
  side: number;
}

export interface TrackCondition {
  name: string;
  describe: string;
  frame(p: Probe, c: FrameContext): Promise<Probe>;
}

const uniform = (c: FrameContext, lo: number, hi: number) => lo + (hi - lo) * c.rnd();
/** A small head movement on every frame: the face is never held still. */
const smallTurn = (c: FrameContext) => uniform(c, -8, 8);
/** A face of ~112 px (x 0.92-1.08), turned by `yaw` degrees. */
const near = async (p: Probe, c: FrameContext, yaw = smallTurn(c)) =>
  yawCylinder(await scaleFace(p, 112 * uniform(c, 0.92, 1.08)), yaw);
/**
 * A person walking towards a 720p camera and across it: the face grows from 40 to 64 px over the track (+-2 px),
 * its centre moves from 35 % to 65 % of the width (+-10 px), with a small head turn.
 */
const approaching = async (p: Probe, c: FrameContext) => {
  const t = c.frames > 1 ? c.index / (c.frames - 1) : 0.5;
  const width = Math.round(40 + 24 * t + uniform(c, -2, 2));
  const centre = { x: 1280 * (0.35 + 0.3 * t) + uniform(c, -10, 10), y: 360 + uniform(c, -10, 10) };
  const turned = yawCylinder(await scaleFace(p, 112), smallTurn(c));
  return smallFaceInFrame(turned, width, { width: 1280, height: 720 }, 118, centre);
};

export const TRACK_CONDITIONS: TrackCondition[] = [
  {
    name: 'crop112',
    describe: 'face ~112 px (x0.92-1.08 per frame), head turned +-8 deg per frame',
    frame: (p, c) => near(p, c),
  },
  {
    name: 'small_40_64',
    describe: 'approaching: face 40 -> 64 px wide over the track, moving across a 1280x720 grey frame',
    frame: (p, c) => approaching(p, c),
  },
  {
    name: 'gaussian_blur',
    describe: 'Gaussian blur sigma 1.5-2.5 px per frame (~112-px face)',
    frame: async (p, c) => {
      const s = await near(p, c);
      return { image: await gaussianBlur(s.image, uniform(c, 1.5, 2.5)), box: s.box };
    },
  },
  {
    name: 'jpeg_q30',
    describe: 'JPEG quality 25-35 per frame, 4:2:0 (~112-px face)',
    frame: async (p, c) => {
      const s = await near(p, c);
      return { image: await jpegRecompress(s.image, Math.round(uniform(c, 25, 35))), box: s.box };
    },
  },
  {
    name: 'low_light',
    describe: 'exposure x0.2-0.3 + Gaussian noise sigma 5 levels, new noise every frame',
    frame: async (p, c) => {
      const s = await near(p, c);
      return { image: lowLight(s.image, { exposure: uniform(c, 0.2, 0.3), noiseSigma: 5, seed: c.seed }), box: s.box };
    },
  },
  {
    name: 'yaw_30',
    describe: 'head turned 20-40 deg to one side (per track) every frame, cylinder model',
    frame: (p, c) => near(p, c, c.side * uniform(c, 20, 40)),
  },
  {
    name: 'cctv_night',
    describe:
      'approaching (40 -> 64 px in 720p) + NIR grey, exposure x0.4-0.6 + noise sigma 5 (new every frame), JPEG q30 of the frame',
    frame: async (p, c) => {
      const s = await approaching(p, c);
      const dark = lowLight(infraredGray(s.image), { exposure: uniform(c, 0.4, 0.6), noiseSigma: 5, seed: c.seed });
      return { image: await jpegRecompress(dark, 30), box: s.box };
    },
  },
];

/** One frame through the pipeline: its embedding when the face was found (and embedded), and its quality score. */
export interface FrameResult {
  embedding: Float32Array | null;
  quality: number;
}

/** A track of one gallery sample: `sample` indexes the gallery. */
export interface TrackProbe {
  sample: number;
  visit: number;
  frames: FrameResult[];
}

export interface GalleryFace {
  label: string;
  embedding: Float32Array;
}

const dot = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return Math.min(1, Math.max(-1, s));
};

type Acquired = { embedding: Float32Array; quality: number };
const acquired = (frames: readonly FrameResult[]): Acquired[] =>
  frames.filter((f): f is Acquired => f.embedding !== null);

/**
 * How a track is compared with a gallery face: `prepare` gets the track's acquired frames (at least one) and
 * returns the scorer. Template methods pool once; `max` keeps every frame.
 */
export interface TrackMethod {
  name: string;
  describe: string;
  prepare(frames: Acquired[]): (g: Float32Array) => number;
}

const template = (t: Float32Array) => (g: Float32Array) => dot(t, g);
const byQuality = (frames: Acquired[]) => [...frames].sort((a, b) => b.quality - a.quality);

/** The track bank size the daemon uses by default ([monitors] track_frames). */
export const BANK = 5;

export const TRACK_METHODS: TrackMethod[] = [
  {
    name: 'quality_mean_bank',
    describe: `quality-weighted mean of the ${BANK} best frames by quality, renormalised (the daemon's method)`,
    prepare: (f) => template(poolTemplate(byQuality(f).slice(0, BANK))),
  },
  {
    name: 'quality_mean_all',
    describe: 'quality-weighted mean of every frame, renormalised',
    prepare: (f) => template(poolTemplate(f)),
  },
  {
    name: 'mean_all',
    describe: 'plain mean of every frame, renormalised',
    prepare: (f) => template(poolTemplate(f, () => 1)),
  },
  {
    name: 'max',
    describe: 'the best of the per-frame similarities',
    prepare: (f) => (g) => Math.max(...f.map((x) => dot(x.embedding, g))),
  },
  {
    name: 'best_quality_frame',
    describe: 'the one frame of highest quality',
    prepare: (f) => template(byQuality(f)[0]!.embedding),
  },
];

/** The per-frame method: each frame is a track of its own. */
export const frameProbes = (tracks: readonly TrackProbe[]): TrackProbe[] =>
  tracks.flatMap((t) => t.frames.map((f) => ({ sample: t.sample, visit: t.visit, frames: [f] })));
const singleFrame: TrackMethod = {
  name: 'per_frame',
  describe: 'every frame on its own',
  prepare: (f) => template(f[0]!.embedding),
};

export interface TrackScores {
  probes: number;
  fta: number;
  genuine: number[];
  impostor: number[];
  mated: { bestGenuine: number; bestImpostor: number }[];
  nonMatedBest: number[];
}

/**
 * Scores probes against the gallery like the per-image protocol: genuine pairs with every other gallery face of
 * the probe's identity, impostor pairs with the rest (never its own source photo). A probe with no acquired
 * frame is a failure to acquire: a -1 genuine score and no impostor pairs.
 */
export function scoreTracks(
  gallery: readonly GalleryFace[],
  probes: readonly TrackProbe[],
  m: TrackMethod,
): TrackScores {
  const labelCount = new Map<string, number>();
  for (const g of gallery) labelCount.set(g.label, (labelCount.get(g.label) ?? 0) + 1);
  const out: TrackScores = { probes: probes.length, fta: 0, genuine: [], impostor: [], mated: [], nonMatedBest: [] };
  for (const p of probes) {
    const label = gallery[p.sample]!.label;
    const frames = acquired(p.frames);
    const mated = labelCount.get(label)! > 1;
    if (frames.length === 0) {
      out.fta++;
      gallery.forEach((g, j) => {
        if (j !== p.sample && g.label === label) out.genuine.push(-1);
      });
      if (mated) out.mated.push({ bestGenuine: -1, bestImpostor: -1 });
      continue;
    }
    const score = m.prepare(frames);
    let bestGenuine = -Infinity,
      bestImpostor = -Infinity;
    gallery.forEach((g, j) => {
      if (j === p.sample) return;
      const s = score(g.embedding);
      if (g.label === label) {
        out.genuine.push(s);
        bestGenuine = Math.max(bestGenuine, s);
      } else {
        out.impostor.push(s);
        bestImpostor = Math.max(bestImpostor, s);
      }
    });
    if (mated) out.mated.push({ bestGenuine, bestImpostor });
    else out.nonMatedBest.push(bestImpostor);
  }
  return out;
}

/** The figures of one method on one condition (at `threshold`: the pack's default threshold). */
export function trackFigures(s: TrackScores, threshold: number) {
  return {
    probes: s.probes,
    fta: s.fta,
    genuine_pairs: s.genuine.length,
    impostor_pairs: s.impostor.length,
    roc_auc: rocAuc(s.genuine, s.impostor),
    // Separation of acquired genuine and impostor scores (a failure to acquire is not a score).
    d_prime: dPrime(
      s.genuine.filter((g) => g > -1),
      s.impostor,
    ),
    tar_at_far_1e2: tarAtFar(s.genuine, s.impostor, 1e-2),
    tar_at_far_1e3: tarAtFar(s.genuine, s.impostor, 1e-3),
    at_default_threshold: openSet(s.mated, s.nonMatedBest, threshold),
  };
}

export function perFrameScores(gallery: readonly GalleryFace[], tracks: readonly TrackProbe[]): TrackScores {
  return scoreTracks(gallery, frameProbes(tracks), singleFrame);
}

// ---- what the daemon would announce ----

/** The persons of the gallery as the service ranks them for a query: each by its best face, best first. */
function rankPersons(gallery: readonly GalleryFace[], own: number, q: Float32Array): RankedPerson[] {
  const best = new Map<string, number>();
  gallery.forEach((g, j) => {
    if (j === own) return;
    const s = dot(q, g.embedding);
    if (s > (best.get(g.label) ?? -Infinity)) best.set(g.label, s);
  });
  return [...best]
    .map(([personId, similarity]) => ({ personId, similarity }))
    .sort((a, b) => b.similarity - a.similarity);
}

/**
 * The persons the daemon would announce (person_enter) for one track, frame by frame in order: `frame` mode
 * identifies every frame alone (the threshold on its best person); `track` mode keeps the bank of the best
 * `bank` frames and re-decides on their pooled template with decideIdentity (hysteresis), as TrackFaces does.
 * A person is announced after `confirm` consecutive frames decided as them (the tracker's confirm_frames); a
 * frame without a face leaves the streak as it was (the tracker keeps an unseen track).
 */
export function announcedPersons(
  gallery: readonly GalleryFace[],
  t: TrackProbe,
  mode: 'frame' | 'track',
  o: { threshold: number; hysteresis: number; confirm: number; bank: number },
): string[] {
  const out: string[] = [];
  const bank = new TrackFrameBank<null>(o.bank);
  let decided: string | null | undefined;
  let streak = 0,
    streakOf: string | null | undefined;
  t.frames.forEach((f, i) => {
    if (!f.embedding) return;
    let now: string | null;
    if (mode === 'frame') {
      const top = rankPersons(gallery, t.sample, f.embedding)[0];
      now = top && top.similarity >= o.threshold ? top.personId : null;
    } else {
      const kept = bank.offer({ embedding: f.embedding, quality: f.quality, at: i });
      if (kept || decided === undefined)
        decided = decideIdentity(
          decided,
          rankPersons(gallery, t.sample, poolTemplate(bank.frames)),
          o.threshold,
          o.hysteresis,
        );
      now = decided ?? null;
    }
    streak = now === streakOf ? streak + 1 : 1;
    streakOf = now;
    if (now !== null && streak === o.confirm) out.push(now);
  });
  return out;
}

/**
 * Open-set identification as events: a mated track is identified when its own person is announced and
 * nobody else is; a stranger's track (no other gallery face of its identity) is a false positive when anyone
 * is announced. Tracks without any face are left out of both (they announce nothing).
 */
export function announcedFigures(
  gallery: readonly GalleryFace[],
  tracks: readonly TrackProbe[],
  mode: 'frame' | 'track',
  o: { threshold: number; hysteresis: number; confirm: number; bank: number },
) {
  const labelCount = new Map<string, number>();
  for (const g of gallery) labelCount.set(g.label, (labelCount.get(g.label) ?? 0) + 1);
  let mated = 0,
    identified = 0,
    wrong = 0,
    strangers = 0,
    falsePositives = 0;
  for (const t of tracks) {
    if (!t.frames.some((f) => f.embedding)) continue;
    const label = gallery[t.sample]!.label;
    const persons = announcedPersons(gallery, t, mode, o);
    if (labelCount.get(label)! > 1) {
      mated++;
      if (persons.some((p) => p !== label)) wrong++;
      else if (persons.includes(label)) identified++;
    } else {
      strangers++;
      if (persons.length) falsePositives++;
    }
  }
  return {
    mode,
    mated,
    dir: identified / mated,
    dir_ci95: clopperPearson(identified, mated),
    misidentified: wrong,
    strangers,
    fpir: falsePositives / strangers,
    fpir_ci95: clopperPearson(falsePositives, strangers),
  };
}

// ---- unknown visitors ----

/** Deterministic shuffle (Fisher-Yates on a seeded source). */
export function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const out = [...xs],
    rnd = seededRandom(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * Every track of a condition as one unknown visitor passing a camera, in a shuffled order, grouped the way the
 * daemon does it (UnknownClusters): at the enter the template of the first `confirmFrames` acquired frames is
 * assigned; at the exit that contribution is replaced by the template of the track's bank and converged clusters
 * merge. Returns purity and completeness against the true identities, tracks without any acquired frame left
 * out (no face, no visitor).
 */
export function clusterVisitors(
  gallery: readonly GalleryFace[],
  tracks: readonly TrackProbe[],
  o: { threshold: number; mergeThreshold?: number; confirmFrames: number; seed: number },
) {
  const clusters = new UnknownClusters(o.threshold, o.mergeThreshold ?? o.threshold);
  const assigned: { label: string; id: string }[] = [];
  let n = 0;
  for (const t of shuffled(tracks, o.seed)) {
    const frames = acquired(t.frames);
    if (!frames.length) continue;
    const enterFrames = frames.slice(0, o.confirmFrames);
    const enter = poolTemplate(enterFrames);
    const enterWeight = Math.max(...enterFrames.map((f) => f.quality));
    const bank = byQuality(frames).slice(0, BANK);
    const a = clusters.assign(enter, enterWeight, `u${n++}`);
    clusters.contribute(a.id, enter, enterWeight, -1);
    clusters.contribute(a.id, poolTemplate(bank), bank[0]!.quality);
    const entry = { label: gallery[t.sample]!.label, id: a.id };
    assigned.push(entry);
    for (const m of clusters.mergeConverged(a.id)) for (const x of assigned) if (x.id === m.from) x.id = m.into;
  }
  return clusteringScores(assigned.map((a) => ({ label: a.label, cluster: a.id })));
}
