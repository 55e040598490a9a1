/**
 * Recognition quality bench: every labelled face in ../shared/fixtures/faces, through the daemon's own
 * pipeline (InferenceEngine → FacePipeline: decode, multi-size detection, alignment, recognizer), per
 * model pack, on clean photos and on camera-grade degraded probes.
 *
 * Protocol
 * - Gallery: every labelled face of the original photos (identity photos: the selected face; group
 *   photos: every face, named left to right from labels.json; faces of people in no gallery are
 *   identities of their own and only ever impostors).
 * - clean: all unordered pairs of gallery faces.
 * - crop112 and the degradations: each face is cut with one box of context on every side, scaled so the
 *   face is 112 px wide (crop112), then degraded; the probe goes through the full pipeline again (a
 *   face the detector misses is a failure to acquire, FTA, and counts as a miss) and is compared with
 *   every clean gallery face except its own source: ordered pairs.
 * - Genuine = same identity. TAR at FAR: threshold just above the (k+1)-th highest impostor score,
 *   k = floor(FAR x impostors); TAR with a Clopper-Pearson 95 % interval over the genuine pairs. FAR
 *   targets below 3/impostors are not measurable (rule of three) and are marked as such. Pairs share
 *   photos, so they are not independent: the intervals are optimistic.
 * - Rank-1: each probe whose identity has another gallery face; its best gallery face must be its own.
 *
 * Usage: npx tsx bench/quality.ts [--packs edge_s,edge_open,buffalo_s,buffalo_l] [--models-dir DIR]
 *        [--variants baseline,det640,det960,det1280] [--conditions clean,crop112,...]
 * Prints tables, writes bench/results/quality.json.
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Writable } from 'node:stream';
import { ARCFACE_TEMPLATE_112, alignmentError } from '../src/inference/alignment.js';
import { InferenceEngine, resolveThreading } from '../src/inference/engine.js';
import { decodeImage } from '../src/inference/image.js';
import { iou } from '../src/inference/geometry.js';
import type { AnalyzedFace, AnalyzeRequest, DetectionProfile } from '../src/inference/pipeline.js';
import { getPack, loadCatalog, packFileNames } from '../src/models/catalog.js';
import { inspectPack, loadInstalledPack } from '../src/models/installed.js';
import { installPack } from '../src/models/installer.js';
import {
  contextCrop,
  seededRandom,
  gaussianBlur,
  infraredGray,
  jpegRecompress,
  lowLight,
  motionBlur,
  scaleFace,
  smallFaceInFrame,
  yawCylinder,
  type Probe,
  type RawImage,
} from './quality/degradations.js';
import {
  dPrime,
  histogram,
  minImpostorsFor,
  openSet,
  operatingPoint,
  rank1,
  rocAuc,
  summarize,
  tarAtFar,
  type OperatingPoint,
} from './quality/metrics.js';
import { fileTempDir } from '../test/helpers/tempDir.js';
import {
  announcedFigures,
  BANK,
  clusterVisitors,
  perFrameScores,
  scoreTracks,
  trackFigures,
  TRACK_CONDITIONS,
  TRACK_METHODS,
  type FrameResult,
  type GalleryFace,
  type TrackProbe,
} from './quality/tracks.js';

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const SHARED = process.env.VIGIL_SHARED_DIR ?? resolve(REPO, '../shared');
const FACES = join(SHARED, 'fixtures/faces');
const MIRROR = join(SHARED, 'models');
const LIMITS = { maxBytes: 1e9, maxPixels: 4e7 };
const FARS = [1e-2, 1e-3];
/**
 * The FAR the per-pack recommended threshold is read at (manifest recommended_threshold): the lowest
 * target the pooled impostor pairs can support (3/FAR <= ~17,000 pairs). The default threshold feeds
 * 1:N search and monitors, where a stranger is compared with every enrolled face, so the per-comparison
 * FAR has to be far below 1/gallery size; 1e-3 let 13 % of strangers match someone in a 45-face gallery.
 */
const CALIBRATION_FAR = 2e-4;
const UPSTREAM_THRESHOLD = 0.4;

const { values } = parseArgs({
  options: {
    packs: { type: 'string', default: 'edge_s,edge_open,buffalo_s,buffalo_l' },
    'models-dir': { type: 'string' },
    variants: { type: 'string', default: 'baseline' },
    conditions: { type: 'string' },
    out: { type: 'string', default: join(REPO, 'bench/results/quality.json') },
    /** Rounds of the interleaved latency A/B of the variants (0 = skip). */
    latency: { type: 'string', default: '0' },
    /** Track probes (issue 42): conditions, comma-separated, or none. */
    tracks: { type: 'string', default: TRACK_CONDITIONS.map((c) => c.name).join(',') },
    'track-frames': { type: 'string', default: '8' },
    /** Tracks per gallery face and condition (each a visit of that person in the unknown-visitor grouping). */
    'track-visits': { type: 'string', default: '2' },
    /** A file that keeps every track frame's result between runs (for iterating on the scoring only). */
    'probe-cache': { type: 'string' },
  },
});

// ---------------------------------------------------------------------------------------------------
// Conditions: how a probe is made from a gallery face.

interface Condition {
  name: string;
  describe: string;
  make?: (p: Probe, i: number) => Promise<Probe>;
}

