/**
 * A small, defensive BMP decoder (libvips/sharp cannot read BMP).
 *
 * Supported:
 * - headers: OS/2 core (12), OS/2 2.x (16 and 64, uncompressed only), BITMAPINFOHEADER (40),
 *   V2/V3 (52/56), V4 (108) and V5 (124);
 * - bit depths 1/2/4/8 (palette), 16 (BI_RGB = x555, BI_BITFIELDS e.g. 565), 24, 32 (BI_RGB = BGRx,
 *   BI_BITFIELDS / BI_ALPHABITFIELDS); alpha is always ignored;
 * - RLE8 and RLE4 compression (bottom-up only, as the format requires);
 * - bottom-up and top-down (negative height) images, rows padded to 4 bytes.
 *
 * Not supported (422 invalid_image with a `reason`): BI_JPEG / BI_PNG embedded images, 64-bit
 * BMPs, Huffman/RLE24 OS/2 variants, non-contiguous bit masks.
 *
 * Everything is validated against the buffer length before anything is allocated, and the pixel
 * limit is checked from the header, so a hostile file costs at most `maxPixels * 3` bytes of output
 * (and only when the file really holds that many pixels, except for RLE where the limit applies).
 * Pixels an RLE stream never writes (delta jumps, early end of line / bitmap) are black.
 */
import { type ApiError, Errors } from '../contract/errors.js';

export const BI_RGB = 0;
export const BI_RLE8 = 1;
export const BI_RLE4 = 2;
export const BI_BITFIELDS = 3;
export const BI_JPEG = 4;
export const BI_PNG = 5;
export const BI_ALPHABITFIELDS = 6;

/** Largest width or height we even consider (far above any real BMP; keeps arithmetic exact). */
const MAX_SIDE = 1 << 24;

export interface BmpMasks {
  r: number;
  g: number;
  b: number;
}

export interface BmpHeader {
  /** Offset of the pixel array (bfOffBits). */
  pixelOffset: number;
  /** DIB header size: 12, 16, 40, 52, 56, 64, 108 or 124. */
  headerSize: number;
  width: number;
  /** Always positive; see `topDown`. */
  height: number;
  /** True when the stored height was negative (first row in the file is the top row). */
  topDown: boolean;
  bitsPerPixel: number;
  /** BI_* compression code. */
  compression: number;
  /** Bytes per stored row (padded to 4 bytes); for RLE the nominal unpacked stride. */
  stride: number;
  /** Palette entries actually present (bit depths <= 8), else 0. */
  paletteSize: number;
  paletteOffset: number;
  /** 3 for OS/2 core headers (RGBTRIPLE), 4 otherwise (RGBQUAD). */
  paletteEntryBytes: 3 | 4;
  /** Channel masks for 16/32-bit images (defaults filled in for BI_RGB), else null. */
  masks: BmpMasks | null;
}

export interface DecodedBmp {
  /** Packed RGB, row-major, top row first. */
  data: Buffer;
  width: number;
  height: number;
}

export function invalidBmp(reason: string): ApiError {
  return Errors.invalidImage('undecodable', `BMP: ${reason}`);
}

export function tooManyPixelsError(width: number, height: number, maxPixels: number): ApiError {
  return Errors.imageTooLarge({ maxPixels, width, height });
}

/** Shift and width of a contiguous bit mask; throws for a non-contiguous one. */
function maskShape(mask: number, bpp: number): { shift: number; bits: number } {
  if (mask === 0) return { shift: 0, bits: 0 };
  if (bpp < 32 && mask >>> bpp !== 0) throw invalidBmp('a colour mask does not fit the bit depth');
  let shift = 0;
  while (((mask >>> shift) & 1) === 0) shift++;
  const m = mask >>> shift;
  // contiguous iff m + 1 is a power of two (m is 2^bits - 1); guard the 32-bit case
  let bits = 0;
  while (bits < 32 - shift && ((m >>> bits) & 1) === 1) bits++;
  if (bits < 32 - shift && m >>> bits !== 0) throw invalidBmp('non-contiguous colour masks are not supported');
  return { shift, bits };
}

/** Lookup table mapping a `bits`-wide channel value to 0..255 (exact rounding of v*255/max). */
function channelTable(bits: number): Uint8Array {
  if (bits === 0) return new Uint8Array(1);
  const n = Math.min(bits, 16);
  const max = (1 << n) - 1;
  const t = new Uint8Array(max + 1);
  for (let v = 0; v <= max; v++) t[v] = Math.round((v * 255) / max);
  return t;
}

