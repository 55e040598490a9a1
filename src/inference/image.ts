/**
 * Image decoding for the face service: untrusted bytes in, packed upright 8-bit RGB out.
 *
 * Contract (public HTTP behaviour):
 * - empty input → 422 invalid_image "The image is empty.";
 * - more than `maxBytes` bytes → 413 image_too_large {max_image_bytes};
 * - the format is sniffed from magic bytes only: JPEG, PNG, WebP, BMP; another image format (GIF, TIFF, …)
 *   → 422 invalid_image "Only JPEG, PNG, WebP, and BMP images are supported."; bytes of no known image
 *   format → "The image could not be decoded." (upstream's Pillow cannot identify them either);
 * - the pixel limit is checked from the header before any full decode (a decompression bomb costs
 *   no memory) → 413 image_too_large {max_image_pixels, width, height}; sharp also gets
 *   `limitInputPixels` as a second line of defence;
 * - a JPEG of more than MAX_JPEG_SCANS scans → 422 invalid_image (too_many_scans), counted from the marker
 *   stream before any decode;
 * - any decode failure → 422 invalid_image "The image could not be decoded.".
 *
 * Decoding choices:
 * - EXIF orientation is applied; width/height are the upright ones.
 * - Alpha is DROPPED (`removeAlpha`), not flattened: the colour channels are kept as stored, which
 *   is what OpenCV's `imdecode(IMREAD_COLOR)` (the upstream service) does. Fully transparent
 *   regions therefore show whatever colour the encoder left there (usually black or white).
 * - Grayscale, CMYK, 16-bit and ICC-tagged inputs are converted to 8-bit sRGB in the same pipeline.
 * - `failOn: 'error'`: truncated or corrupt JPEG/PNG/WebP data is rejected (422) instead of being
 *   returned with grey/garbage regions, while benign libjpeg warnings (e.g. "extraneous bytes
 *   before marker", common in camera files) are still accepted — the stricter default 'warning'
 *   would reject those.
 */
import sharp from 'sharp';
import { type ApiError, Errors } from '../contract/errors.js';
import { decodeBmp, parseHeaders, tooManyPixelsError } from './bmp.js';

export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'bmp';

export interface DecodedImage {
  /** Packed RGB uint8, row-major, 3 bytes per pixel, upright (EXIF orientation applied). */
  data: Buffer;
  width: number;
  height: number;
  format: ImageFormat;
}

export interface DecodeLimits {
  maxBytes: number;
  maxPixels: number;
  /** Longest side accepted ([server] max_image_side); checked from the header, before any decode. */
  maxSide?: number;
  /** Longest side / shortest side accepted ([server] max_image_aspect_ratio); from the header too. */
  maxAspectRatio?: number;
  /** A decode still running after this long is stopped (sharp's own timeout) and answers 422. */
  timeoutMs?: number;
}

/**
 * The shape check, from the header alone: a 1 x 39,000,000 PNG is 152 KB and under the pixel cap, yet
 * takes libpng 12-27 s to walk, so the side and the aspect ratio are bounded as well as the area.
 */
export function checkShape(width: number, height: number, limits: DecodeLimits): void {
  if (width * height > limits.maxPixels)
    throw tooManyPixelsError(width, height, Math.max(1, Math.floor(limits.maxPixels)));
  if (limits.maxSide !== undefined && Math.max(width, height) > limits.maxSide)
    throw Errors.imageTooLarge({ maxSide: limits.maxSide, width, height });
  if (
    limits.maxAspectRatio !== undefined &&
    Math.max(width, height) / Math.min(width, height) > limits.maxAspectRatio
  ) {
    throw Errors.invalidImage('shape', { width, height, maxAspectRatio: limits.maxAspectRatio });
  }
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The format from the magic bytes alone, or null when it is not one we accept. */
export function sniffImageFormat(bytes: Uint8Array): ImageFormat | null {
  const b = bytes;
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 8 && PNG_SIGNATURE.every((v, i) => b[i] === v)) return 'png';
  if (
    b.length >= 12 &&
    b[0] === 0x52 &&
    b[1] === 0x49 &&
    b[2] === 0x46 &&
    b[3] === 0x46 && // RIFF
    b[8] === 0x57 &&
    b[9] === 0x45 &&
    b[10] === 0x42 &&
    b[11] === 0x50 // WEBP
  )
    return 'webp';
  if (b.length >= 2 && b[0] === 0x42 && b[1] === 0x4d) return 'bmp'; // BM
  return null;
}