const SMALL_WIDTHS = [40, 48, 56, 64];
const base = (p: Probe) => scaleFace(p, 112);
const keepBox =
  (f: (img: RawImage) => Promise<RawImage> | RawImage) =>
  async (p: Probe): Promise<Probe> => {
    const s = await base(p);
    return { image: await f(s.image), box: s.box };
  };

const CONDITIONS: Condition[] = [
  { name: 'clean', describe: 'original photos, all pairs' },
  { name: 'crop112', describe: 'face cut with 1 box of context, scaled to 112 px wide', make: (p) => base(p) },
  {
    name: 'small_40_64',
    describe: 'face 40/48/56/64 px wide (cycled) centred in a 1280x720 grey frame',
    make: (p, i) => smallFaceInFrame(p, SMALL_WIDTHS[i % SMALL_WIDTHS.length]!),
  },
  {
    name: 'gaussian_blur',
    describe: 'Gaussian blur sigma 2 px (112-px face)',
    make: keepBox((img) => gaussianBlur(img, 2)),
  },
  {
    name: 'motion_blur',
    describe: 'horizontal motion blur, 9 px box kernel (112-px face)',
    make: keepBox((img) => motionBlur(img, 9)),
  },
  {
    name: 'jpeg_q30',
    describe: 'JPEG quality 30, 4:2:0 (112-px face)',
    make: keepBox((img) => jpegRecompress(img, 30)),
  },
  {
    name: 'low_light',
    describe: 'exposure x0.25 + Gaussian noise sigma 5 levels',
    make: async (p, i) => {
      const s = await base(p);
      return { image: lowLight(s.image, { exposure: 0.25, noiseSigma: 5, seed: 1000 + i }), box: s.box };
    },
  },
  {
    name: 'yaw_30',
    describe: 'head turned 30 deg (cylinder model), sign alternating per probe',
    make: async (p, i) => yawCylinder(await base(p), i % 2 ? -30 : 30),
  },
  { name: 'ir_gray', describe: 'NIR-like grey (0.7R + 0.25G + 0.05B)', make: keepBox((img) => infraredGray(img)) },
  {
    name: 'cctv_night',
    describe: 'all at once: 40-64 px face in 720p, NIR grey, exposure x0.5 + noise sigma 5, JPEG q30 of the frame',
    make: async (p, i) => {
      const s = await smallFaceInFrame(p, SMALL_WIDTHS[i % SMALL_WIDTHS.length]!);
      return {
        image: await jpegRecompress(
          lowLight(infraredGray(s.image), { exposure: 0.5, noiseSigma: 5, seed: 2000 + i }),
          30,
        ),
        box: s.box,
      };
    },
  },
];

// ---------------------------------------------------------------------------------------------------
// Variants (issue item 3): what the pipeline does differently. Horizontal-flip test-time augmentation
// was measured as a variant at commit 9ce0c1c (mean of the embeddings of the aligned face and its
// mirror) and removed: no gain on any condition for +10 ms per face (docs/development/decisions.md, "Recognition").

interface Variant {
  name: string;
  describe: string;
  profile: (p: DetectionProfile) => DetectionProfile;
}
const SYSTEM_PROFILE: DetectionProfile = {
  input_sizes: [
    [96, 96],
    [512, 512],
  ],
  threshold: 0.5,
  nms_threshold: 0.4,
  single_face_selection: 'largest',
};
const VARIANTS: Record<string, Variant> = {
  baseline: {
    name: 'baseline',
    describe: 'daemon defaults: detector 96 + 512, one embedding per face',
    profile: (p) => p,
  },
  det640: {
    name: 'det640',
    describe: 'detector 96 + 640',
    profile: (p) => ({
      ...p,
      input_sizes: [
        [96, 96],
        [640, 640],
      ],
    }),
  },
  det960: {
    name: 'det960',
    describe: 'detector 96 + 960',
    profile: (p) => ({
      ...p,
      input_sizes: [
        [96, 96],
        [960, 960],
      ],
    }),
  },
  det1280: {
    name: 'det1280',
    describe: 'detector 96 + 1280',
    profile: (p) => ({
      ...p,
      input_sizes: [
        [96, 96],
        [1280, 1280],
      ],
    }),
  },
};

// ---------------------------------------------------------------------------------------------------

interface Labels {
  identities: Record<string, string[]>;
  groups: Record<string, { faces: number; left_to_right: string[]; in_gallery?: boolean }>;
}

interface Sample {
  id: string;
  file: string;
  label: string;
  face: AnalyzedFace & { embedding: Float32Array };
  image: RawImage;
}

interface ProbeResult {
  embedding: Float32Array | null;
  face: AnalyzedFace | null;
  ms: number;
}

const dot = (a: Float32Array, b: Float32Array) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return Math.min(1, Math.max(-1, s));
};
const quiet = new Writable({ write: (_c, _e, cb) => cb() });

async function ensurePack(
  packId: string,
  modelsDir: string | undefined,
): Promise<{ dir: string } | { missing: string }> {
  const catalog = await loadCatalog();
  if (modelsDir) {
    const state = await inspectPack(catalog, modelsDir, packId);
    if (state.status === 'installed') return { dir: modelsDir };
  }
  const files = packFileNames(getPack(catalog, packId));
  const absent = files.filter((f) => !existsSync(join(MIRROR, f)));
  if (absent.length) {
    return {
      missing: `${absent.join(', ')} not in the mirror ${MIRROR}${modelsDir ? ` and not installed in ${modelsDir}` : ''}; install it where the network allows (vigil models install ${packId} --accept-license --models-dir DIR) and pass --models-dir DIR`,
    };
  }
  const dir = fileTempDir('vigil-quality-models-');
  await installPack({
    packId,
    modelsDir: dir,
    mirror: MIRROR,
    acceptLicense: true,
    io: { stdout: quiet as never, stderr: quiet as never },
  });
  return { dir };
}

