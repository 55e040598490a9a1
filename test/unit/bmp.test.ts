import test from 'ava';
import { FACES } from '../helpers/shared.js';
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { ApiError } from '../../src/contract/errors.js';
import { BI_BITFIELDS, BI_RGB, BI_RLE4, BI_RLE8, decodeBmp, readBmpHeader } from '../../src/inference/bmp.js';

// ---------------------------------------------------------------------------------------------
// A small BMP encoder (test-only) covering the variants the decoder supports.
// ---------------------------------------------------------------------------------------------

interface BmpSpec {
  width: number;
  height: number;
  bpp: number;
  compression?: number;
  topDown?: boolean;
  headerSize?: 12 | 40 | 52 | 56 | 108 | 124;
  /** r, g, b masks for BI_BITFIELDS. */
  masks?: [number, number, number];
  palette?: [number, number, number][];
  /** Pixel array exactly as stored (already padded / RLE-encoded). */
  pixels: Buffer;
  colorsUsed?: number;
}

function writeBmp(s: BmpSpec): Buffer {
  const headerSize = s.headerSize ?? 40;
  const compression = s.compression ?? BI_RGB;
  const extraMasks = headerSize === 40 && compression === BI_BITFIELDS ? 12 : 0;
  const palEntry = headerSize === 12 ? 3 : 4;
  const palBytes = (s.palette?.length ?? 0) * palEntry;
  const offBits = 14 + headerSize + extraMasks + palBytes;
  const buf = Buffer.alloc(offBits + s.pixels.length);
  buf.write('BM', 0, 'latin1');
  buf.writeUInt32LE(buf.length, 2);
  buf.writeUInt32LE(offBits, 10);
  buf.writeUInt32LE(headerSize, 14);
  if (headerSize === 12) {
    buf.writeUInt16LE(s.width, 18);
    buf.writeUInt16LE(s.height, 20);
    buf.writeUInt16LE(1, 22);
    buf.writeUInt16LE(s.bpp, 24);
  } else {
    buf.writeInt32LE(s.width, 18);
    buf.writeInt32LE(s.topDown ? -s.height : s.height, 22);
    buf.writeUInt16LE(1, 26);
    buf.writeUInt16LE(s.bpp, 28);
    buf.writeUInt32LE(compression, 30);
    buf.writeUInt32LE(s.pixels.length, 34);
    buf.writeInt32LE(2835, 38);
    buf.writeInt32LE(2835, 42);
    buf.writeUInt32LE(s.colorsUsed ?? 0, 46);
    if (s.masks && (headerSize >= 52 || extraMasks)) {
      buf.writeUInt32LE(s.masks[0], 54);
      buf.writeUInt32LE(s.masks[1], 58);
      buf.writeUInt32LE(s.masks[2], 62);
    }
    if (headerSize >= 56) buf.writeUInt32LE(0xff000000, 66); // alpha mask (ignored)
    if (headerSize >= 108) buf.write('BGRs', 70, 'latin1'); // LCS_sRGB
  }
  let o = 14 + headerSize + extraMasks;
  for (const [r, g, b] of s.palette ?? []) {
    buf[o] = b;
    buf[o + 1] = g;
    buf[o + 2] = r;
    o += palEntry;
  }
  s.pixels.copy(buf, offBits);
  return buf;
}

/** Packs an uncompressed pixel array in file row order; `value(x, y)` uses image coordinates. */
function packRows(
  width: number,
  height: number,
  bpp: number,
  topDown: boolean,
  value: (x: number, y: number) => number,
): Buffer {
  const stride = Math.floor((bpp * width + 31) / 32) * 4;
  const out = Buffer.alloc(stride * height);
  for (let r = 0; r < height; r++) {
    const y = topDown ? r : height - 1 - r;
    const row = r * stride;
    for (let x = 0; x < width; x++) {
      const v = value(x, y);
      if (bpp <= 8) {
        const bit = x * bpp;
        out[row + (bit >> 3)]! |= v << (8 - bpp - (bit & 7));
      } else if (bpp === 16) {
        out.writeUInt16LE(v, row + x * 2);
      } else if (bpp === 24) {
        out[row + x * 3] = v & 255;
        out[row + x * 3 + 1] = (v >>> 8) & 255;
        out[row + x * 3 + 2] = (v >>> 16) & 255;
      } else {
        out.writeUInt32LE(v >>> 0, row + x * 4);
      }
    }
  }
  return out;
}