const ascii = (b: Uint8Array, at: number, text: string) =>
  b.length >= at + text.length && [...text].every((c, i) => b[at + i] === c.charCodeAt(0));

/**
 * Whether the bytes start like an image format we do not accept (ones Pillow, upstream's decoder,
 * identifies): those are "unsupported", anything else "could not be decoded".
 */
export function isOtherImageFormat(b: Uint8Array): boolean {
  const starts = (...bytes: number[]) => b.length >= bytes.length && bytes.every((v, i) => b[i] === v);
  return (
    ascii(b, 0, 'GIF87a') ||
    ascii(b, 0, 'GIF89a') ||
    starts(0x49, 0x49, 0x2a, 0x00) || // TIFF, little-endian
    starts(0x4d, 0x4d, 0x00, 0x2a) || // TIFF, big-endian
    starts(0x00, 0x00, 0x01, 0x00) || // ICO
    ascii(b, 0, '8BPS') || // Photoshop
    starts(0x00, 0x00, 0x00, 0x0c, 0x6a, 0x50, 0x20, 0x20) || // JPEG 2000 (JP2)
    starts(0xff, 0x4f, 0xff, 0x51) || // JPEG 2000 codestream
    (ascii(b, 4, 'ftyp') && (ascii(b, 8, 'avif') || ascii(b, 8, 'avis'))) ||
    ascii(b, 0, 'DDS ') ||
    ascii(b, 0, 'qoif') ||
    ascii(b, 0, 'icns') ||
    (b.length >= 3 && b[0] === 0x50 && b[1]! >= 0x31 && b[1]! <= 0x36 && /\s/.test(String.fromCharCode(b[2]!))) // PNM P1-P6
  );
}

/**
 * Stored (not EXIF-rotated) dimensions from the header bytes, without libvips: JPEG (first SOFn), PNG
 * (IHDR), WebP (VP8 / VP8L / VP8X). Null when the header is not where it should be. Width x height,
 * the longest side and the aspect ratio are the same whichever way the image is oriented, so a header
 * that passes `checkShape` with these needs no sharp metadata call; a failing one is re-read by sharp
 * (upright dimensions for the error details), and anything unparsable takes the sharp path too.
 */
export function headerDimensions(b: Uint8Array, format: ImageFormat): { width: number; height: number } | null {
  const u16 = (i: number) => (b[i]! << 8) | b[i + 1]!;
  const le16 = (i: number) => b[i]! | (b[i + 1]! << 8);
  const le24 = (i: number) => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16);
  if (format === 'png') {
    // Signature, then IHDR: length(4) "IHDR"(4) width(4 BE) height(4 BE).
    if (b.length < 24 || b[12] !== 0x49 || b[13] !== 0x48 || b[14] !== 0x44 || b[15] !== 0x52) return null;
    const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
    return { width: dv.getUint32(16), height: dv.getUint32(20) };
  }
  if (format === 'webp') {
    if (b.length < 30) return null;
    const kind = String.fromCharCode(b[12]!, b[13]!, b[14]!, b[15]!);
    if (kind === 'VP8 ' && b[23] === 0x9d && b[24] === 0x01 && b[25] === 0x2a)
      return { width: le16(26) & 0x3fff, height: le16(28) & 0x3fff };
    if (kind === 'VP8L' && b[20] === 0x2f) {
      const bits = b[21]! | (b[22]! << 8) | (b[23]! << 16) | (b[24]! << 24);
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    if (kind === 'VP8X') return { width: le24(24) + 1, height: le24(27) + 1 };
    return null;
  }
  if (format !== 'jpeg') return null;
  // Markers from SOI: every segment but SOI/EOI/RSTn/TEM has a 2-byte length; SOF0-15 except DHT (C4),
  // JPG (C8) and DAC (CC) carry precision(1) height(2) width(2).
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return null;
    const m = b[i + 1]!;
    if (m === 0xff) {
      i++;
      continue;
    }
    if (m === 0xd8 || m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
      i += 2;
      continue;
    }
    if (m === 0xd9 || m === 0xda) return null; // end of image or scan before any frame header
    const len = u16(i + 2);
    if (len < 2) return null;
    if (m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc)
      return { width: u16(i + 7), height: u16(i + 5) };
    i += 2 + len;
  }
  return null;
}