function analyze(
  engine: InferenceEngine,
  image: AnalyzeRequest['image'],
  variant: Variant,
): Promise<import('../src/inference/pipeline.js').AnalyzeResult> {
  return engine.analyze({
    image,
    limits: LIMITS,
    profile: variant.profile(SYSTEM_PROFILE),
    maxFaces: 100,
    embed: 'all',
  });
}

/** The gallery: every labelled face of the original photos, through the daemon's decode and pipeline. */
async function gallery(engine: InferenceEngine, labels: Labels, variant: Variant): Promise<Sample[]> {
  const samples: Sample[] = [];
  const withEmbedding = (f: AnalyzedFace | undefined): f is AnalyzedFace & { embedding: Float32Array } =>
    !!f?.embedding;
  for (const [identity, files] of Object.entries(labels.identities)) {
    for (const file of files) {
      const bytes = readFileSync(join(FACES, file));
      const decoded = await decodeImage(bytes, LIMITS);
      const r = await analyze(engine, { encoded: bytes }, variant);
      const face = r.faces[r.selected];
      if (!withEmbedding(face)) {
        console.error(`  ! ${file}: no face found, left out`);
        continue;
      }
      samples.push({
        id: file,
        file,
        label: identity,
        face,
        image: { data: decoded.data, width: decoded.width, height: decoded.height },
      });
    }
  }
  for (const [file, group] of Object.entries(labels.groups)) {
    const bytes = readFileSync(join(FACES, file));
    const decoded = await decodeImage(bytes, LIMITS);
    const r = await analyze(engine, { encoded: bytes }, variant);
    const faces = [...r.faces].sort((a, b) => a.box[0] - b.box[0]);
    if (faces.length !== group.faces) {
      console.error(`  ! ${file}: ${faces.length} faces found, labels say ${group.faces}; photo left out`);
      continue;
    }
    faces.forEach((face, i) => {
      const name = group.left_to_right[i]!;
      // Known people keep their gallery identity; everyone else is a distinct identity of their own.
      const label = name in labels.identities ? name : `${file}#${name}`;
      if (withEmbedding(face))
        samples.push({
          id: `${file}#${i}`,
          file,
          label,
          face,
          image: { data: decoded.data, width: decoded.width, height: decoded.height },
        });
    });
  }
  return samples;
}

/** A degraded probe through the pipeline; the face is the detection that overlaps where the face was put. */
async function probe(engine: InferenceEngine, p: Probe, variant: Variant): Promise<ProbeResult> {
  const t = performance.now();
  const r = await analyze(engine, { raw: p.image.data, width: p.image.width, height: p.image.height }, variant);
  const ms = performance.now() - t;
  let best: AnalyzedFace | null = null,
    bestIou = 0.3;
  for (const f of r.faces) {
    const o = iou(f.box, p.box);
    if (o >= bestIou) {
      best = f;
      bestIou = o;
    }
  }
  return { embedding: best?.embedding ?? null, face: best, ms };
}

interface ConditionResult {
  condition: string;
  describe: string;
  probes: number;
  fta: number;
  genuine: number[];
  impostor: number[];
  rank1: { correct: number; total: number };
  /** Non-mated probes (identity with no other gallery face): best gallery score each. */
  nonMatedBest: number[];
  /** Per probe, for the gating analyses. */
  perProbe: {
    sample: string;
    label: string;
    mated: boolean;
    bestGenuine: number | null;
    bestImpostor: number;
    quality: number | null;
    alignment: number | null;
    yaw: number | null;
  }[];
  ms: number[];
}

/** Whether a probe face is used at all; a refused probe counts like a face the detector missed. */
type ProbeGate = (face: AnalyzedFace) => boolean;
const acceptAll: ProbeGate = () => true;

