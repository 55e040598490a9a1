/** Where an image drawn with object-fit: contain lands inside its box (letterboxed), in CSS pixels. */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export function containRect(boxW: number, boxH: number, imgW: number, imgH: number): Rect {
  if (!imgW || !imgH || !boxW || !boxH) return { x: 0, y: 0, width: 0, height: 0 };
  const scale = Math.min(boxW / imgW, boxH / imgH);
  const width = imgW * scale,
    height = imgH * scale;
  return { x: (boxW - width) / 2, y: (boxH - height) / 2, width, height };
}
