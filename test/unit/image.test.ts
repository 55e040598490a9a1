import test, { type ExecutionContext } from 'ava';
import { encodeBmp24, FACES, oneBitPng } from '../helpers/shared.js';
import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { ApiError, Messages } from '../../src/contract/errors.js';
import {
  countJpegScans,
  decodeImage,
  headerDimensions,
  MAX_JPEG_SCANS,
  sniffImageFormat,
  type DecodedImage,
} from '../../src/inference/image.js';
import { manyScanJpeg, progressiveJpeg } from '../helpers/progressiveJpeg.js';

const fixture = (p: string): Buffer => readFileSync(FACES + p);
const LIMITS = { maxBytes: 10 * 1024 * 1024, maxPixels: 40_000_000 };

async function rejects(
  t: ExecutionContext,
  p: Promise<unknown>,
  status: number,
  code: string,
  message?: string,
): Promise<ApiError> {
  const e = await t.throwsAsync(p, { instanceOf: ApiError });
  t.is(e?.status, status);
  t.is(e?.code, code);
  if (message !== undefined) t.is(e?.message, message);
  return e as ApiError;
}

function assertShape(
  t: ExecutionContext,
  img: DecodedImage,
  width: number,
  height: number,
  format: DecodedImage['format'],
): void {
  t.is(img.width, width);
  t.is(img.height, height);
  t.is(img.format, format);
  t.true(Buffer.isBuffer(img.data));
  t.is(img.data.length, width * height * 3);
}

const meanAbsDiff = (a: Uint8Array, b: Uint8Array): number => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += Math.abs(a[i]! - b[i]!);
  return s / a.length;
};

// --- bombs first, serially, so that RSS is not disturbed by concurrent decodes ------------------

const bombs: [string, () => Promise<Buffer>][] = [
  ['hand-made 1-bit PNG', async () => oneBitPng(20000, 20000)],
  [
    'RGB PNG made by sharp',
    async () => {
      const png = await sharp({
        create: { width: 20000, height: 20000, channels: 3, background: { r: 10, g: 20, b: 30 } },
        limitInputPixels: false,
      })
        .png({ compressionLevel: 9 })
        .toBuffer();
      return png;
    },
  ],
];
for (const [name, make] of bombs) {
  // The property under test is "rejected from the header, never decoded": a full decode of 20000x20000 RGB
  // would need 1.2 GB, so RSS staying flat proves it. How fast it is belongs to a benchmark, not here.
  test.serial(`decompression bomb (${name}, 20000x20000) is 413 before decoding, without memory growth`, async (t) => {
    const png = await make();
    t.true(png.length < 2 * 1024 * 1024);
    const rss0 = process.memoryUsage().rss;
    const t0 = performance.now();
    const e = await rejects(t, decodeImage(png, LIMITS), 413, 'image_too_large');
    const grown = process.memoryUsage().rss - rss0;
    t.like(e.details, { width: 20000, height: 20000, max_image_pixels: 40_000_000 });
    t.log(
      `${png.length} bytes, rejected in ${(performance.now() - t0).toFixed(1)} ms, RSS +${(grown / 1e6).toFixed(1)} MB`,
    );
    t.true(grown < 100e6, `RSS grew by ${grown} bytes`);
  });
}

// --- real photos -------------------------------------------------------------------------------

test('JPEG fixture decodes to packed RGB (timing printout)', async (t) => {
  const bytes = fixture('groups/obama_biden_stage.jpg');
  await decodeImage(bytes, LIMITS); // warm-up
  const runs = 5;
  const t0 = performance.now();
  let img: DecodedImage | undefined;
  for (let i = 0; i < runs; i++) img = await decodeImage(bytes, LIMITS);
  t.log(
    `obama_biden_stage.jpg (2000x1428, ${bytes.length} bytes): ${((performance.now() - t0) / runs).toFixed(1)} ms per decode`,
  );
  assertShape(t, img!, 2000, 1428, 'jpeg');
  const ref = await sharp(bytes).rotate().removeAlpha().raw().toBuffer();
  t.true(img!.data.equals(ref));
});