function scoreCondition(
  name: string,
  describe: string,
  samples: Sample[],
  probes: ProbeResult[] | null,
  gate: ProbeGate = acceptAll,
): ConditionResult {
  const genuine: number[] = [],
    impostor: number[] = [];
  const labelCount = new Map<string, number>();
  for (const s of samples) labelCount.set(s.label, (labelCount.get(s.label) ?? 0) + 1);
  const rows: number[][] = [];
  const perProbe: ConditionResult['perProbe'] = [];
  const nonMatedBest: number[] = [];
  let fta = 0;
  samples.forEach((s, i) => {
    const pr = probes?.[i];
    const probeFace = probes ? (pr?.face ?? null) : s.face;
    const emb = probeFace && gate(probeFace) ? (probes ? (pr?.embedding ?? null) : s.face.embedding) : null;
    if (!emb) fta++;
    // In the clean condition both sides are probes of each other, so the gate applies to both.
    const comparable = (g: Sample) => emb !== null && (probes !== null || gate(g.face));
    const row = samples.map((g, j) => (j === i ? NaN : comparable(g) ? dot(emb!, g.face.embedding) : -1));
    samples.forEach((g, j) => {
      if (j === i || (!probes && j < i)) return; // clean: unordered pairs once
      // A probe the detector missed is a rejected genuine attempt; it cannot falsely accept anyone, so
      // its impostor pairs are left out (FAR is over acquired probes, TAR over all attempts).
      if (g.label === s.label) genuine.push(row[j]!);
      else if (comparable(g)) impostor.push(row[j]!);
    });
    const mated = labelCount.get(s.label)! > 1;
    const bestOf = (same: boolean) =>
      Math.max(...row.filter((v, j) => j !== i && (samples[j]!.label === s.label) === same));
    const face = probeFace;
    perProbe.push({
      sample: s.id,
      label: s.label,
      mated,
      bestGenuine: mated ? bestOf(true) : null,
      bestImpostor: bestOf(false),
      quality: face?.quality.score ?? null,
      alignment: face ? alignmentError(face.landmarks) : null,
      yaw: face?.pose.yaw ?? null,
    });
    const ranked = row.map((v, j) => (j !== i && comparable(samples[j]!) ? v : NaN));
    if (mated) rows.push(ranked);
    else if (emb) nonMatedBest.push(Math.max(...ranked.filter((v) => Number.isFinite(v))));
  });
  const mated = samples.filter((s) => labelCount.get(s.label)! > 1);
  const r1 = rank1(
    rows,
    mated.map((s) => s.label),
    samples.map((s) => s.label),
  );
  return {
    condition: name,
    describe,
    probes: samples.length,
    fta,
    genuine,
    impostor,
    rank1: r1,
    nonMatedBest,
    perProbe,
    ms: probes ? probes.map((p) => p.ms) : [],
  };
}

// ---------------------------------------------------------------------------------------------------
// Item 3 analyses on the same probes: gates (alignment, quality) and person templates.

interface ScoredCondition {
  cond: Condition;
  probes: ProbeResult[] | null;
}

const GATES: { name: string; gate: ProbeGate }[] = [
  ...[5, 6, 7, 8].map((max) => ({
    name: `alignment_error <= ${max}`,
    gate: (f: AnalyzedFace) => alignmentError(f.landmarks) <= max,
  })),
  ...[0.6, 0.7].map((min) => ({ name: `quality.score >= ${min}`, gate: (f: AnalyzedFace) => f.quality.score >= min })),
];

function gateAnalysis(samples: Sample[], scored: ScoredCondition[]) {
  return [{ name: 'none', gate: acceptAll }, ...GATES].map(({ name, gate }) => {
    const results = scored.map(({ cond, probes }) => scoreCondition(cond.name, cond.describe, samples, probes, gate));
    const pooled = tarAtFar(
      results.flatMap((r) => r.genuine),
      results.flatMap((r) => r.impostor),
      CALIBRATION_FAR,
    );
    return {
      gate: name,
      pooled_at_calibration_far: pooled,
      conditions: results.map((r) => ({
        condition: r.condition,
        fta: r.fta,
        tar_at_far_1e2: tarAtFar(r.genuine, r.impostor, 1e-2),
        rank1: r.rank1,
      })),
    };
  });
}

type TemplateStrategy = { name: string; score: (probe: Float32Array, faces: Sample[]) => number };
const byQuality = (faces: Sample[]) => [...faces].sort((a, b) => b.face.quality.score - a.face.quality.score);
const meanTemplate = (faces: Sample[]) => {
  const sum = new Float32Array(faces[0]!.face.embedding.length);
  for (const f of faces) for (let k = 0; k < sum.length; k++) sum[k]! += f.face.embedding[k]!;
  const n = Math.hypot(...sum);
  return sum.map((v) => v / n);
};
const TEMPLATES: TemplateStrategy[] = [
  {
    name: 'best face sample (service today)',
    score: (p, faces) => Math.max(...faces.map((f) => dot(p, f.face.embedding))),
  },
  { name: 'best of the 1 highest-quality sample', score: (p, faces) => dot(p, byQuality(faces)[0]!.face.embedding) },
  {
    name: 'best of the 2 highest-quality samples',
    score: (p, faces) =>
      Math.max(
        ...byQuality(faces)
          .slice(0, 2)
          .map((f) => dot(p, f.face.embedding)),
      ),
  },
  { name: 'mean of all samples', score: (p, faces) => dot(p, meanTemplate(faces)) },
];

/**
 * Person-level verification and identification: every person of the gallery is a template built from
 * their faces (the probe's own source photo left out), scored by each strategy.
 */
function templateAnalysis(samples: Sample[], scored: ScoredCondition[]) {
  const people = new Map<string, Sample[]>();
  for (const s of samples) people.set(s.label, [...(people.get(s.label) ?? []), s]);
  return TEMPLATES.map((t) => {
    const genuine: number[] = [],
      impostor: number[] = [];
    let correct = 0,
      total = 0;
    for (const { probes } of scored) {
      samples.forEach((s, i) => {
        const emb = probes ? (probes[i]?.embedding ?? null) : s.face.embedding;
        const own = people.get(s.label)!.filter((g) => g !== s);
        if (own.length === 0) return; // nobody to find: not a mated probe
        total++;
        if (!emb) {
          genuine.push(-1);
          return;
        }
        let best = -Infinity,
          bestLabel = '';
        for (const [label, faces] of people) {
          const gallery = label === s.label ? own : faces;
          const score = t.score(emb, gallery);
          (label === s.label ? genuine : impostor).push(score);
          if (score > best) {
            best = score;
            bestLabel = label;
          }
        }
        if (bestLabel === s.label) correct++;
      });
    }
    return {
      template: t.name,
      genuine: genuine.length,
      impostor: impostor.length,
      roc_auc: rocAuc(genuine, impostor),
      tar_at_far: FARS.map((far) => tarAtFar(genuine, impostor, far)),
      rank1: { correct, total },
    };
  });
}

