/**
 * Camera-grade probe degradations for the quality bench. Each takes a packed 8-bit RGB image and returns
 * a new one (the input is never changed); the ones that move the face also return where it went, so
 * the bench can tell the intended face from others the detector finds.
 *
 * Parameters are given for a face about 112 px wide (the bench normalises probes to that first), so a
 * blur of sigma 2 means the same thing on every photo.
 */
import sharp, { type Sharp } from 'sharp';
import { seededRandom } from '../seededRandom.js';

export { seededRandom };

export interface RawImage {
  data: Uint8Array;
  width: number;
  height: number;
}
/** x1, y1, x2, y2 in pixels. */
export type Box = [number, number, number, number];
/** An image and where the face of interest is in it. */
export interface Probe {
  image: RawImage;
  box: Box;
}

const asRaw = (img: RawImage) => sharp(img.data, { raw: { width: img.width, height: img.height, channels: 3 } });

async function toRaw(s: Sharp): Promise<RawImage> {
  const { data, info } = await s.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new Error(`expected 3 channels, got ${info.channels}`);
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    width: info.width,
    height: info.height,
  };
}

const clampByte = (v: number): number => (v <= 0 ? 0 : v >= 255 ? 255 : Math.round(v));

/**
 * The face with `context` times its box size on every side (clamped to the image): how a probe is cut
 * from a photo or a camera frame.
 */
export function contextCrop(img: RawImage, box: Box, context = 1): Probe {
  const w = box[2] - box[0],
    h = box[3] - box[1];
  const left = Math.max(0, Math.floor(box[0] - context * w)),
    top = Math.max(0, Math.floor(box[1] - context * h));
  const right = Math.min(img.width, Math.ceil(box[2] + context * w)),
    bottom = Math.min(img.height, Math.ceil(box[3] + context * h));
  const cw = right - left,
    ch = bottom - top;
  const data = new Uint8Array(cw * ch * 3);
  for (let y = 0; y < ch; y++)
    data.set(img.data.subarray(((top + y) * img.width + left) * 3, ((top + y) * img.width + right) * 3), y * cw * 3);
  return { image: { data, width: cw, height: ch }, box: [box[0] - left, box[1] - top, box[2] - left, box[3] - top] };
}

/** Resizes the whole probe so the face box is `faceWidth` pixels wide (Lanczos, i.e. antialiased like optics). */
export async function scaleFace(p: Probe, faceWidth: number): Promise<Probe> {
  const f = faceWidth / (p.box[2] - p.box[0]);
  const width = Math.max(1, Math.round(p.image.width * f)),
    height = Math.max(1, Math.round(p.image.height * f));
  const image = await toRaw(asRaw(p.image).resize(width, height, { fit: 'fill', kernel: 'lanczos3' }));
  const sx = width / p.image.width,
    sy = height / p.image.height;
  return { image, box: [p.box[0] * sx, p.box[1] * sy, p.box[2] * sx, p.box[3] * sy] };
}

/**
 * A distant face: the probe scaled so the face is `faceWidth` px wide and pasted, face centred, into a
 * camera frame of flat grey. This is what a detector sees at a door camera: a 40-64 px face in 720p.
 */
export async function smallFaceInFrame(
  p: Probe,
  faceWidth: number,
  frame: { width: number; height: number } = { width: 1280, height: 720 },
  grey = 118,
  /** Where the face's centre goes, in pixels of the frame (default: the frame's centre). */
  centre: { x: number; y: number } = { x: frame.width / 2, y: frame.height / 2 },
): Promise<Probe> {
  const s = await scaleFace(p, faceWidth);
  const cx = (s.box[0] + s.box[2]) / 2,
    cy = (s.box[1] + s.box[3]) / 2;
  const dx = Math.round(centre.x - cx),
    dy = Math.round(centre.y - cy);
  const data = new Uint8Array(frame.width * frame.height * 3).fill(grey);
  for (let y = 0; y < s.image.height; y++) {
    const fy = y + dy;
    if (fy < 0 || fy >= frame.height) continue;
    const x0 = Math.max(0, -dx),
      x1 = Math.min(s.image.width, frame.width - dx);
    if (x1 <= x0) continue;
    data.set(
      s.image.data.subarray((y * s.image.width + x0) * 3, (y * s.image.width + x1) * 3),
      (fy * frame.width + x0 + dx) * 3,
    );
  }
  return {
    image: { data, width: frame.width, height: frame.height },
    box: [s.box[0] + dx, s.box[1] + dy, s.box[2] + dx, s.box[3] + dy],
  };
}

/** Defocus: Gaussian blur of standard deviation `sigma` pixels. */
export function gaussianBlur(img: RawImage, sigma: number): Promise<RawImage> {
  return toRaw(asRaw(img).blur(sigma));
}

/** Linear motion blur: a horizontal box kernel of `length` pixels (a person walking across the frame). */
export function motionBlur(img: RawImage, length: number): Promise<RawImage> {
  if (!Number.isInteger(length) || length < 3 || length % 2 === 0)
    throw new Error('motion blur length must be an odd integer >= 3');
  // libvips wants kernels at least 3 rows high: the middle row carries the line, the others are zero.
  const kernel = [
    ...new Array<number>(length).fill(0),
    ...new Array<number>(length).fill(1),
    ...new Array<number>(length).fill(0),
  ];
  return toRaw(asRaw(img).convolve({ width: length, height: 3, kernel, scale: length }));
}