/** RLE8 encoder mixing encoded runs and absolute runs (bottom-up, as the format requires). */
function rle8(width: number, height: number, index: (x: number, y: number) => number): Buffer {
  const out: number[] = [];
  for (let y = height - 1; y >= 0; y--) {
    const row = Array.from({ length: width }, (_, x) => index(x, y));
    let x = 0;
    while (x < width) {
      let run = 1;
      while (x + run < width && run < 255 && row[x + run] === row[x]) run++;
      if (run >= 2) {
        out.push(run, row[x]!);
        x += run;
        continue;
      }
      let lit = 1;
      while (x + lit < width && lit < 255 && !(x + lit + 1 < width && row[x + lit] === row[x + lit + 1])) lit++;
      if (lit >= 3) {
        out.push(0, lit, ...row.slice(x, x + lit));
        if (lit & 1) out.push(0);
      } else {
        for (let i = 0; i < lit; i++) out.push(1, row[x + i]!);
      }
      x += lit;
    }
    out.push(0, 0);
  }
  out.push(0, 1);
  return Buffer.from(out);
}

// ---------------------------------------------------------------------------------------------
// Source pixels: a real photo, resized to odd dimensions so every row needs padding.
// ---------------------------------------------------------------------------------------------

interface Rgb {
  data: Buffer;
  width: number;
  height: number;
}

let srcPromise: Promise<Rgb> | undefined;
function source(): Promise<Rgb> {
  srcPromise ??= sharp(readFileSync(FACES + 'identities/obama/1.jpg'))
    .resize(97, 61, { fit: 'fill' })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true })
    .then(({ data, info }) => ({ data, width: info.width, height: info.height }));
  return srcPromise;
}

const px = (img: Rgb, x: number, y: number): [number, number, number] => {
  const i = (y * img.width + x) * 3;
  return [img.data[i]!, img.data[i + 1]!, img.data[i + 2]!];
};

/** Quantise to a 6x6x6 cube (216 colours) so the image fits an 8-bit palette exactly. */
function quantise(img: Rgb): {
  palette: [number, number, number][];
  index: (x: number, y: number) => number;
  expected: Buffer;
} {
  const palette: [number, number, number][] = [];
  for (let r = 0; r < 6; r++)
    for (let g = 0; g < 6; g++) for (let b = 0; b < 6; b++) palette.push([r * 51, g * 51, b * 51]);
  const q = (v: number): number => Math.round(v / 51);
  const index = (x: number, y: number): number => {
    const [r, g, b] = px(img, x, y);
    return q(r) * 36 + q(g) * 6 + q(b);
  };
  const expected = Buffer.alloc(img.width * img.height * 3);
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const c = palette[index(x, y)]!;
      expected.set(c, (y * img.width + x) * 3);
    }
  }
  return { palette, index, expected };
}

function assertDecodeError(
  t: import('ava').ExecutionContext,
  fn: () => unknown,
  status: number,
  code: string,
): ApiError {
  const e = t.throws(fn, { instanceOf: ApiError }) as ApiError;
  t.is(e.status, status);
  t.is(e.code, code);
  return e;
}

// ---------------------------------------------------------------------------------------------

test('24-bit bottom-up BMP decodes to the exact source pixels', async (t) => {
  const img = await source();
  const bmp = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 24,
    pixels: packRows(img.width, img.height, 24, false, (x, y) => {
      const [r, g, b] = px(img, x, y);
      return (r << 16) | (g << 8) | b;
    }),
  });
  const h = readBmpHeader(bmp);
  t.like(h, { width: 97, height: 61, bitsPerPixel: 24, topDown: false, compression: BI_RGB, stride: 292 });
  const out = decodeBmp(bmp, 40e6);
  t.is(out.width, img.width);
  t.is(out.height, img.height);
  t.true(out.data.equals(img.data));
});