function metricsOf(c: ConditionResult, recommended: number) {
  return {
    condition: c.condition,
    describe: c.describe,
    probes: c.probes,
    fta: c.fta,
    genuine_pairs: c.genuine.length,
    impostor_pairs: c.impostor.length,
    roc_auc: rocAuc(c.genuine, c.impostor),
    d_prime: dPrime(c.genuine, c.impostor),
    tar_at_far: FARS.map((far) => tarAtFar(c.genuine, c.impostor, far)),
    at_upstream_0_4: operatingPoint(c.genuine, c.impostor, UPSTREAM_THRESHOLD),
    at_recommended: operatingPoint(c.genuine, c.impostor, recommended),
    rank1: c.rank1,
    genuine_scores: summarize(c.genuine),
    impostor_scores: summarize(c.impostor),
    genuine_histogram: histogram(c.genuine, -0.2, 1, 24),
    impostor_histogram: histogram(c.impostor, -0.2, 1, 24),
    probe_ms: c.ms.length ? summarize(c.ms) : null,
  };
}

const pct = (v: number) => (Number.isFinite(v) ? `${(100 * v).toFixed(1)}` : '–');
function fmtPoint(p: OperatingPoint): string {
  const note = p.supported ? '' : '*';
  return `${pct(p.tar)} [${pct(p.tar_ci95.low)}–${pct(p.tar_ci95.high)}] @${p.threshold.toFixed(3)}${note}`;
}

