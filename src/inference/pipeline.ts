import sharp from 'sharp';
import { ApiError, Errors } from '../contract/errors.js';
import type { DetectorSpec, RecognizerSpec } from '../models/catalog.js';
import { ARCFACE_TEMPLATE_112, estimateSimilarity, warpToTensor } from './alignment.js';
import { decodeScrfd, decodeYunet, detectorCanvas, type OutputArrays, type Placement } from './detectors.js';
import {
  byAreaDesc,
  clipCandidate,
  matchKnownBoxes,
  nms,
  selectSingleFace,
  type Candidate,
  type SingleFaceSelection,
} from './geometry.js';
import { decodeImage, type DecodeLimits } from './image.js';
import type { LivenessModel } from './livenessModel.js';
import {
  classProbability,
  contextCrop,
  cropToTensor,
  livenessInputProblem,
  livenessVerdict,
  passed,
  rejected,
  type LivenessResult,
} from './liveness.js';
import { boxStatistics, estimatePose, faceQuality, type FaceQuality, type Pose } from './quality.js';
import { ort } from './sessions.js';

export interface DetectionProfile {
  input_sizes: [number, number][];
  threshold: number;
  nms_threshold: number;
  single_face_selection: SingleFaceSelection;
}

/**
 * Packed RGB pixels that the engine copies straight into the buffer it hands a worker (a monitor frame
 * still in GStreamer's buffer): reading them as a Uint8Array first would make a Buffer that V8 counts as
 * new external memory for every frame. Workers always receive `raw`.
 */
export interface PixelSource {
  readonly byteLength: number;
  copyInto(target: Uint8Array): void;
}

export interface AnalyzeRequest {
  image:
    | { encoded: Uint8Array }
    | { raw: Uint8Array; width: number; height: number }
    | { pixels: PixelSource; width: number; height: number };
  /** Checked when the image is decoded here (an encoded image: the worker decodes small uploads itself). */
  limits: DecodeLimits;
  profile: DetectionProfile;
  maxFaces: number;
  /** none: detection only; selected: embed the single-face selection; all: embed every face. */
  embed: 'none' | 'selected' | 'all';
  /** Also return a JPEG of the selected face's box (registration with save_face_crops). */
  cropSelected?: { size: number; quality: number };
  /**
   * Liveness before recognition, on every face or only the selected one. In `normal` mode a face that is
   * not live gets no embedding (and the selection is never moved to another face); `observe` embeds anyway.
   */
  liveness?: { faces: 'all' | 'selected'; mode: 'normal' | 'observe'; threshold: number };
  /**
   * Boxes (pixels, x1, y1, x2, y2) of faces whose identity the caller already knows (a monitor's settled
   * tracks). A detected face that overlaps one by IoU >= `minIou` (one to one, see matchKnownBoxes) is not
   * embedded; `AnalyzedFace.known` names the box, and the caller carries the identity over.
   */
  known?: { boxes: [number, number, number, number][]; minIou: number };
  /**
   * Run each letterboxed detector size (margin 0: the image at the top left) only over the image, cut to
   * the next multiple of the largest stride (32), not over the letterbox fill below or beside it: a 16:9
   * frame at 512x512 runs at 512x288, 44 % less detector work. The anchor grid over the image is the same;
   * only faces touching the image's bottom or right edge can score slightly differently (what the model sees
   * past the edge is its own zero padding instead of the black fill). Monitors use it.
   */
  trimLetterbox?: boolean;
}

export interface AnalyzedFace extends Candidate {
  quality: FaceQuality;
  pose: Pose;
  embedding?: Float32Array;
  /** Present when liveness was evaluated for this face. */
  liveness?: LivenessResult;
  /** Index into `AnalyzeRequest.known.boxes` of the box this face was matched to (it was not embedded). */
  known?: number;
}

export interface AnalyzeResult {
  width: number;
  height: number;
  faces: AnalyzedFace[];
  /** Index into `faces` of the single-face selection, or -1. */
  selected: number;
  /** JPEG of the selected face's box resized to size x size, when asked for. */
  selectedCrop?: Uint8Array;
  timings: {
    decode_ms: number;
    detect_ms: number;
    detect_model_ms: number;
    liveness_ms: number;
    embed_ms: number;
    embed_model_ms: number;
  };
}

/** Loaded sessions of one model pack. Lives inside an inference worker thread. */
export interface PackSessions {
  detector: { spec: DetectorSpec; session: ort.InferenceSession };
  recognizer: { spec: RecognizerSpec; session: ort.InferenceSession };
  liveness?: LivenessModel[];
}

/** Fraction of a small detector canvas left as black context; see `placeInCanvas`. */
export const CLOSE_UP_MARGIN = 0.2;
/** Sizes at or below this side are the "close-up" sizes that get context padding. */
export const CLOSE_UP_MAX_SIDE = 160;