test('24-bit BMP with V4 (108) and V5 (124) headers, top-down', async (t) => {
  const img = await source();
  for (const headerSize of [108, 124] as const) {
    const bmp = writeBmp({
      width: img.width,
      height: img.height,
      bpp: 24,
      headerSize,
      topDown: true,
      pixels: packRows(img.width, img.height, 24, true, (x, y) => {
        const [r, g, b] = px(img, x, y);
        return (r << 16) | (g << 8) | b;
      }),
    });
    t.true(readBmpHeader(bmp).topDown);
    t.true(decodeBmp(bmp, 40e6).data.equals(img.data), `header ${headerSize}`);
  }
});

test('32-bit top-down BMP (BI_RGB, junk in the unused byte) decodes exactly', async (t) => {
  const img = await source();
  const bmp = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 32,
    topDown: true,
    pixels: packRows(img.width, img.height, 32, true, (x, y) => {
      const [r, g, b] = px(img, x, y);
      return ((((x * 7 + y) & 255) << 24) | (r << 16) | (g << 8) | b) >>> 0;
    }),
  });
  const out = decodeBmp(bmp, 40e6);
  t.true(out.data.equals(img.data));
});

test('32-bit BI_BITFIELDS BMP (RGBA byte order, 40 and V5 headers) decodes exactly, alpha ignored', async (t) => {
  const img = await source();
  const masks: [number, number, number] = [0x000000ff, 0x0000ff00, 0x00ff0000];
  for (const headerSize of [40, 124] as const) {
    const bmp = writeBmp({
      width: img.width,
      height: img.height,
      bpp: 32,
      compression: BI_BITFIELDS,
      masks,
      headerSize,
      pixels: packRows(img.width, img.height, 32, false, (x, y) => {
        const [r, g, b] = px(img, x, y);
        return ((0x80 << 24) | (b << 16) | (g << 8) | r) >>> 0;
      }),
    });
    t.deepEqual(readBmpHeader(bmp).masks, { r: 0xff, g: 0xff00, b: 0xff0000 });
    t.true(decodeBmp(bmp, 40e6).data.equals(img.data), `header ${headerSize}`);
  }
});

test('8-bit palette BMP decodes to the exact (palettised) source pixels', async (t) => {
  const img = await source();
  const { palette, index, expected } = quantise(img);
  const bmp = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 8,
    palette,
    colorsUsed: palette.length,
    pixels: packRows(img.width, img.height, 8, false, index),
  });
  const h = readBmpHeader(bmp);
  t.is(h.paletteSize, 216);
  t.true(decodeBmp(bmp, 40e6).data.equals(expected));
});

test('8-bit palette BMP with an OS/2 core (12-byte) header', async (t) => {
  const img = await source();
  const { palette, index, expected } = quantise(img);
  const full = [
    ...palette,
    ...Array.from({ length: 256 - palette.length }, () => [0, 0, 0] as [number, number, number]),
  ];
  const bmp = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 8,
    headerSize: 12,
    palette: full,
    pixels: packRows(img.width, img.height, 8, false, index),
  });
  t.is(readBmpHeader(bmp).paletteEntryBytes, 3);
  t.true(decodeBmp(bmp, 40e6).data.equals(expected));
});

test('24-bit BMP with an OS/2 core header', async (t) => {
  const img = await source();
  const bmp = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 24,
    headerSize: 12,
    pixels: packRows(img.width, img.height, 24, false, (x, y) => {
      const [r, g, b] = px(img, x, y);
      return (r << 16) | (g << 8) | b;
    }),
  });
  t.true(decodeBmp(bmp, 40e6).data.equals(img.data));
});

