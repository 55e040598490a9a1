import { containRect } from './letterbox.js';
import type { OverlayFace } from './previewParts.js';

export type { OverlayFace } from './previewParts.js';

const COLOURS = { matched: '#3ddc97', unknown: '#ffb347', blocked: '#ff5c7a' };

/**
 * Draws boxes and labels over an image shown with object-fit: contain. The canvas is resized only when
 * its box changes, so a long-running kiosk does not reallocate its backing store every frame.
 */
export function drawOverlay(
  canvas: HTMLCanvasElement,
  img: { naturalWidth: number; naturalHeight: number },
  faces: OverlayFace[],
): void {
  const ratio = window.devicePixelRatio || 1;
  const cssW = canvas.clientWidth,
    cssH = canvas.clientHeight;
  const w = Math.round(cssW * ratio),
    h = Math.round(cssH * ratio);
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  const ctx = canvas.getContext('2d');
  if (!ctx) return;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, cssW, cssH);
  const r = containRect(cssW, cssH, img.naturalWidth, img.naturalHeight);
  if (!r.width) return;
  const font = Math.max(12, Math.round(r.height / 28));
  ctx.font = `600 ${font}px system-ui, sans-serif`;
  ctx.textBaseline = 'bottom';
  for (const f of faces) {
    const x = r.x + f.box.left * r.width,
      y = r.y + f.box.top * r.height;
    const bw = f.box.width * r.width,
      bh = f.box.height * r.height;
    const colour = COLOURS[f.kind];
    ctx.strokeStyle = colour;
    ctx.lineWidth = Math.max(2, font / 6);
    ctx.strokeRect(x, y, bw, bh);
    if (f.landmarks) {
      ctx.fillStyle = colour;
      for (const [lx, ly] of f.landmarks) {
        ctx.beginPath();
        ctx.arc(
          r.x + (lx! / img.naturalWidth) * r.width,
          r.y + (ly! / img.naturalHeight) * r.height,
          Math.max(2, font / 6),
          0,
          Math.PI * 2,
        );
        ctx.fill();
      }
    }
    const tw = ctx.measureText(f.label).width + 8;
    const ty = y > font + 6 ? y : y + bh + font + 6;
    ctx.fillStyle = 'rgba(0,0,0,0.7)';
    ctx.fillRect(x, ty - font - 6, tw, font + 6);
    ctx.fillStyle = colour;
    ctx.fillText(f.label, x + 4, ty - 3);
  }
}