/** Headers only (signature, DIB header, masks, palette, pixel offset); not the pixel data length. */
/** The headers alone (no pixel-data check): dimensions for the shape limits. */
export function parseHeaders(buf: Buffer): BmpHeader {
  if (buf.length < 14 + 12) throw invalidBmp('the file is too short');
  if (buf[0] !== 0x42 || buf[1] !== 0x4d) throw invalidBmp('missing BM signature');
  const pixelOffset = buf.readUInt32LE(10);
  const headerSize = buf.readUInt32LE(14);
  if (![12, 16, 40, 52, 56, 64, 108, 124].includes(headerSize))
    throw invalidBmp(`unsupported header size ${headerSize}`);
  if (14 + headerSize > buf.length) throw invalidBmp('the header is truncated');

  let width: number;
  let rawHeight: number;
  let bitsPerPixel: number;
  let compression = BI_RGB;
  let colorsUsed = 0;
  let paletteEntryBytes: 3 | 4 = 4;
  if (headerSize === 12) {
    width = buf.readUInt16LE(18);
    rawHeight = buf.readUInt16LE(20); // unsigned: core bitmaps are always bottom-up
    bitsPerPixel = buf.readUInt16LE(24);
    paletteEntryBytes = 3;
  } else {
    width = buf.readInt32LE(18);
    rawHeight = buf.readInt32LE(22);
    bitsPerPixel = buf.readUInt16LE(28);
    if (headerSize >= 40) {
      compression = buf.readUInt32LE(30);
      colorsUsed = buf.readUInt32LE(46);
    }
    if ((headerSize === 16 || headerSize === 64) && compression !== BI_RGB) {
      throw invalidBmp('compressed OS/2 2.x bitmaps are not supported');
    }
  }

  if (width <= 0 || rawHeight === 0) throw invalidBmp(`invalid dimensions ${width}x${rawHeight}`);
  const topDown = rawHeight < 0;
  const height = Math.abs(rawHeight);
  if (width > MAX_SIDE || height > MAX_SIDE) throw invalidBmp(`absurd dimensions ${width}x${height}`);

  switch (compression) {
    case BI_RGB:
      if (![1, 2, 4, 8, 16, 24, 32].includes(bitsPerPixel)) throw invalidBmp(`unsupported bit depth ${bitsPerPixel}`);
      break;
    case BI_RLE8:
      if (bitsPerPixel !== 8) throw invalidBmp('RLE8 requires 8 bits per pixel');
      break;
    case BI_RLE4:
      if (bitsPerPixel !== 4) throw invalidBmp('RLE4 requires 4 bits per pixel');
      break;
    case BI_BITFIELDS:
    case BI_ALPHABITFIELDS:
      if (bitsPerPixel !== 16 && bitsPerPixel !== 32)
        throw invalidBmp(`bit fields with ${bitsPerPixel} bits per pixel are not supported`);
      break;
    case BI_JPEG:
    case BI_PNG:
      throw invalidBmp('embedded JPEG/PNG bitmaps are not supported');
    default:
      throw invalidBmp(`unsupported compression ${compression}`);
  }
  if ((compression === BI_RLE8 || compression === BI_RLE4) && topDown) {
    throw invalidBmp('top-down RLE bitmaps are not allowed');
  }

  // Colour masks: inside the header for V2+ (>= 52), else right after a 40-byte header.
  let masks: BmpMasks | null = null;
  let afterHeader = 14 + headerSize;
  if (compression === BI_BITFIELDS || compression === BI_ALPHABITFIELDS) {
    if (headerSize === 40) {
      const n = compression === BI_ALPHABITFIELDS ? 16 : 12;
      if (afterHeader + n > buf.length) throw invalidBmp('the colour masks are truncated');
      afterHeader += n;
    } else if (headerSize < 52) {
      throw invalidBmp('bit fields need a 40-byte or larger header');
    }
    masks = { r: buf.readUInt32LE(54), g: buf.readUInt32LE(58), b: buf.readUInt32LE(62) };
  } else if (bitsPerPixel === 16) {
    masks = { r: 0x7c00, g: 0x03e0, b: 0x001f };
  } else if (bitsPerPixel === 32) {
    masks = { r: 0x00ff0000, g: 0x0000ff00, b: 0x000000ff };
  }

  let paletteSize = 0;
  const paletteOffset = afterHeader;
  if (bitsPerPixel <= 8) {
    const full = 1 << bitsPerPixel;
    paletteSize = colorsUsed === 0 || colorsUsed > full ? full : colorsUsed;
    // The palette must sit between the headers and the pixels; tolerate files that declare the
    // full palette but store fewer entries by taking what fits before the pixel data.
    const room = Math.floor((Math.min(pixelOffset, buf.length) - paletteOffset) / paletteEntryBytes);
    if (room < paletteSize) paletteSize = Math.max(0, room);
    if (paletteSize === 0) throw invalidBmp('the palette is missing');
  }

  if (pixelOffset < paletteOffset + paletteSize * paletteEntryBytes)
    throw invalidBmp('the pixel data offset is invalid');

  const stride = Math.floor((bitsPerPixel * width + 31) / 32) * 4;
  return {
    pixelOffset,
    headerSize,
    width,
    height,
    topDown,
    bitsPerPixel,
    compression,
    stride,
    paletteSize,
    paletteOffset,
    paletteEntryBytes,
    masks,
  };
}