async function runPack(packId: string, variantNames: string[], conditionNames: string[] | null) {
  const installed = await ensurePack(packId, values['models-dir']);
  if ('missing' in installed) {
    console.log(`\n## ${packId}: not installed — ${installed.missing}`);
    return { pack: packId, installed: false, reason: installed.missing };
  }
  const pack = await loadInstalledPack(installed.dir, packId);
  const catalog = await loadCatalog();
  const engine = await startEngine(installed.dir, packId);
  const labels = JSON.parse(readFileSync(join(FACES, 'labels.json'), 'utf8')) as Labels;
  const variants = [];
  try {
    for (const vn of variantNames) {
      const variant = VARIANTS[vn];
      if (!variant) throw new Error(`unknown variant ${vn} (known: ${Object.keys(VARIANTS).join(', ')})`);
      const samples = await gallery(engine, labels, variant);
      const identities = new Set(samples.map((s) => s.label)).size;
      console.log(
        `\n## ${packId} / ${variant.name} (${variant.describe}): ${samples.length} faces of ${identities} identities`,
      );
      const scored: ScoredCondition[] = [];
      for (const cond of CONDITIONS) {
        if (conditionNames && !conditionNames.includes(cond.name)) continue;
        let probes: ProbeResult[] | null = null;
        if (cond.make) {
          probes = [];
          for (const [i, s] of samples.entries())
            probes.push(await probe(engine, await cond.make(contextCrop(s.image, s.face.box, 1), i), variant));
        }
        scored.push({ cond, probes });
      }
      const results = scored.map(({ cond, probes }) => scoreCondition(cond.name, cond.describe, samples, probes));
      // The calibration: every pair of every condition pooled, so the threshold holds on photos and on
      // camera-grade probes alike, and the impostor count (~17k) can support FAR 1e-3 (3/FAR = 3000).
      const pooledImp = results.flatMap((r) => r.impostor),
        pooledGen = results.flatMap((r) => r.genuine);
      const calibration = tarAtFar(pooledGen, pooledImp, CALIBRATION_FAR);
      // The manifest value: the calibrated threshold rounded up to 0.01 (never below the measured one).
      const recommended = Math.ceil(calibration.threshold * 100 - 1e-9) / 100;
      const metrics = results.map((r) => metricsOf(r, recommended));
      printTable(metrics, recommended);
      const declared = getPack(catalog, packId).recommended_threshold?.similarity ?? null;
      const pooledAt = (thr: number) => operatingPoint(pooledGen, pooledImp, thr);
      // Open set over every condition: the gallery holds 45 faces; people nobody enrolled are non-mated.
      const matedProbes = results.flatMap((r) =>
        r.perProbe.filter((p) => p.mated).map((p) => ({ bestGenuine: p.bestGenuine!, bestImpostor: p.bestImpostor })),
      );
      const nonMated = results.flatMap((r) => r.nonMatedBest);
      const identificationAt = (thr: number) => openSet(matedProbes, nonMated, thr);
      console.log(
        `  pooled over conditions: ${pooledGen.length} genuine / ${pooledImp.length} impostor pairs (FAR ${CALIBRATION_FAR} needs >= ${minImpostorsFor(CALIBRATION_FAR)}): threshold ${calibration.threshold.toFixed(4)}, TAR ${pct(calibration.tar)} %, FAR ${calibration.false_accepts}/${calibration.impostors}`,
      );
      const note = !calibration.supported
        ? ' — too few impostor pairs for this FAR (run every condition)'
        : declared !== null && declared !== recommended
          ? ' — DIFFERS, update models/manifest.json'
          : '';
      console.log(`  recommended_threshold ${recommended.toFixed(2)} (manifest: ${declared ?? 'none'})${note}`);
      const at1e3 = tarAtFar(pooledGen, pooledImp, 1e-3).threshold;
      const points = [...new Set([recommended, UPSTREAM_THRESHOLD, Math.ceil(at1e3 * 100 - 1e-9) / 100])].sort();
      for (const thr of points) {
        const op = pooledAt(thr),
          id = identificationAt(thr);
        console.log(
          `    at ${thr.toFixed(2)}: verification TAR ${pct(op.tar)} % [${pct(op.tar_ci95.low)}–${pct(op.tar_ci95.high)}], FAR ${op.false_accepts}/${op.impostors} = ${op.far.toExponential(1)} (95 % upper ${op.far_upper95.toExponential(1)}); ` +
            `search DIR ${pct(id.dir)} % (${id.mated} probes), FPIR ${pct(id.fpir)} % [${pct(id.fpir_ci95.low)}–${pct(id.fpir_ci95.high)}] (${id.non_mated} strangers)`,
        );
      }
      const gates = gateAnalysis(samples, scored);
      console.log(
        `  gates on probe faces (a refused probe is a miss): FTA total, pooled TAR @ FAR ${CALIBRATION_FAR} [95 % CI] @thr, cctv_night TAR @ FAR 1e-2`,
      );
      for (const g of gates) {
        const night = g.conditions.find((c) => c.condition === 'cctv_night');
        console.log(
          `    ${g.gate.padEnd(24)} FTA ${String(g.conditions.reduce((a, c) => a + c.fta, 0)).padStart(3)}  ${fmtPoint(g.pooled_at_calibration_far)}  ${night ? fmtPoint(night.tar_at_far_1e2) : ''}`,
        );
      }
      const tracks = await trackAnalysis(
        engine,
        samples,
        variant,
        declared ?? recommended,
        `${packId}/${variant.name}`,
      );
      const templates = templateAnalysis(samples, scored);
      console.log('  person templates over all conditions: TAR @ FAR 1e-2 | TAR @ FAR 1e-3 | rank-1 (persons)');
      for (const t of templates)
        console.log(
          `    ${t.template.padEnd(40)} ${fmtPoint(t.tar_at_far[0]!)} | ${fmtPoint(t.tar_at_far[1]!)} | ${t.rank1.correct}/${t.rank1.total}`,
        );
      variants.push({
        variant: variant.name,
        describe: variant.describe,
        faces: samples.length,
        identities,
        conditions: metrics,
        calibration,
        recommended_threshold: recommended,
        manifest_threshold: declared,
        operating_points: points.map((thr) => ({
          threshold: thr,
          verification: pooledAt(thr),
          identification: identificationAt(thr),
        })),
        gates,
        templates,
        tracks,
        raw: results.map((r) => ({ condition: r.condition, perProbe: r.perProbe, nonMatedBest: r.nonMatedBest })),
      });
    }
    const rounds = Number(values.latency);
    const latency =
      rounds > 0 && variantNames.length > 1
        ? await latencyAB(
            variantNames.map((v) => ({ name: v, engine, variant: VARIANTS[v]! })),
            rounds,
          )
        : null;
    return {
      pack: packId,
      installed: true,
      detector: pack.detector.file,
      recognizer: pack.recognizer.file,
      license: pack.license.id,
      variants,
      latency,
    };
  } finally {
    await engine.close();
  }
}

// ---------------------------------------------------------------------------------------------------
// Track probes (issue 42): sequences of frames per gallery face, scored per frame and per track, and the
// unknown-visitor grouping measured on them.

/** Clustering thresholds swept for the unknown-visitor grouping; the daemon's default is marked. */
const CLUSTER_THRESHOLDS = [0.35, 0.4, 0.45, 0.5, 0.55, 0.6];
/** Frames that confirm a track in the daemon (event_policy.confirm_frames default): the enter's template. */
const CONFIRM_FRAMES = 3;
/** [monitors] track_hysteresis default. */
const HYSTERESIS = 0.03;

const cacheKey = (...parts: (string | number)[]) => parts.join('|');
function loadProbeCache(file: string | undefined): Map<string, FrameResult> {
  const out = new Map<string, FrameResult>();
  if (!file || !existsSync(file)) return out;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const [k, e, q] = JSON.parse(line) as [string, string | null, number];
    out.set(k, {
      embedding: e === null ? null : new Float32Array(new Uint8Array(Buffer.from(e, 'base64')).buffer),
      quality: q,
    });
  }
  return out;
}
function saveProbeCache(file: string | undefined, cache: Map<string, FrameResult>): void {
  if (!file) return;
  const lines = [...cache].map(([k, r]) =>
    JSON.stringify([
      k,
      r.embedding
        ? Buffer.from(r.embedding.buffer, r.embedding.byteOffset, r.embedding.byteLength).toString('base64')
        : null,
      r.quality,
    ]),
  );
  writeFileSync(file, lines.join('\n') + '\n');
}

