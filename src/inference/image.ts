/**
 * Image decoding for the face service: untrusted bytes in, packed upright 8-bit RGB out.
 *
 * Contract (public HTTP behaviour):
 * - empty input → 422 invalid_image "The image is empty.";
 * - more than `maxBytes` bytes → 413 image_too_large {max_image_bytes};
 * - the format is sniffed from magic bytes only: JPEG, PNG, WebP, BMP; anything else → 422
 *   invalid_image "Only JPEG, PNG, WebP, and BMP images are supported.";
 * - the pixel limit is checked from the header before any full decode (a decompression bomb costs
 *   no memory) → 413 image_too_large {max_image_pixels, width, height}; sharp also gets
 *   `limitInputPixels` as a second line of defence;
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
  if (width * height > limits.maxPixels) throw tooManyPixelsError(width, height, Math.max(1, Math.floor(limits.maxPixels)));
  if (limits.maxSide !== undefined && Math.max(width, height) > limits.maxSide) throw Errors.imageTooLarge({ maxSide: limits.maxSide, width, height });
  if (limits.maxAspectRatio !== undefined && Math.max(width, height) / Math.min(width, height) > limits.maxAspectRatio) {
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
    b[0] === 0x52 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x46 && // RIFF
    b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50 // WEBP
  ) return 'webp';
  if (b.length >= 2 && b[0] === 0x42 && b[1] === 0x4d) return 'bmp'; // BM
  return null;
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
  if (format === null) throw Errors.invalidImage('unsupported');

  const maxPixels = Math.max(1, Math.floor(limits.maxPixels));

  if (format === 'bmp') {
    // decodeBmp validates the header and checks the pixel limit before allocating.
    const header = parseHeaders(bytes);
    checkShape(header.width, header.height, { ...limits, maxPixels });
    const bmp = decodeBmp(bytes, maxPixels);
    return { data: bmp.data, width: bmp.width, height: bmp.height, format };
  }

  // 1) Header only: dimensions before any pixel is decoded. No pixel limit here, otherwise sharp
  //    refuses with a bare error and we could not report the dimensions.
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