/** Uncompressed bitmaps must hold every row; the last row may omit its padding. */
function checkPixelData(buf: Buffer, h: BmpHeader): void {
  if (h.pixelOffset >= buf.length) throw invalidBmp('the pixel data offset is past the end of the file');
  if (h.compression === BI_RLE8 || h.compression === BI_RLE4) return; // the stream is checked while decoding
  const lastRow = Math.ceil((h.bitsPerPixel * h.width) / 8);
  if (h.pixelOffset + h.stride * (h.height - 1) + lastRow > buf.length) throw invalidBmp('the pixel data is truncated');
}

/**
 * Parses and validates the file and DIB headers, and checks that the pixel data of an uncompressed
 * bitmap fits in the buffer. Never allocates anything proportional to the declared image size.
 * Throws ApiError(422, 'invalid_image') for anything malformed or unsupported.
 */
export function readBmpHeader(buf: Buffer): BmpHeader {
  const h = parseHeaders(buf);
  checkPixelData(buf, h);
  return h;
}

/** The palette as packed RGB, padded with black to 256 entries (out-of-range indices read black). */
function readPalette(buf: Buffer, h: BmpHeader): Uint8Array {
  const pal = new Uint8Array(256 * 3);
  for (let i = 0; i < h.paletteSize; i++) {
    const o = h.paletteOffset + i * h.paletteEntryBytes;
    pal[i * 3] = buf[o + 2]!;
    pal[i * 3 + 1] = buf[o + 1]!;
    pal[i * 3 + 2] = buf[o]!;
  }
  return pal;
}

/**
 * Decodes a BMP into packed, upright RGB. Checks `width * height` against `maxPixels` from the
 * header before allocating (413 image_too_large); anything malformed is 422 invalid_image.
 */