export class FacePipeline {
  /** Detector input tensors, reused: see TensorPool. */
  private readonly detectorInputs = new TensorPool();
  /** Aligned-face tensors, reused the same way (150 KB each at 112x112). */
  private readonly recognizerInputs = new TensorPool(4, 2);

  constructor(private readonly models: PackSessions) {}

  useLiveness(models: NonNullable<PackSessions['liveness']>): void {
    this.models.liveness = models;
  }

  /** Releases every session; liveness peers end their threads once idle. Used when the worker shuts down. */
  async close(): Promise<void> {
    await Promise.allSettled((this.models.liveness ?? []).map((m) => m.close()));
    await Promise.allSettled([this.models.detector.session.release(), this.models.recognizer.session.release()]);
  }

  async analyze(req: AnalyzeRequest): Promise<AnalyzeResult> {
    const t0 = performance.now();
    if ('pixels' in req.image)
      throw new Error('a pixel source is copied into raw pixels by the engine before it reaches a worker');
    const img =
      'encoded' in req.image
        ? await decodeImage(
            Buffer.from(req.image.encoded.buffer, req.image.encoded.byteOffset, req.image.encoded.byteLength),
            req.limits,
          )
        : { data: req.image.raw, width: req.image.width, height: req.image.height };
    const t1 = performance.now();
    const { faces: detected, modelMs: detectModelMs } = await this.detect(
      img.data,
      img.width,
      img.height,
      req.profile,
      req.trimLetterbox === true,
    );
    const faces = detected.slice(0, req.maxFaces).map((f) => this.describe(f, img.data, img.width, img.height));
    const t2 = performance.now();
    const selectedFace = selectSingleFace(faces, req.profile.single_face_selection, img.width, img.height);
    const selected = selectedFace ? faces.indexOf(selectedFace) : -1;
    if (req.known && req.known.boxes.length > 0) {
      matchKnownBoxes(
        faces.map((f) => f.box),
        req.known.boxes,
        req.known.minIou,
      ).forEach((k, i) => {
        if (k >= 0) faces[i]!.known = k;
      });
    }
    const live = req.liveness;
    if (live) {
      for (const f of live.faces === 'all' ? faces : selectedFace ? [selectedFace] : []) {
        f.liveness = await this.liveness(img.data, img.width, img.height, f, live.threshold);
      }
    }
    const t3 = performance.now();
    let embedModelMs = 0;
    let toEmbed = req.embed === 'all' ? faces : req.embed === 'selected' && selectedFace ? [selectedFace] : [];
    if (live?.mode === 'normal') toEmbed = toEmbed.filter((f) => !f.liveness || passed(f.liveness));
    toEmbed = toEmbed.filter((f) => f.known === undefined);
    for (const f of toEmbed) {
      try {
        const r = await this.embed(img.data, img.width, img.height, f.landmarks);
        f.embedding = r.embedding;
        embedModelMs += r.modelMs;
      } catch (e) {
        // Unusable landmarks after a liveness evaluation: the caller reports embedding_unavailable with the
        // liveness result. Anything else (a recognizer failure) still fails the request.
        if (!f.liveness || !(e instanceof ApiError && e.code === 'face_not_found')) throw e;
      }
    }
    const selectedCrop =
      req.cropSelected && selectedFace
        ? await boxCrop(img.data, img.width, img.height, selectedFace.box, req.cropSelected)
        : undefined;
    const t4 = performance.now();
    return {
      width: img.width,
      height: img.height,
      faces,
      selected,
      ...(selectedCrop ? { selectedCrop } : {}),
      timings: {
        decode_ms: t1 - t0,
        detect_ms: t2 - t1,
        detect_model_ms: detectModelMs,
        liveness_ms: t3 - t2,
        embed_ms: t4 - t3,
        embed_model_ms: embedModelMs,
      },
    };
  }

  /**
   * One face's liveness: the input gate first (no model runs for a rejected input), then every model of
   * the ensemble on its own context crop. Any model failure or unusable output is 503
   * liveness_unavailable: a broken model must never produce a verdict.
   */
  async liveness(
    rgb: Uint8Array,
    width: number,
    height: number,
    face: Candidate,
    threshold: number,
  ): Promise<LivenessResult> {
    const models = this.models.liveness;
    if (!models) throw livenessUnavailable('the liveness models are not loaded');
    const problem = livenessInputProblem(face.box, face.landmarks, width, height);
    if (problem) return rejected(problem);
    // Every crop first, then every model at once: a peer model runs on another core meanwhile.
    const inputs = models.map(({ spec }) => {
      const [w, h] = spec.input_size;
      return cropToTensor(
        rgb,
        width,
        contextCrop(face.box, width, height, spec.context_scale),
        w,
        h,
        spec.channel_order,
      );
    });
    const outputs = await Promise.allSettled(models.map((m, i) => m.run(inputs[i]!)));
    const probabilities = outputs.map((out, i) => {
      const { spec } = models[i]!;
      if (out.status === 'rejected') {
        const e: unknown = out.reason;
        throw livenessUnavailable(
          `${spec.file} failed to run: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`,
        );
      }
      const p = out.value.length > spec.live_class ? classProbability(out.value, spec.live_class) : NaN;
      if (!(p >= 0 && p <= 1)) throw livenessUnavailable(`${spec.file} returned an unusable output`);
      return p;
    });
    return livenessVerdict(probabilities, threshold);
  }