test('16-bit 565 BI_BITFIELDS BMP decodes to the expanded 565 values', async (t) => {
  const img = await source();
  const expected = Buffer.alloc(img.data.length);
  const bmp = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 16,
    compression: BI_BITFIELDS,
    masks: [0xf800, 0x07e0, 0x001f],
    pixels: packRows(img.width, img.height, 16, false, (x, y) => {
      const [r, g, b] = px(img, x, y);
      const r5 = r >> 3,
        g6 = g >> 2,
        b5 = b >> 3;
      expected.set(
        [Math.round((r5 * 255) / 31), Math.round((g6 * 255) / 63), Math.round((b5 * 255) / 31)],
        (y * img.width + x) * 3,
      );
      return (r5 << 11) | (g6 << 5) | b5;
    }),
  });
  const out = decodeBmp(bmp, 40e6);
  t.true(out.data.equals(expected));
  // and it is close to the source (at most the quantisation error)
  let maxDiff = 0;
  for (let i = 0; i < out.data.length; i++) maxDiff = Math.max(maxDiff, Math.abs(out.data[i]! - img.data[i]!));
  t.true(maxDiff <= 8, `max diff ${maxDiff}`);
});

test('16-bit BI_RGB BMP is x555', async (t) => {
  const img = await source();
  const expected = Buffer.alloc(img.data.length);
  const bmp = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 16,
    pixels: packRows(img.width, img.height, 16, false, (x, y) => {
      const [r, g, b] = px(img, x, y).map((v) => v >> 3) as [number, number, number];
      expected.set(
        [r, g, b].map((v) => Math.round((v * 255) / 31)),
        (y * img.width + x) * 3,
      );
      return 0x8000 | (r << 10) | (g << 5) | b; // top bit set: must be ignored
    }),
  });
  t.true(decodeBmp(bmp, 40e6).data.equals(expected));
});

test('1-, 2- and 4-bit palette BMPs with odd widths', (t) => {
  for (const bpp of [1, 2, 4]) {
    const n = 1 << bpp;
    const palette = Array.from(
      { length: n },
      (_, i) => [(i * 37) & 255, (i * 91) & 255, (i * 13 + 5) & 255] as [number, number, number],
    );
    const width = 37,
      height = 9;
    const index = (x: number, y: number): number => (x * 3 + y * 5) % n;
    const bmp = writeBmp({ width, height, bpp, palette, pixels: packRows(width, height, bpp, false, index) });
    const out = decodeBmp(bmp, 40e6);
    let ok = true;
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const i = (y * width + x) * 3;
        const c = palette[index(x, y)]!;
        if (out.data[i] !== c[0] || out.data[i + 1] !== c[1] || out.data[i + 2] !== c[2]) ok = false;
      }
    }
    t.true(ok, `${bpp}-bit`);
  }
});

test('RLE8 BMP (encoded and absolute runs) decodes to the exact palettised pixels', async (t) => {
  const img = await source();
  const { palette, index, expected } = quantise(img);
  const pixels = rle8(img.width, img.height, index);
  const bmp = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 8,
    compression: BI_RLE8,
    palette,
    colorsUsed: palette.length,
    pixels,
  });
  t.is(readBmpHeader(bmp).compression, BI_RLE8);
  t.true(decodeBmp(bmp, 40e6).data.equals(expected));
  // truncated RLE stream → 422
  const cut = bmp.subarray(0, bmp.length - Math.floor(pixels.length / 2));
  assertDecodeError(t, () => decodeBmp(cut, 40e6), 422, 'invalid_image');
});

test('RLE8 delta and early end of bitmap leave the rest black', (t) => {
  const palette: [number, number, number][] = Array.from({ length: 8 }, (_, i) => [i * 30 + 10, 200, 255 - i * 20]);
  // 4x3: bottom row x0..1 = 5, delta (+1,+1) to (3,1), one pixel 7, end of bitmap
  const pixels = Buffer.from([2, 5, 0, 2, 1, 1, 1, 7, 0, 1]);
  const bmp = writeBmp({ width: 4, height: 3, bpp: 8, compression: BI_RLE8, palette, pixels });
  const out = decodeBmp(bmp, 100);
  const at = (x: number, y: number): number[] => [...out.data.subarray((y * 4 + x) * 3, (y * 4 + x) * 3 + 3)];
  t.deepEqual(at(0, 2), palette[5]);
  t.deepEqual(at(1, 2), palette[5]);
  t.deepEqual(at(2, 2), [0, 0, 0]);
  t.deepEqual(at(3, 1), palette[7]);
  t.deepEqual(at(0, 0), [0, 0, 0]);
});