test('EXIF orientation 6: live_T1.jpg (stored 640x480) decodes upright as 480x640', async (t) => {
  const bytes = fixture('liveness/live_T1.jpg');
  const meta = await sharp(bytes).metadata();
  t.is(meta.width, 640);
  t.is(meta.height, 480);
  t.is(meta.orientation, 6);
  const img = await decodeImage(bytes, LIMITS);
  assertShape(t, img, 480, 640, 'jpeg');
  // orientation 6 = rotate the stored pixels 90° clockwise: upright(x, y) = stored(y, H - 1 - x)
  const stored = await sharp(bytes, { autoOrient: false }).raw().toBuffer({ resolveWithObject: true });
  t.is(stored.info.width, 640);
  const sw = stored.info.width;
  const sh = stored.info.height;
  let mismatches = 0;
  for (let y = 0; y < 640; y += 7) {
    for (let x = 0; x < 480; x += 5) {
      const u = (y * 480 + x) * 3;
      const s = ((sh - 1 - x) * sw + y) * 3;
      for (let c = 0; c < 3; c++) if (img.data[u + c] !== stored.data[s + c]) mismatches++;
    }
  }
  t.is(mismatches, 0);
});

test('RGBA PNG: alpha is dropped, colour channels kept as stored', async (t) => {
  const bytes = fixture('identities/cai_xukun/1.png');
  const meta = await sharp(bytes).metadata();
  t.is(meta.channels, 4);
  const img = await decodeImage(bytes, LIMITS);
  assertShape(t, img, 325, 402, 'png');
  const rgba = await sharp(bytes).ensureAlpha().raw().toBuffer();
  let same = true;
  for (let i = 0, j = 0; i < img.data.length; i += 3, j += 4) {
    if (img.data[i] !== rgba[j] || img.data[i + 1] !== rgba[j + 1] || img.data[i + 2] !== rgba[j + 2]) same = false;
  }
  t.true(same);
});

test('all PNG fixtures decode', async (t) => {
  for (const p of [
    'identities/alex_lacamoire/3.png',
    'identities/lin_manuel_miranda/1.png',
    'identities/woman_a/1.png',
    'identities/tom_hanks_aligned112/1.png',
    'identities/cai_xukun/2.png',
  ]) {
    const bytes = fixture(p);
    const meta = await sharp(bytes).metadata();
    const img = await decodeImage(bytes, LIMITS);
    assertShape(t, img, meta.width!, meta.height!, 'png');
  }
});

test('WebP fixture decodes', async (t) => {
  const bytes = fixture('identities/robert_downey_jr/1.webp');
  const img = await decodeImage(bytes, LIMITS);
  assertShape(t, img, 1000, 1300, 'webp');
});

test('a WebP named .jpeg upstream is still sniffed as WebP', async (t) => {
  t.is(sniffImageFormat(fixture('identities/robert_downey_jr/2.webp')), 'webp');
});

// --- colour conversions ------------------------------------------------------------------------

async function smallRgb(): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(fixture('identities/obama/1.jpg'))
    .resize(64, 48, { fit: 'fill' })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

test('8-bit greyscale PNG and JPEG expand to R=G=B', async (t) => {
  const src = await smallRgb();
  const raw = { raw: { width: src.width, height: src.height, channels: 3 as const } };
  const grey = await sharp(src.data, raw).extractChannel(1).raw().toBuffer();
  const g1 = { raw: { width: src.width, height: src.height, channels: 1 as const } };
  const png = await sharp(grey, g1).toColourspace('b-w').png().toBuffer();
  const pngMeta = await sharp(png).metadata();
  t.is(pngMeta.channels, 1);
  const img = await decodeImage(png, LIMITS);
  assertShape(t, img, src.width, src.height, 'png');
  let exact = true;
  for (let i = 0; i < grey.length; i++) {
    if (img.data[i * 3] !== grey[i] || img.data[i * 3 + 1] !== grey[i] || img.data[i * 3 + 2] !== grey[i])
      exact = false;
  }
  t.true(exact);

  const jpg = await sharp(grey, g1).toColourspace('b-w').jpeg({ quality: 95 }).toBuffer();
  t.is((await sharp(jpg).metadata()).channels, 1);
  const j = await decodeImage(jpg, LIMITS);
  assertShape(t, j, src.width, src.height, 'jpeg');
  let rgbEqual = true;
  for (let i = 0; i < j.data.length; i += 3)
    if (j.data[i] !== j.data[i + 1] || j.data[i] !== j.data[i + 2]) rgbEqual = false;
  t.true(rgbEqual);
});