  /** Runs the detector at every profile size, then ONE global NMS over all candidates. */
  async detect(
    rgb: Uint8Array,
    width: number,
    height: number,
    profile: DetectionProfile,
    trimLetterbox = false,
  ): Promise<{ faces: Candidate[]; modelMs: number }> {
    const all: Candidate[] = [];
    let modelMs = 0;
    // Resizes for every size start together (libvips runs them on its own threads); models run in turn.
    const inputs = profile.input_sizes.map((size) => {
      const margin = Math.max(size[0], size[1]) <= CLOSE_UP_MAX_SIDE ? CLOSE_UP_MARGIN : 0;
      const { w, h, place } = detectorCanvas(width, height, size, margin, trimLetterbox);
      return { w, h, place, tensor: this.detectorInput(rgb, width, height, w, h, place) };
    });
    const session = this.models.detector.session;
    for (const { w, h, place, tensor } of inputs) {
      const input = await tensor;
      const t = performance.now();
      let out: ort.InferenceSession.ReturnType;
      try {
        out = await session.run({ [session.inputNames[0]!]: input });
      } finally {
        this.detectorInputs.give(input.data as Float32Array);
      }
      modelMs += performance.now() - t;
      const arrays: OutputArrays = session.outputNames.map((name) => ({ name, data: out[name]!.data as Float32Array }));
      const decode = this.models.detector.spec.kind === 'scrfd' ? decodeScrfd : decodeYunet;
      all.push(...decode(arrays, w, h, profile.threshold, place));
    }
    const kept = nms(all, profile.nms_threshold)
      .map((c) => clipCandidate(c, width, height))
      .filter(
        (c): c is Candidate =>
          c !== null &&
          c.landmarks.length === 5 &&
          c.landmarks.every((p) => Number.isFinite(p[0]) && Number.isFinite(p[1])),
      );
    return { faces: kept.sort(byAreaDesc), modelMs };
  }

  /** Resizes with libvips (one pass, antialiased) and writes the normalised planar tensor. */
  private async detectorInput(
    rgb: Uint8Array,
    width: number,
    height: number,
    w: number,
    h: number,
    place: Placement & { resizedW: number; resizedH: number },
  ): Promise<ort.Tensor> {
    const spec = this.models.detector.spec;
    const resized = await sharp(rgb, { raw: { width, height, channels: 3 } })
      .resize(place.resizedW, place.resizedH, { fit: 'fill', kernel: 'linear' })
      .raw()
      .toBuffer();
    const plane = w * h;
    const lut = normalisationTable(spec.mean, spec.std);
    const data = this.detectorInputs.take(3 * plane).fill(lut[0]!);
    const [c0, c1, c2] = spec.channel_order === 'rgb' ? [0, 1, 2] : [2, 1, 0];
    for (let y = 0; y < place.resizedH; y++) {
      let o = (y + place.padY) * w + place.padX;
      let p = y * place.resizedW * 3;
      for (let x = 0; x < place.resizedW; x++, p += 3, o++) {
        data[o] = lut[resized[p + c0!]!]!;
        data[o + plane] = lut[resized[p + c1!]!]!;
        data[o + 2 * plane] = lut[resized[p + c2!]!]!;
      }
    }
    return new ort.Tensor('float32', data, [1, 3, h, w]);
  }

  private describe(face: Candidate, rgb: Uint8Array, width: number, height: number): AnalyzedFace {
    const pose = estimatePose(face.landmarks);
    return { ...face, pose, quality: faceQuality(face, boxStatistics(rgb, width, height, face.box), pose) };
  }