export function decodeBmp(buf: Buffer, maxPixels: number): DecodedBmp {
  const h = parseHeaders(buf);
  const { width, height } = h;
  // The pixel limit comes before the data-length check: a header claiming a huge image is a 413
  // whether or not the (tiny) file actually holds the pixels.
  if (width * height > maxPixels) throw tooManyPixelsError(width, height, maxPixels);
  checkPixelData(buf, h);
  const out = Buffer.alloc(width * height * 3);

  if (h.compression === BI_RLE8 || h.compression === BI_RLE4) {
    decodeRle(buf, h, readPalette(buf, h), out);
    return { data: out, width, height };
  }

  const bpp = h.bitsPerPixel;
  const rowBytes = width * 3;
  const pal = bpp <= 8 ? readPalette(buf, h) : null;
  let rShape = { shift: 0, bits: 0 };
  let gShape = rShape;
  let bShape = rShape;
  let rT: Uint8Array = new Uint8Array(1);
  let gT = rT;
  let bT = rT;
  if (h.masks && (bpp === 16 || bpp === 32)) {
    rShape = maskShape(h.masks.r, bpp);
    gShape = maskShape(h.masks.g, bpp);
    bShape = maskShape(h.masks.b, bpp);
    rT = channelTable(rShape.bits);
    gT = channelTable(gShape.bits);
    bT = channelTable(bShape.bits);
  }
  // Fast path for plain BGRx: masks are exactly the byte positions.
  const plain32 = bpp === 32 && h.masks?.r === 0x00ff0000 && h.masks.g === 0x0000ff00 && h.masks.b === 0x000000ff;

  for (let y = 0; y < height; y++) {
    const src = h.pixelOffset + y * h.stride;
    const dstRow = h.topDown ? y : height - 1 - y;
    let d = dstRow * rowBytes;
    if (bpp === 24) {
      for (let x = 0, s = src; x < width; x++, s += 3, d += 3) {
        out[d] = buf[s + 2]!;
        out[d + 1] = buf[s + 1]!;
        out[d + 2] = buf[s]!;
      }
    } else if (plain32) {
      for (let x = 0, s = src; x < width; x++, s += 4, d += 3) {
        out[d] = buf[s + 2]!;
        out[d + 1] = buf[s + 1]!;
        out[d + 2] = buf[s]!;
      }
    } else if (bpp === 32 || bpp === 16) {
      const step = bpp / 8;
      const rMax = rT.length - 1;
      const gMax = gT.length - 1;
      const bMax = bT.length - 1;
      const rDrop = Math.max(0, rShape.bits - 16);
      const gDrop = Math.max(0, gShape.bits - 16);
      const bDrop = Math.max(0, bShape.bits - 16);
      for (let x = 0, s = src; x < width; x++, s += step, d += 3) {
        const v = bpp === 32 ? buf.readUInt32LE(s) : buf[s]! | (buf[s + 1]! << 8);
        out[d] = rT[((v >>> rShape.shift) >>> rDrop) & rMax]!;
        out[d + 1] = gT[((v >>> gShape.shift) >>> gDrop) & gMax]!;
        out[d + 2] = bT[((v >>> bShape.shift) >>> bDrop) & bMax]!;
      }
    } else {
      // 1/2/4/8-bit palette: pixels are packed most significant bits first.
      const p = pal!;
      const perByte = 8 / bpp;
      const mask = (1 << bpp) - 1;
      for (let x = 0; x < width; x++, d += 3) {
        const byte = buf[src + Math.floor(x / perByte)]!;
        const idx = (byte >>> (8 - bpp * ((x % perByte) + 1))) & mask;
        out[d] = p[idx * 3]!;
        out[d + 1] = p[idx * 3 + 1]!;
        out[d + 2] = p[idx * 3 + 2]!;
      }
    }
  }
  return { data: out, width, height };
}

/**
 * RLE8 / RLE4 decoder. Rows are stored bottom-up; writes outside the image are dropped. Running out
 * of data before the image is complete (and before an end-of-bitmap marker) is a truncated file.
 */
function decodeRle(buf: Buffer, h: BmpHeader, pal: Uint8Array, out: Buffer): void {
  const { width, height } = h;
  const rle4 = h.compression === BI_RLE4;
  let p = h.pixelOffset;
  const end = buf.length;
  let x = 0;
  let y = 0; // counted from the bottom row
  const put = (idx: number): void => {
    if (x < width && y < height) {
      const d = ((height - 1 - y) * width + x) * 3;
      out[d] = pal[idx * 3]!;
      out[d + 1] = pal[idx * 3 + 1]!;
      out[d + 2] = pal[idx * 3 + 2]!;
    }
    x++;
  };
  for (;;) {
    if (y >= height) return; // the whole image is written; ignore anything after
    if (p + 2 > end) throw invalidBmp('the RLE data is truncated');
    const count = buf[p]!;
    const value = buf[p + 1]!;
    p += 2;
    if (count > 0) {
      // encoded run
      if (rle4) {
        const hi = value >>> 4;
        const lo = value & 0x0f;
        for (let i = 0; i < count; i++) put(i % 2 === 0 ? hi : lo);
      } else {
        for (let i = 0; i < count; i++) put(value);
      }
      continue;
    }
    if (value === 0) {
      // end of line
      x = 0;
      y++;
    } else if (value === 1) {
      return; // end of bitmap
    } else if (value === 2) {
      // delta
      if (p + 2 > end) throw invalidBmp('the RLE data is truncated');
      x += buf[p]!;
      y += buf[p + 1]!;
      p += 2;
    } else {
      // absolute run of `value` pixels, padded to a 16-bit boundary
      const bytes = rle4 ? Math.ceil(value / 2) : value;
      if (p + bytes > end) throw invalidBmp('the RLE data is truncated');
      if (rle4) {
        for (let i = 0; i < value; i++) {
          const b = buf[p + (i >>> 1)]!;
          put(i % 2 === 0 ? b >>> 4 : b & 0x0f);
        }
      } else {
        for (let i = 0; i < value; i++) put(buf[p + i]!);
      }
      p += bytes + (bytes & 1);
    }
  }
}