/**
 * Scans a progressive JPEG may have (issue 36.1). libjpeg walks every block of a scan's components for each
 * scan, whatever the scan holds, so decode time grows with the scan count, not with the bytes: a 1920x1080
 * file of 20,000 identical twelve-byte AC scans (259 KB) took ~8 s of libjpeg time and 200,000 of them held
 * an inference slot for minutes, and neither sharp's timeout nor any other hook can stop libjpeg inside
 * one call. libjpeg's standard progressive script has 10 scans for colour (6 for grey, 18 for CMYK),
 * mozjpeg's optimised scripts and cameras and phones stay under ~20; libjpeg-turbo's own fuzz targets refuse
 * more than 500 (TJPARAM_SCANLIMIT) on images of at most 1 Mpx. 100 leaves five times the largest real script
 * and bounds the extra work to ~40 ms at Full HD and about a second at the 40 Mpx default pixel cap.
 */
export const MAX_JPEG_SCANS = 100;

/**
 * The scans (SOS markers) of a JPEG, from its marker stream alone: segments are skipped by their lengths and
 * each scan's entropy-coded data up to the next marker that is neither a stuffed 0xFF00 nor a restart marker,
 * as libjpeg reads them (bytes between markers are skipped to the next 0xFF, as libjpeg does with a warning).
 * Stops counting once past `stopAbove`, so a file of 200,000 scans costs no more than one of 101. A broken
 * stream gives the scans found so far; the decoder judges the rest.
 */
export function countJpegScans(b: Uint8Array, stopAbove = Infinity): number {
  let scans = 0;
  let i = 2;
  while (i + 1 < b.length) {
    if (b[i] !== 0xff) {
      i = b.indexOf(0xff, i);
      if (i < 0) break;
      continue;
    }
    const m = b[i + 1]!;
    if (m === 0xd9) break; // EOI
    if (m === 0xff || m === 0x00) {
      i++; // fill byte, or a stray stuffed zero
      continue;
    }
    if (m === 0xd8 || m === 0x01 || (m >= 0xd0 && m <= 0xd7)) {
      i += 2; // markers without a length
      continue;
    }
    if (i + 3 >= b.length) break;
    const len = (b[i + 2]! << 8) | b[i + 3]!;
    if (len < 2) break;
    i += 2 + len;
    if (m !== 0xda) continue;
    if (++scans > stopAbove) break;
    for (;;) {
      i = b.indexOf(0xff, i);
      if (i < 0 || i + 1 >= b.length) return scans;
      const next = b[i + 1]!;
      if (next !== 0x00 && !(next >= 0xd0 && next <= 0xd7)) break;
      i += 2;
    }
  }
  return scans;
}

function undecodable(reason?: string): ApiError {
  return Errors.invalidImage('undecodable', reason);
}

function firstLine(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.split('\n')[0]!.trim();
}

/**
 * Decodes JPEG/PNG/WebP/BMP bytes into packed upright RGB, enforcing the byte and pixel limits.
 * Throws ApiError only (413 image_too_large or 422 invalid_image).
 */