async function trackAnalysis(
  engine: InferenceEngine,
  samples: Sample[],
  variant: Variant,
  threshold: number,
  tag: string,
) {
  const names = values.tracks === 'none' ? [] : values.tracks!.split(',').filter(Boolean);
  if (!names.length) return null;
  const frames = Number(values['track-frames']),
    visits = Number(values['track-visits']);
  const cache = loadProbeCache(values['probe-cache']);
  const gallery: GalleryFace[] = samples.map((s) => ({ label: s.label, embedding: s.face.embedding }));
  const conditions = [];
  console.log(
    `  track probes: ${visits} track(s) of ${frames} frames per face and condition; TAR @ FAR 1e-2 [95 % CI] @thr; at the default threshold ${threshold.toFixed(2)}: DIR (mated) and FPIR (strangers) [95 % CI]`,
  );
  for (const [ci, cond] of TRACK_CONDITIONS.entries()) {
    if (!names.includes(cond.name)) continue;
    const probes: TrackProbe[] = [];
    for (const [i, s] of samples.entries()) {
      const clean = contextCrop(s.image, s.face.box, 1);
      for (let v = 0; v < visits; v++) {
        const rnd = seededRandom(7919 * (ci + 1) + 104_729 * v + 31 * i);
        const side = rnd() < 0.5 ? -1 : 1;
        const results: FrameResult[] = [];
        for (let f = 0; f < frames; f++) {
          const key = cacheKey(tag, cond.name, s.id, v, f, frames);
          // The frame is made even when cached: its draws from rnd keep the later frames the same.
          const p = await cond.frame(clean, { index: f, frames, rnd, seed: 3000 + 1_000_003 * v + 1009 * i + f, side });
          let r = cache.get(key);
          if (!r) {
            const pr = await probe(engine, p, variant);
            r = { embedding: pr.embedding, quality: pr.face?.quality.score ?? 0 };
            cache.set(key, r);
          }
          results.push(r);
        }
        probes.push({ sample: i, visit: v, frames: results });
      }
    }
    const perFrame = trackFigures(perFrameScores(gallery, probes), threshold);
    const methods = TRACK_METHODS.map((m) => ({
      method: m.name,
      describe: m.describe,
      ...trackFigures(scoreTracks(gallery, probes, m), threshold),
    }));
    const decisions = { threshold, hysteresis: HYSTERESIS, confirm: CONFIRM_FRAMES, bank: BANK };
    const announced = (['frame', 'track'] as const).map((mode) => announcedFigures(gallery, probes, mode, decisions));
    const clustering = CLUSTER_THRESHOLDS.map((t) => ({
      threshold: t,
      ...clusterVisitors(gallery, probes, { threshold: t, confirmFrames: CONFIRM_FRAMES, seed: 42 }),
    }));
    conditions.push({
      condition: cond.name,
      describe: cond.describe,
      per_frame: perFrame,
      per_track: methods,
      announced,
      clustering,
    });
    const line = (name: string, f: ReturnType<typeof trackFigures>) => {
      const o = f.at_default_threshold;
      console.log(
        `    ${cond.name.padEnd(14)} ${name.padEnd(20)} FTA ${String(f.fta).padStart(3)}/${String(f.probes).padEnd(4)} AUC ${f.roc_auc.toFixed(4)}  d' ${f.d_prime.toFixed(2)}  ${fmtPoint(f.tar_at_far_1e2)}  DIR ${pct(o.dir)}  FPIR ${pct(o.fpir)} [${pct(o.fpir_ci95.low)}–${pct(o.fpir_ci95.high)}] (${o.non_mated})`,
      );
    };
    line('per_frame', perFrame);
    for (const m of methods) line(m.method, m);
    for (const a of announced)
      console.log(
        `    ${cond.name.padEnd(14)} announced, ${a.mode === 'frame' ? 'per frame' : 'track identity'}: DIR ${pct(a.dir)} [${pct(a.dir_ci95.low)}–${pct(a.dir_ci95.high)}] of ${a.mated} (${a.misidentified} misidentified), FPIR ${pct(a.fpir)} [${pct(a.fpir_ci95.low)}–${pct(a.fpir_ci95.high)}] of ${a.strangers} stranger tracks`,
      );
    console.log(
      `    ${cond.name.padEnd(14)} unknown visitors (purity / completeness / clusters of ${clustering[0]!.labels} people): ${clustering.map((c) => `@${c.threshold} ${c.purity.toFixed(3)}/${c.completeness.toFixed(3)}/${c.clusters}`).join('  ')}`,
    );
  }
  saveProbeCache(values['probe-cache'], cache);
  return {
    frames,
    visits,
    bank: BANK,
    confirm_frames: CONFIRM_FRAMES,
    hysteresis: HYSTERESIS,
    default_threshold: threshold,
    conditions,
  };
}

interface Contender {
  name: string;
  engine: InferenceEngine;
  variant: Variant;
}

/**
 * Detection + every embedding, contenders (variants of one pack, or packs) interleaved request by
 * request, so a busy shared machine slows each alike: a 720p camera frame with one 48-px face, and the
 * 1280x886 six-face group photo.
 */