test('greyscale+alpha and 16-bit PNGs become 8-bit RGB', async (t) => {
  const src = await smallRgb();
  const raw = { raw: { width: src.width, height: src.height, channels: 3 as const } };
  const ga = await sharp(src.data, raw).toColourspace('b-w').ensureAlpha(0.5).png().toBuffer();
  const gaImg = await decodeImage(ga, LIMITS);
  assertShape(t, gaImg, src.width, src.height, 'png');

  const p16 = await sharp(src.data, raw).toColourspace('rgb16').png().toBuffer();
  t.is((await sharp(p16).metadata()).depth, 'ushort');
  const img16 = await decodeImage(p16, LIMITS);
  assertShape(t, img16, src.width, src.height, 'png');
  t.true(img16.data.equals(src.data)); // 8 → 16 → 8 bit is lossless

  const g16 = await sharp(src.data, raw).toColourspace('grey16').png().toBuffer();
  const gImg16 = await decodeImage(g16, LIMITS);
  assertShape(t, gImg16, src.width, src.height, 'png');
});

test('CMYK JPEG is converted to sRGB', async (t) => {
  const src = await smallRgb();
  const cmyk = await sharp(src.data, { raw: { width: src.width, height: src.height, channels: 3 } })
    .toColourspace('cmyk')
    .jpeg({ quality: 95 })
    .toBuffer();
  const meta = await sharp(cmyk).metadata();
  t.is(meta.space, 'cmyk');
  t.is(meta.channels, 4);
  const img = await decodeImage(cmyk, LIMITS);
  assertShape(t, img, src.width, src.height, 'jpeg');
  const d = meanAbsDiff(img.data, src.data);
  t.log(`CMYK round trip mean abs diff: ${d.toFixed(2)}`);
  t.true(d < 25); // a CMYK round trip loses some gamut; a mis-converted (e.g. inverted) image is ~100+
});

// --- BMP through decodeImage -------------------------------------------------------------------

test('BMP decodes through decodeImage with format bmp', async (t) => {
  const src = await smallRgb();
  const img = await decodeImage(encodeBmp24(src.data, src.width, src.height), LIMITS);
  assertShape(t, img, src.width, src.height, 'bmp');
  t.true(img.data.equals(src.data));
});

test('BMP pixel limit and corruption through decodeImage', async (t) => {
  const src = await smallRgb();
  const bmp = encodeBmp24(src.data, src.width, src.height);
  const e = await rejects(t, decodeImage(bmp, { maxBytes: LIMITS.maxBytes, maxPixels: 1000 }), 413, 'image_too_large');
  t.deepEqual(e.details, { max_image_pixels: 1000, width: 64, height: 48 });
  await rejects(t, decodeImage(bmp.subarray(0, 500), LIMITS), 422, 'invalid_image', 'The image could not be decoded.');
  const huge = Buffer.from(bmp.subarray(0, 100));
  huge.writeInt32LE(100000, 18);
  huge.writeInt32LE(100000, 22);
  const e2 = await rejects(t, decodeImage(huge, LIMITS), 413, 'image_too_large');
  t.deepEqual(e2.details, { max_image_pixels: 40_000_000, width: 100000, height: 100000 });
});

// --- limits ------------------------------------------------------------------------------------

test('empty buffer is 422 "The image is empty."', async (t) => {
  await rejects(t, decodeImage(Buffer.alloc(0), LIMITS), 422, 'invalid_image', 'The image is empty.');
});

test('more bytes than max_image_bytes is 413 with max_image_bytes', async (t) => {
  const bytes = fixture('groups/obama_biden_stage.jpg');
  const e = await rejects(t, decodeImage(bytes, { maxBytes: 100_000, maxPixels: 40e6 }), 413, 'image_too_large');
  t.deepEqual(e.details, { max_image_bytes: 100_000 });
  // the byte limit is checked before the format: oversize garbage is still 413
  await rejects(t, decodeImage(Buffer.alloc(2000, 0x41), { maxBytes: 1000, maxPixels: 40e6 }), 413, 'image_too_large');
  // exactly at the limit is fine
  const ok = await decodeImage(bytes, { maxBytes: bytes.length, maxPixels: 40e6 });
  t.is(ok.width, 2000);
});

