/**
 * The live grid's preview budget (pure: unit-tested, and used by bench/preview.ts). A grid of cameras must
 * not cost the box more than one camera watched full size at the full preview rate; each tile asks for its
 * own width (what it shows) and a frame rate that keeps the grid inside that budget.
 */

/** One camera's full view: the preview rate ([monitors] preview_fps default) and a 720p frame. */
export const FULL_VIEW = { fps: 5, width: 1280 };

/** Tile widths go up in these steps (the server rounds to the same step, so equal tiles share encodes). */
export const WIDTH_STEP = 160;

/**
 * The server's cost of one JPEG `width` pixels wide from a 720p frame, relative to a full-size one: the
 * resize reads the whole frame whatever the output, the encode scales with the pixels. Measured with sharp
 * on 1280x720 (bench/preview.ts): a 480 px JPEG costs about half the CPU of a full one and a fifth of its bytes.
 */
export function relativeCost(width: number): number {
  const share = Math.min(1, width / FULL_VIEW.width) ** 2;
  return 0.4 + 0.6 * share;
}

/** What one of `tiles` tiles of `cssWidth` CSS pixels asks for on a screen of `dpr` device pixels per CSS pixel. */
export function tileParams(tiles: number, cssWidth: number, dpr = 1): { fps: number; width: number } {
  const pixels = Math.max(1, cssWidth) * Math.max(1, dpr);
  const width = Math.min(FULL_VIEW.width, Math.max(2 * WIDTH_STEP, Math.ceil(pixels / WIDTH_STEP) * WIDTH_STEP));
  const fps = FULL_VIEW.fps / (Math.max(1, tiles) * relativeCost(width));
  // Rounded down to a tenth, so the grid stays inside the budget; never below one frame in two seconds.
  return { fps: Math.max(0.5, Math.floor(Math.min(FULL_VIEW.fps, fps) * 10) / 10), width };
}