async function latencyAB(contenders: Contender[], rounds: number) {
  const obama = readFileSync(join(FACES, 'identities/obama/1.jpg'));
  const decoded = await decodeImage(obama, LIMITS);
  const first = await analyze(contenders[0]!.engine, { encoded: obama }, VARIANTS.baseline!);
  const frame = await smallFaceInFrame(
    contextCrop(
      { data: decoded.data, width: decoded.width, height: decoded.height },
      first.faces[first.selected]!.box,
      1,
    ),
    48,
  );
  const group = readFileSync(join(FACES, 'groups/t1_friends.jpg'));
  const inputs = {
    frame_720p_48px_face: { raw: frame.image.data, width: frame.image.width, height: frame.image.height },
    group_1280x886_6_faces: { encoded: group },
  } as const;
  const times: Record<string, Record<string, number[]>> = {};
  for (let r = -3; r < rounds; r++) {
    for (const [name, image] of Object.entries(inputs)) {
      for (const c of contenders) {
        const t = performance.now();
        await analyze(c.engine, image, c.variant);
        if (r >= 0) ((times[name] ??= {})[c.name] ??= []).push(performance.now() - t);
      }
    }
  }
  const out = Object.fromEntries(
    Object.entries(times).map(([input, byName]) => [
      input,
      Object.fromEntries(Object.entries(byName).map(([n, xs]) => [n, summarize(xs)])),
    ]),
  );
  console.log(
    `  latency, detection + embeddings, p50 over ${rounds} interleaved rounds (load ${loadavg()[0]!.toFixed(2)}):`,
  );
  for (const [input, byName] of Object.entries(out))
    console.log(
      `    ${input}: ${Object.entries(byName)
        .map(([n, st]) => `${n} ${st.p50.toFixed(1)} ms`)
        .join(', ')}`,
    );
  return out;
}

async function startEngine(dir: string, packId: string): Promise<InferenceEngine> {
  const pack = await loadInstalledPack(dir, packId);
  return InferenceEngine.start({
    pack,
    providers: ['cpu'],
    deviceId: 0,
    workers: 1,
    intraOpThreads: resolveThreading('auto', 'auto').intraOpThreads,
    graphOptimization: 'auto',
    warmupSizes: SYSTEM_PROFILE.input_sizes,
  });
}

/** Every installed pack at the daemon defaults, interleaved: the speed column of the pack guidance. */
async function packLatency(packIds: string[], rounds: number) {
  const engines: Contender[] = [];
  try {
    for (const id of packIds) {
      const installed = await ensurePack(id, values['models-dir']);
      if ('dir' in installed)
        engines.push({ name: id, engine: await startEngine(installed.dir, id), variant: VARIANTS.baseline! });
    }
    if (engines.length < 2) return null;
    console.log(`\n## packs side by side`);
    return await latencyAB(engines, rounds);
  } finally {
    await Promise.all(engines.map((e) => e.engine.close()));
  }
}

function printTable(rows: ReturnType<typeof metricsOf>[], recommended: number): void {
  const rec = recommended.toFixed(2);
  console.log(
    `| condition | probes | FTA | gen / imp pairs | ROC AUC | TAR @ FAR 1e-2 [95 % CI] @thr | TAR @ FAR 1e-3 [95 % CI] @thr | rank-1 | TAR / FA @ ${rec} | TAR / FA @ 0.4 | genuine mean / p05 | impostor p95 / max | ms / probe |`,
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const m of rows) {
    const u = m.at_upstream_0_4,
      r = m.at_recommended;
    console.log(
      `| ${m.condition} | ${m.probes} | ${m.fta} | ${m.genuine_pairs} / ${m.impostor_pairs} | ${m.roc_auc.toFixed(4)} | ${fmtPoint(m.tar_at_far[0]!)} | ${fmtPoint(m.tar_at_far[1]!)} | ${m.rank1.correct}/${m.rank1.total} | ${pct(r.tar)} / ${r.false_accepts} | ${pct(u.tar)} / ${u.false_accepts} | ${m.genuine_scores.mean.toFixed(3)} / ${m.genuine_scores.p05.toFixed(3)} | ${m.impostor_scores.p95.toFixed(3)} / ${m.impostor_scores.max.toFixed(3)} | ${m.probe_ms ? m.probe_ms.p50.toFixed(0) : '–'} |`,
    );
  }
  console.log('  * fewer impostor pairs than 3/FAR: FAR not measurable, threshold = just above the highest impostor');
}

const started = new Date();
const load = loadavg();
console.log(`quality bench: ${cpus().length} cores, load ${load.map((l) => l.toFixed(2)).join(' ')}`);
const packs = [];
const packIds = values.packs!.split(',').filter(Boolean);
for (const p of packIds)
  packs.push(await runPack(p, values.variants!.split(','), values.conditions ? values.conditions.split(',') : null));
const packSpeed = Number(values.latency) > 0 ? await packLatency(packIds, Number(values.latency)) : null;
const result = {
  started_at: started.toISOString(),
  host: { cores: cpus().length, loadavg_start: load, loadavg_end: loadavg() },
  protocol: {
    fixtures: FACES,
    fars: FARS,
    calibration_far: CALIBRATION_FAR,
    interval:
      'Clopper-Pearson 95 % (exact binomial) on TAR over genuine pairs; FAR upper bound likewise over impostor pairs',
    template: ARCFACE_TEMPLATE_112.length,
    conditions: CONDITIONS.map((c) => ({ name: c.name, describe: c.describe })),
  },
  packs,
  pack_latency: packSpeed,
};
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(values.out!, JSON.stringify(result, null, 1));
console.log(`\nwrote ${values.out}`);