test('more pixels than max_image_pixels is 413 with dimensions; exactly at the limit passes', async (t) => {
  const bytes = fixture('groups/obama_biden_stage.jpg');
  const e = await rejects(
    t,
    decodeImage(bytes, { maxBytes: LIMITS.maxBytes, maxPixels: 2000 * 1428 - 1 }),
    413,
    'image_too_large',
  );
  t.deepEqual(e.details, { max_image_pixels: 2000 * 1428 - 1, width: 2000, height: 1428 });
  const ok = await decodeImage(bytes, { maxBytes: LIMITS.maxBytes, maxPixels: 2000 * 1428 });
  assertShape(t, ok, 2000, 1428, 'jpeg');
  // WebP and PNG too
  await rejects(
    t,
    decodeImage(fixture('identities/robert_downey_jr/1.webp'), { maxBytes: LIMITS.maxBytes, maxPixels: 1e6 }),
    413,
    'image_too_large',
  );
  await rejects(
    t,
    decodeImage(fixture('identities/cai_xukun/1.png'), { maxBytes: LIMITS.maxBytes, maxPixels: 1e5 }),
    413,
    'image_too_large',
  );
});

// --- unsupported and broken input --------------------------------------------------------------

// Upstream (Pillow) answers a format it knows but does not accept with the format message, and bytes it
// cannot identify at all (HEIC without a plugin, SVG, text) with "could not be decoded" (190a127).
test('GIF, TIFF and AVIF are 422 with the format message; HEIC, SVG, text and other non-images "could not be decoded"', async (t) => {
  const src = await smallRgb();
  const raw = { raw: { width: src.width, height: src.height, channels: 3 as const } };
  const otherFormats: Record<string, Buffer> = {
    gif: await sharp(src.data, raw).gif().toBuffer(),
    tiff: await sharp(src.data, raw).tiff().toBuffer(),
    avif: await sharp(src.data, raw).avif().toBuffer(),
  };
  const notImages: Record<string, Buffer> = {
    heic: Buffer.concat([Buffer.from('000000186674797068656963000000006d696631', 'hex'), Buffer.alloc(64)]),
    svg: Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>',
    ),
    text: Buffer.from('hello, this is not an image\n'),
    json: Buffer.from('{"image":"data:image/jpeg;base64,/9j/"}'),
    base64jpeg: Buffer.from(fixture('identities/rob_lowe/1.jpg').toString('base64')),
    riffWave: Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'),
    oneByte: Buffer.from([0xff]),
    jpegPrefix: Buffer.from([0xff, 0xd8]),
  };
  const cases = [
    ...Object.entries(otherFormats).map(([name, bytes]) => ({ name, bytes, message: Messages.invalidImage })),
    ...Object.entries(notImages).map(([name, bytes]) => ({ name, bytes, message: 'The image could not be decoded.' })),
  ];
  t.is(Messages.invalidImage, 'Only JPEG, PNG, WebP, and BMP images are supported.');
  for (const { name, bytes, message } of cases) {
    t.is(sniffImageFormat(bytes), null, name);
    const e = await t.throwsAsync(decodeImage(bytes, LIMITS), { instanceOf: ApiError }, name);
    t.is(e?.status, 422, name);
    t.is(e?.code, 'invalid_image', name);
    t.is(e?.message, message, name);
  }
});

test('truncated and corrupt JPEG/PNG/WebP are 422 "The image could not be decoded."', async (t) => {
  const jpg = fixture('groups/obama_biden_stage.jpg');
  const png = fixture('identities/cai_xukun/1.png');
  const webp = fixture('identities/robert_downey_jr/1.webp');
  const msg = 'The image could not be decoded.';
  await rejects(t, decodeImage(jpg.subarray(0, 2048), LIMITS), 422, 'invalid_image', msg);
  // header intact, scan data cut: would be a half-grey image without failOn
  await rejects(t, decodeImage(jpg.subarray(0, Math.floor(jpg.length * 0.6)), LIMITS), 422, 'invalid_image', msg);
  await rejects(t, decodeImage(jpg.subarray(0, jpg.length - 2), LIMITS), 422, 'invalid_image', msg);
  await rejects(t, decodeImage(png.subarray(0, 2048), LIMITS), 422, 'invalid_image', msg);
  await rejects(t, decodeImage(png.subarray(0, Math.floor(png.length * 0.6)), LIMITS), 422, 'invalid_image', msg);
  await rejects(t, decodeImage(webp.subarray(0, 2048), LIMITS), 422, 'invalid_image', msg);
  await rejects(t, decodeImage(webp.subarray(0, Math.floor(webp.length * 0.6)), LIMITS), 422, 'invalid_image', msg);
  // magic bytes only
  await rejects(t, decodeImage(Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]), LIMITS), 422, 'invalid_image', msg);
  await rejects(
    t,
    decodeImage(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), LIMITS),
    422,
    'invalid_image',
    msg,
  );
  await rejects(
    t,
    decodeImage(Buffer.from('RIFF\x00\x00\x00\x00WEBPVP8 ', 'latin1'), LIMITS),
    422,
    'invalid_image',
    msg,
  );
  await rejects(t, decodeImage(Buffer.from('BM'), LIMITS), 422, 'invalid_image', msg);
  // corrupted entropy-coded data in the middle of a JPEG
  const corrupt = Buffer.from(jpg);
  for (let i = Math.floor(jpg.length * 0.3); i < Math.floor(jpg.length * 0.3) + 4000; i++) corrupt[i] = 0xff;
  await rejects(t, decodeImage(corrupt, LIMITS), 422, 'invalid_image', msg);
});