test('RLE4 BMP decodes encoded and absolute runs', (t) => {
  const palette: [number, number, number][] = Array.from({ length: 16 }, (_, i) => [i * 16, 255 - i * 16, i * 7]);
  // 5x2, bottom row: run of 5 alternating 1,2; top row: absolute 3,4,5,6,7 (3 bytes, padded to 4)
  const pixels = Buffer.from([5, 0x12, 0, 0, 0, 5, 0x34, 0x56, 0x70, 0, 0, 0, 0, 1]);
  const bmp = writeBmp({ width: 5, height: 2, bpp: 4, compression: BI_RLE4, palette, pixels });
  const out = decodeBmp(bmp, 100);
  const row = (y: number): number[][] =>
    Array.from({ length: 5 }, (_, x) => [...out.data.subarray((y * 5 + x) * 3, (y * 5 + x) * 3 + 3)]);
  t.deepEqual(
    row(1),
    [1, 2, 1, 2, 1].map((i) => palette[i]),
  );
  t.deepEqual(
    row(0),
    [3, 4, 5, 6, 7].map((i) => palette[i]),
  );
});

test('truncated BMPs are 422 invalid_image, never a crash', async (t) => {
  const img = await source();
  const bmp = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 24,
    pixels: packRows(img.width, img.height, 24, false, () => 0x123456),
  });
  // the last row's padding (97*3 = 291 → 292) may be missing
  t.notThrows(() => decodeBmp(bmp.subarray(0, bmp.length - 1), 40e6));
  for (const n of [2, 10, 14, 20, 30, 53, 54, 60, 1000, Math.floor(bmp.length / 2), bmp.length - 2]) {
    const e = assertDecodeError(t, () => decodeBmp(bmp.subarray(0, n), 40e6), 422, 'invalid_image');
    t.is(e.message, 'The image could not be decoded.');
  }
});

test('a header claiming 100000x100000 is 413 image_too_large before any allocation', (t) => {
  for (const bpp of [24, 8]) {
    const bmp = writeBmp({
      width: 100000,
      height: 100000,
      bpp,
      palette: bpp === 8 ? [[0, 0, 0]] : undefined,
      pixels: Buffer.alloc(16),
    });
    // the header itself is fine; the data is obviously missing
    const rss = process.memoryUsage().rss;
    const e = assertDecodeError(t, () => decodeBmp(bmp, 40e6), 413, 'image_too_large');
    t.deepEqual(e.details, { max_image_pixels: 40e6, width: 100000, height: 100000 });
    t.true(process.memoryUsage().rss - rss < 50e6);
    // without a pixel limit problem, the missing data is a 422
    assertDecodeError(t, () => readBmpHeader(bmp), 422, 'invalid_image');
  }
  // even the header alone (no pixel data at all)
  const headerOnly = writeBmp({ width: 100000, height: -100000, bpp: 24, pixels: Buffer.alloc(0) });
  assertDecodeError(t, () => decodeBmp(headerOnly, 40e6), 413, 'image_too_large');
});