  /** 5-point similarity alignment to the 112x112 ArcFace template, recognizer, L2 normalisation. */
  async embed(
    rgb: Uint8Array,
    width: number,
    height: number,
    landmarks: [number, number][],
  ): Promise<{ embedding: Float32Array; modelMs: number }> {
    const spec = this.models.recognizer.spec;
    const [outW, outH] = spec.input_size;
    const template = ARCFACE_TEMPLATE_112.map(([x, y]) => [(x * outW) / 112, (y * outH) / 112] as [number, number]);
    const m = estimateSimilarity(landmarks, template);
    if (!m) throw Errors.faceNotFound('degenerate_landmarks');
    const data = warpToTensor(
      rgb,
      width,
      height,
      m,
      outW,
      outH,
      { channelOrder: spec.channel_order, mean: spec.mean, std: spec.std },
      this.recognizerInputs.take(3 * outW * outH),
    );
    const session = this.models.recognizer.session;
    const t = performance.now();
    let out: ort.InferenceSession.OnnxValueMapType;
    try {
      out = await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', data, [1, 3, outH, outW]) });
    } finally {
      this.recognizerInputs.give(data);
    }
    const modelMs = performance.now() - t;
    const raw = out[session.outputNames[0]!]!.data as Float32Array;
    return { embedding: l2Normalize(raw, spec.embedding_dimension), modelMs };
  }
}

const livenessUnavailable = (cause: string): ApiError => Errors.livenessUnavailable(cause);

/** The face box (not the aligned face) as a square JPEG, like the reference's stored crops. */
async function boxCrop(
  rgb: Uint8Array,
  width: number,
  height: number,
  box: [number, number, number, number],
  o: { size: number; quality: number },
): Promise<Uint8Array> {
  const left = Math.max(0, Math.min(width - 1, Math.floor(box[0])));
  const top = Math.max(0, Math.min(height - 1, Math.floor(box[1])));
  const right = Math.max(left + 1, Math.min(width, Math.ceil(box[2])));
  const bottom = Math.max(top + 1, Math.min(height, Math.ceil(box[3])));
  const jpeg = await sharp(rgb, { raw: { width, height, channels: 3 } })
    .extract({ left, top, width: right - left, height: bottom - top })
    .resize(o.size, o.size, { fit: 'fill' })
    .jpeg({ quality: o.quality })
    .toBuffer();
  return new Uint8Array(jpeg.buffer, jpeg.byteOffset, jpeg.byteLength);
}

const tables = new Map<string, Float32Array>();
/** (v - mean) / std for every byte value, computed once per preprocessing. */
function normalisationTable(mean: number, std: number): Float32Array {
  const key = `${mean}/${std}`;
  let t = tables.get(key);
  if (!t) {
    t = new Float32Array(256);
    for (let v = 0; v < 256; v++) t[v] = (v - mean) / std;
    tables.set(key, t);
  }
  return t;
}

export function l2Normalize(v: Float32Array, dimension: number): Float32Array {
  if (v.length !== dimension) throw new Error(`recognizer returned ${v.length} values, the pack declares ${dimension}`);
  let sq = 0;
  for (let i = 0; i < v.length; i++) sq += v[i]! * v[i]!;
  const norm = Math.sqrt(sq);
  if (!(norm > 0) || !Number.isFinite(norm)) throw Errors.faceNotFound('invalid_embedding');
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! / norm;
  return out;
}

/** Raw cosine of two L2-normalised vectors, clipped to [-1, 1] (unrounded: thresholds use this value). */
/**
 * The cosine of two embeddings, clipped to [-1, 1]. They are unit vectors stored as float32, whose squared
 * norm is 1 only to float32 precision (0.99999999895 for one face): dividing by the norms, in double
 * precision, makes a face compared with itself exactly 1 (sqrt(x * x) === x in IEEE arithmetic) and moves
 * any other score by less than 1e-8.
 */
export function cosineSimilarity(a: Float32Array, b: Float32Array): number {
  let dot = 0,
    aa = 0,
    bb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  const norms = Math.sqrt(aa * bb);
  return norms > 0 ? Math.min(1, Math.max(-1, dot / norms)) : 0;
}

/**
 * Float32 buffers by length, handed back after the model run that read them. A 512x512 detector input is
 * 3 MB; allocating one per photo made that much new ArrayBuffer memory per job, which V8 counts against
 * a worker isolate's heap limit until it is collected (see WORKER_MIN_OLD_GENERATION_MB). Keeps `perLength`
 * buffers of each of the last `lengths` lengths (a monitor's trimmed canvas has its own).
 */
export class TensorPool {
  private readonly free = new Map<number, Float32Array[]>();

  constructor(
    private readonly perLength = 2,
    private readonly lengths = 8,
  ) {}

  take(length: number): Float32Array {
    return this.free.get(length)?.pop() ?? new Float32Array(length);
  }

  give(buffer: Float32Array): void {
    const list = this.free.get(buffer.length) ?? [];
    if (list.length >= this.perLength || list.includes(buffer)) return;
    list.push(buffer);
    // Most recently given length last; the oldest length goes first when there are too many.
    this.free.delete(buffer.length);
    this.free.set(buffer.length, list);
    if (this.free.size > this.lengths) this.free.delete(this.free.keys().next().value!);
  }
}