export async function decodeImage(bytes: Buffer, limits: DecodeLimits): Promise<DecodedImage> {
  if (bytes.length === 0) throw Errors.invalidImage('empty');
  if (bytes.length > limits.maxBytes) {
    throw Errors.imageTooLarge({ maxBytes: limits.maxBytes, bytes: bytes.length });
  }
  const format = sniffImageFormat(bytes);
  if (format === null) throw Errors.invalidImage(isOtherImageFormat(bytes) ? 'unsupported' : 'undecodable');

  const maxPixels = Math.max(1, Math.floor(limits.maxPixels));

  if (format === 'bmp') {
    // decodeBmp validates the header and checks the pixel limit before allocating.
    const header = parseHeaders(bytes);
    checkShape(header.width, header.height, { ...limits, maxPixels });
    const bmp = decodeBmp(bytes, maxPixels);
    return { data: bmp.data, width: bmp.width, height: bmp.height, format };
  }

  // 1) Header only: dimensions before any pixel is decoded. The header bytes first (no libvips call, no
  //    hop to the thread pool: a measurable share of a request's CPU); sharp's metadata when they cannot
  //    be read or the shape fails (the error then reports the upright dimensions, as before).
  const stored = headerDimensions(bytes, format);
  let shapeOk = false;
  if (stored && stored.width > 0 && stored.height > 0) {
    try {
      checkShape(stored.width, stored.height, { ...limits, maxPixels });
      shapeOk = true;
    } catch {
      /* re-read below for the upright dimensions */
    }
  }
  const dims = shapeOk ? stored! : await readShape(bytes, format, limits, maxPixels);
  if (format === 'jpeg' && countJpegScans(bytes, MAX_JPEG_SCANS) > MAX_JPEG_SCANS)
    throw Errors.invalidImage('too_many_scans', { maxScans: MAX_JPEG_SCANS });
  return decodePixels(bytes, format, limits, maxPixels, dims);
}

/** sharp's header read: upright dimensions, then the shape check (throws its 413 / 422). */
async function readShape(
  bytes: Buffer,
  format: ImageFormat,
  limits: DecodeLimits,
  maxPixels: number,
): Promise<{ width: number; height: number }> {
  // No pixel limit here, otherwise sharp refuses with a bare error and we could not report the dimensions.
  let width: number;
  let height: number;
  try {
    const meta = await sharp(bytes, { failOn: 'error', limitInputPixels: false }).metadata();
    if (meta.format !== format) {
      // e.g. sharp sniffed something else inside; treat as undecodable rather than guess
      throw new Error(`format mismatch: sniffed ${format}, decoder saw ${String(meta.format)}`);
    }
    // Upright dimensions (EXIF orientation 5-8 swaps them), so 413 details match what a decode returns.
    width = meta.autoOrient?.width ?? meta.width ?? 0;
    height = meta.autoOrient?.height ?? meta.height ?? 0;
  } catch (e) {
    throw undecodable(firstLine(e));
  }
  if (!(width > 0 && height > 0)) throw undecodable('missing dimensions');
  checkShape(width, height, { ...limits, maxPixels });
  return { width, height };
}

async function decodePixels(
  bytes: Buffer,
  format: ImageFormat,
  limits: DecodeLimits,
  maxPixels: number,
  { width, height }: { width: number; height: number },
): Promise<DecodedImage> {
  // 2) One pipeline: decode → orient → drop alpha → 8-bit sRGB → raw, stopped by sharp after timeoutMs.
  const timeoutSeconds = limits.timeoutMs === undefined ? 0 : Math.max(1, Math.ceil(limits.timeoutMs / 1000));
  try {
    const { data, info } = await sharp(bytes, { failOn: 'error', limitInputPixels: maxPixels })
      .timeout({ seconds: timeoutSeconds })
      .rotate()
      .removeAlpha()
      .toColourspace('srgb')
      .raw({ depth: 'uchar' })
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3 || data.length !== info.width * info.height * 3) {
      throw new Error(`unexpected decoder output: ${info.width}x${info.height}x${info.channels}, ${data.length} bytes`);
    }
    return { data, width: info.width, height: info.height, format };
  } catch (e) {
    const msg = firstLine(e);
    if (/pixel limit/i.test(msg)) throw tooManyPixelsError(width, height, maxPixels);
    if (/timeout/i.test(msg)) throw Errors.invalidImage('timeout', { seconds: timeoutSeconds });
    throw undecodable(msg);
  }
}