test('a JPEG with a benign libjpeg warning (junk before EOI) still decodes', async (t) => {
  const jpg = fixture('identities/rob_lowe/1.jpg');
  const junk = Buffer.concat([
    jpg.subarray(0, jpg.length - 2),
    Buffer.from([1, 2, 3, 4]),
    jpg.subarray(jpg.length - 2),
  ]);
  const img = await decodeImage(junk, LIMITS);
  assertShape(t, img, 250, 250, 'jpeg');
});

test('sniffImageFormat uses magic bytes only', (t) => {
  t.is(sniffImageFormat(Buffer.from([0xff, 0xd8, 0xff, 0xdb])), 'jpeg');
  t.is(sniffImageFormat(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0])), 'png');
  t.is(sniffImageFormat(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a])), null);
  t.is(sniffImageFormat(Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8L', 'latin1')), 'webp');
  t.is(sniffImageFormat(Buffer.from('RIFF\x10\x00\x00\x00AVI LIST', 'latin1')), null);
  t.is(sniffImageFormat(Buffer.from('BM')), 'bmp');
  t.is(sniffImageFormat(Buffer.from('GIF89a')), null);
  t.is(sniffImageFormat(Buffer.from('II*\x00', 'latin1')), null);
  t.is(sniffImageFormat(Buffer.alloc(0)), null);
  t.is(sniffImageFormat(new Uint8Array([0xff, 0xd8, 0xff])), 'jpeg');
});

test('the 413 pixel-limit details report upright dimensions', async (t) => {
  const e = await rejects(
    t,
    decodeImage(fixture('liveness/live_T1.jpg'), { maxBytes: LIMITS.maxBytes, maxPixels: 1000 }),
    413,
    'image_too_large',
  );
  t.deepEqual(e.details, { max_image_pixels: 1000, width: 480, height: 640 });
});

// --- thin and slow images (issue 17.1) ---------------------------------------------------------

/** The reported attack: 1 x 39,000,000 pixels, ~150 KB, under the 40 Mpx cap, 12-27 s of libpng time. */
const thinPng = () => oneBitPng(1, 39_000_000);
const SHAPED = { ...LIMITS, maxSide: 16_384, maxAspectRatio: 20 };

test.serial('a 1 x 39,000,000 PNG is 413 image_too_large from its header (max_image_side)', async (t) => {
  const png = thinPng();
  t.true(png.length < 400_000);
  const e = await rejects(t, decodeImage(png, SHAPED), 413, 'image_too_large');
  t.deepEqual(e.details, { max_image_side: 16_384, width: 1, height: 39_000_000 });
});

test('an image thinner than max_image_aspect_ratio is 422 invalid_image (aspect_ratio), BMP too', async (t) => {
  const png = await sharp({ create: { width: 2100, height: 100, channels: 3, background: '#808080' } })
    .png()
    .toBuffer();
  const e = await rejects(t, decodeImage(png, SHAPED), 422, 'invalid_image');
  t.deepEqual(e.details, { reason: 'aspect_ratio', max_image_aspect_ratio: 20, width: 2100, height: 100 });
  const bmp = encodeBmp24(Buffer.alloc(90, 128), 1, 30);
  const b = await rejects(t, decodeImage(bmp, SHAPED), 422, 'invalid_image');
  t.like(b.details, { reason: 'aspect_ratio', width: 1, height: 30 });
  // 20:1 exactly is accepted
  const ok = await sharp({ create: { width: 2000, height: 100, channels: 3, background: '#808080' } })
    .png()
    .toBuffer();
  assertShape(t, await decodeImage(ok, SHAPED), 2000, 100, 'png');
});