/** Re-encodes as baseline JPEG at `quality` and decodes again (blocking and ringing of a cheap camera stream). */
export async function jpegRecompress(img: RawImage, quality: number): Promise<RawImage> {
  const jpeg = await asRaw(img).jpeg({ quality, chromaSubsampling: '4:2:0', mozjpeg: false }).toBuffer();
  return toRaw(sharp(jpeg));
}

/**
 * Under-exposure: every value times `exposure` (0.25 = two stops dark), plus Gaussian sensor noise of
 * `noiseSigma` levels per channel, rounded and clipped to 8 bits. No gain is applied back, so the
 * detector and recognizer get the dark, noisy pixels an under-lit camera delivers.
 */
export function lowLight(img: RawImage, opts: { exposure: number; noiseSigma: number; seed: number }): RawImage {
  const rnd = seededRandom(opts.seed);
  const out = new Uint8Array(img.data.length);
  for (let i = 0; i < img.data.length; i += 2) {
    // Box-Muller: two independent normals per pair of uniforms.
    const r = Math.sqrt(-2 * Math.log(1 - rnd())),
      a = 2 * Math.PI * rnd();
    out[i] = clampByte(img.data[i]! * opts.exposure + opts.noiseSigma * r * Math.cos(a));
    if (i + 1 < img.data.length)
      out[i + 1] = clampByte(img.data[i + 1]! * opts.exposure + opts.noiseSigma * r * Math.sin(a));
  }
  return { data: out, width: img.width, height: img.height };
}

/**
 * Near-infrared look (night mode of CCTV cameras): one grey channel weighted towards red, the band
 * closest to 850 nm, where skin is bright and smooth; replicated to RGB as such cameras deliver it.
 * Only an approximation: real NIR also changes eyes, hair, glasses and makeup in ways RGB cannot show.
 */
export function infraredGray(img: RawImage): RawImage {
  const out = new Uint8Array(img.data.length);
  for (let i = 0; i < img.data.length; i += 3) {
    const g = clampByte(0.7 * img.data[i]! + 0.25 * img.data[i + 1]! + 0.05 * img.data[i + 2]!);
    out[i] = g;
    out[i + 1] = g;
    out[i + 2] = g;
  }
  return { data: out, width: img.width, height: img.height };
}

/** Radius of the head cylinder as a multiple of the face box width (the head is wider than the box). */
export const HEAD_RADIUS = 0.6;

/**
 * Horizontal position after turning a cylinder of radius r by `rad` about its vertical axis: a point
 * at x (relative to the axis) sits at angle asin(x/r) and moves to r·sin(angle + rad); points turned
 * past the silhouette stay at the silhouette (they are hidden).
 */
export function cylinderTurn(x: number, r: number, rad: number): number {
  if (Math.abs(x) >= r) return x;
  const phi = Math.asin(x / r) + rad;
  return r * Math.sin(Math.max(-Math.PI / 2, Math.min(Math.PI / 2, phi)));
}

/**
 * Yaw (head turned left or right by `degrees`), simulated by a cylindrical head model: the image inside
 * a vertical cylinder of radius HEAD_RADIUS x face width, centred on the face box, is re-projected as if
 * the cylinder turned; positive degrees move the nose towards image-right. The far side is compressed
 * and hidden past the silhouette, the near side is stretched, and what the turn would reveal (the side
 * of the head) is filled by repeating the silhouette column. Limits: a face is not a cylinder — the
 * nose does not protrude and occlude the far cheek, ears do not appear — so this is milder than a real
 * 30° turn and only tests the 2-D part of pose (foreshortening, landmark shift, lost half-face detail).
 */
export function yawCylinder(p: Probe, degrees: number): Probe {
  const { image: img, box } = p;
  const rad = (degrees * Math.PI) / 180;
  const cx = (box[0] + box[2]) / 2;
  const r = HEAD_RADIUS * (box[2] - box[0]);
  const out = new Uint8Array(img.data.length);
  // Source x for every output column (the map does not depend on the row).
  const sourceX = new Float64Array(img.width);
  for (let x = 0; x < img.width; x++) {
    const u = x + 0.5 - cx;
    if (Math.abs(u) >= r) {
      sourceX[x] = x;
      continue;
    }
    const phi = Math.asin(u / r) - rad;
    sourceX[x] = cx + r * Math.sin(Math.max(-Math.PI / 2, Math.min(Math.PI / 2, phi))) - 0.5;
  }
  for (let x = 0; x < img.width; x++) {
    const sx = Math.max(0, Math.min(img.width - 1, sourceX[x]!));
    const x0 = Math.floor(sx),
      x1 = Math.min(img.width - 1, x0 + 1),
      f = sx - x0;
    for (let y = 0; y < img.height; y++) {
      const row = y * img.width * 3,
        o = row + x * 3,
        a = row + x0 * 3,
        b = row + x1 * 3;
      for (let c = 0; c < 3; c++) out[o + c] = clampByte(img.data[a + c]! * (1 - f) + img.data[b + c]! * f);
    }
  }
  const x1 = cx + cylinderTurn(box[0] - cx, r, rad),
    x2 = cx + cylinderTurn(box[2] - cx, r, rad);
  return { image: { data: out, width: img.width, height: img.height }, box: [x1, box[1], x2, box[3]] };
}