test('malformed headers are 422 invalid_image', async (t) => {
  const img = await source();
  const good = writeBmp({
    width: img.width,
    height: img.height,
    bpp: 24,
    pixels: packRows(img.width, img.height, 24, false, () => 0),
  });
  const mutate = (f: (b: Buffer) => void): Buffer => {
    const b = Buffer.from(good);
    f(b);
    return b;
  };
  const cases: Record<string, Buffer> = {
    'bad header size': mutate((b) => b.writeUInt32LE(41, 14)),
    'zero width': mutate((b) => b.writeInt32LE(0, 18)),
    'negative width': mutate((b) => b.writeInt32LE(-5, 18)),
    'zero height': mutate((b) => b.writeInt32LE(0, 22)),
    'absurd width': mutate((b) => b.writeInt32LE(0x7fffffff, 18)),
    'bpp 7': mutate((b) => b.writeUInt16LE(7, 28)),
    'bpp 64': mutate((b) => b.writeUInt16LE(64, 28)),
    BI_JPEG: mutate((b) => b.writeUInt32LE(4, 30)),
    BI_PNG: mutate((b) => b.writeUInt32LE(5, 30)),
    'unknown compression': mutate((b) => b.writeUInt32LE(99, 30)),
    'RLE8 with 24 bpp': mutate((b) => b.writeUInt32LE(BI_RLE8, 30)),
    'bitfields with 24 bpp': mutate((b) => b.writeUInt32LE(BI_BITFIELDS, 30)),
    'pixel offset past the end': mutate((b) => b.writeUInt32LE(b.length + 10, 10)),
    'pixel offset inside the header': mutate((b) => b.writeUInt32LE(20, 10)),
    'not BM': mutate((b) => b.write('BA', 0, 'latin1')),
  };
  for (const [name, buf] of Object.entries(cases)) {
    const e = t.throws(() => decodeBmp(buf, 40e6), { instanceOf: ApiError }, name) as ApiError;
    t.is(e?.status, 422, name);
  }
  // non-contiguous bit masks
  const nc = writeBmp({
    width: 4,
    height: 2,
    bpp: 16,
    compression: BI_BITFIELDS,
    masks: [0xf00f, 0x00f0, 0x0f00],
    pixels: Buffer.alloc(16),
  });
  assertDecodeError(t, () => decodeBmp(nc, 100), 422, 'invalid_image');
  // top-down RLE is not allowed
  const td = writeBmp({
    width: 4,
    height: 2,
    bpp: 8,
    compression: BI_RLE8,
    topDown: true,
    palette: [[1, 2, 3]],
    pixels: Buffer.from([0, 1]),
  });
  assertDecodeError(t, () => decodeBmp(td, 100), 422, 'invalid_image');
});

test('random corruption never crashes: only ApiError 413/422 or a well-formed result', async (t) => {
  const img = await source();
  const { palette, index } = quantise(img);
  const variants = [
    writeBmp({
      width: img.width,
      height: img.height,
      bpp: 24,
      pixels: packRows(img.width, img.height, 24, false, () => 0x10203),
    }),
    writeBmp({
      width: img.width,
      height: img.height,
      bpp: 8,
      palette,
      pixels: packRows(img.width, img.height, 8, false, index),
    }),
    writeBmp({
      width: img.width,
      height: img.height,
      bpp: 8,
      compression: BI_RLE8,
      palette,
      pixels: rle8(img.width, img.height, index),
    }),
    writeBmp({
      width: 9,
      height: 5,
      bpp: 16,
      compression: BI_BITFIELDS,
      masks: [0xf800, 0x07e0, 0x001f],
      headerSize: 124,
      pixels: packRows(9, 5, 16, false, (x) => x),
    }),
  ];
  let seed = 12345;
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  let ok = 0;
  let rejected = 0;
  for (let i = 0; i < 3000; i++) {
    const b = Buffer.from(variants[i % variants.length]!);
    const edits = 1 + rand(4);
    for (let k = 0; k < edits; k++) b[rand(i % 2 ? 80 : b.length)] = rand(256);
    const buf = rand(5) === 0 ? b.subarray(0, rand(b.length)) : b;
    try {
      const out = decodeBmp(buf, 1e6);
      if (out.data.length !== out.width * out.height * 3) t.fail('bad output length');
      ok++;
    } catch (e) {
      if (!(e instanceof ApiError) || (e.status !== 422 && e.status !== 413)) {
        t.fail(`unexpected error ${String(e)}`);
        return;
      }
      rejected++;
    }
  }
  t.log(`decoded ${ok}, rejected ${rejected}`);
  // The mutations must reach both outcomes, or the fuzz tests nothing.
  t.true(ok > 0, 'some mutants still decode');
  t.true(rejected > 0, 'some mutants are rejected with 413/422');
});

test('the 2x2 24-bit example from the BMP specification (Wikipedia "Example 1")', (t) => {
  const hex =
    '424d4600000000000000360000002800000002000000020000000100180000000000100000001' +
    '30b0000130b00000000000000000000' +
    '0000ffffffff0000' + // bottom row: red, white, padding
    'ff000000ff000000'; // top row: blue, green, padding
  const bmp = Buffer.from(hex, 'hex');
  t.is(bmp.length, 70);
  const out = decodeBmp(bmp, 100);
  t.is(out.width, 2);
  t.is(out.height, 2);
  t.deepEqual([...out.data], [0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255, 255]);
});