test.serial('a decode running past the timeout is stopped: 422 invalid_image (decode_timeout)', async (t) => {
  // Shape limits lifted so that only the time bound can stop the thin PNG.
  const e = await rejects(
    t,
    decodeImage(thinPng(), { ...LIMITS, maxSide: 1e9, maxAspectRatio: 1e9, timeoutMs: 1000 }),
    422,
    'invalid_image',
  );
  t.deepEqual(e.details, { reason: 'decode_timeout', image_decode_timeout_seconds: 1 });
});

test('headerDimensions reads the stored size of JPEG (baseline, progressive, EXIF), PNG and WebP (lossy, alpha, lossless) as sharp does; a cut header is null', async (t) => {
  const base = sharp({
    create: { width: 333, height: 517, channels: 4, background: { r: 10, g: 200, b: 30, alpha: 0.5 } },
  });
  const cases: [string, Buffer, 'jpeg' | 'png' | 'webp'][] = [
    ['jpeg', await base.clone().jpeg().toBuffer(), 'jpeg'],
    ['progressive jpeg', await base.clone().jpeg({ progressive: true }).toBuffer(), 'jpeg'],
    ['jpeg with EXIF orientation 6', await base.clone().jpeg().withMetadata({ orientation: 6 }).toBuffer(), 'jpeg'],
    ['png', await base.clone().png().toBuffer(), 'png'],
    ['lossy webp', await base.clone().removeAlpha().webp().toBuffer(), 'webp'],
    ['webp with alpha (VP8X)', await base.clone().webp().toBuffer(), 'webp'],
    ['lossless webp', await base.clone().webp({ lossless: true }).toBuffer(), 'webp'],
  ];
  for (const [name, bytes, format] of cases) {
    const meta = await sharp(bytes).metadata();
    t.deepEqual(headerDimensions(bytes, format), { width: meta.width, height: meta.height }, name);
    t.is(headerDimensions(bytes.subarray(0, 12), format), null, `${name} cut after 12 bytes`);
  }
  // The EXIF-rotated JPEG still decodes upright: the header size only gates the shape check.
  const upright = await decodeImage(cases[2]![1], { maxBytes: 1e8, maxPixels: 1e8 });
  t.deepEqual([upright.width, upright.height], [517, 333]);
});

test('countJpegScans: one for a baseline JPEG, the scan script of a progressive one, every repeated scan; it stops counting past `stopAbove`', async (t) => {
  const baseline = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#345' } })
    .jpeg()
    .toBuffer();
  t.is(countJpegScans(baseline), 1);
  t.is(countJpegScans(await progressiveJpeg(64, 48)), 10);
  t.is(countJpegScans(await manyScanJpeg(64, 48, 250)), 260);
  t.is(countJpegScans(await manyScanJpeg(64, 48, 250), 100), 101);
  // A real progressive photo (14 scans, stuffed 0xFF bytes in its entropy data), and it re-encoded as baseline.
  t.is(countJpegScans(fixture('groups/obama_biden_stage.jpg')), 14);
  t.is(countJpegScans(await sharp(fixture('groups/obama_biden_stage.jpg')).jpeg().toBuffer()), 1);
  // Junk bytes between segments are skipped as libjpeg skips them, so they cannot hide the scans after them.
  const junk = await manyScanJpeg(64, 48, 5);
  const sos = junk.indexOf(Buffer.from([0xff, 0xda]));
  t.is(countJpegScans(Buffer.concat([junk.subarray(0, sos), Buffer.from([1, 2, 3]), junk.subarray(sos)])), 15);
  t.is(countJpegScans(Buffer.from([0xff, 0xd8, 0xff])), 0, 'a cut header has no scan');
});

test('issue 36.1: a progressive JPEG with more than MAX_JPEG_SCANS scans is 422 invalid_image (too_many_scans) before any decode; at the limit it decodes', async (t) => {
  t.is(MAX_JPEG_SCANS, 100);
  const hostile = await manyScanJpeg(1920, 1080, 2000);
  const e = await rejects(t, decodeImage(hostile, LIMITS), 422, 'invalid_image');
  t.deepEqual(e.details, { reason: 'too_many_scans', max_jpeg_scans: MAX_JPEG_SCANS });
  t.regex(e.message, /more than 100 scans/);
  assertShape(t, await decodeImage(await manyScanJpeg(640, 480, MAX_JPEG_SCANS - 10), LIMITS), 640, 480, 'jpeg');
  assertShape(t, await decodeImage(await progressiveJpeg(1920, 1080), LIMITS), 1920, 1080, 'jpeg');
});
