/**
 * Download progress on stderr: a redrawn bar on a terminal, and a plain line every ~10% otherwise
 * (logs and CI output must stay readable, so no carriage returns there).
 */
import { formatBytes } from './fsutil.js';

export interface ProgressStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

export interface ProgressTask {
  update(bytes: number): void;
  /** Ends the display; `ok` false leaves the last state visible with a failure mark. */
  finish(ok: boolean): void;
}

export type ProgressFactory = (label: string, totalBytes: number | undefined) => ProgressTask;

const BAR_WIDTH = 30;
const REDRAW_MS = 100;
/** Without a known total, a plain line every this many bytes. */
const UNKNOWN_TOTAL_STEP = 32 * 1024 * 1024;

export function createProgress(stream: ProgressStream): ProgressFactory {
  return (label, total) => (stream.isTTY ? ttyTask(stream, label, total) : lineTask(stream, label, total));
}

export const silentProgress: ProgressFactory = () => ({ update: () => undefined, finish: () => undefined });

function ttyTask(stream: ProgressStream, label: string, total: number | undefined): ProgressTask {
  let last = 0;
  let bytes = 0;
  const draw = (): void => {
    if (total && total > 0) {
      const ratio = Math.min(1, bytes / total);
      const filled = Math.round(ratio * BAR_WIDTH);
      const bar = '#'.repeat(filled) + '-'.repeat(BAR_WIDTH - filled);
      stream.write(
        `\r${label} [${bar}] ${String(Math.floor(ratio * 100)).padStart(3)}% ${formatBytes(bytes)}/${formatBytes(total)}\x1b[K`,
      );
    } else {
      stream.write(`\r${label} ${formatBytes(bytes)}\x1b[K`);
    }
  };
  return {
    update(n) {
      bytes = n;
      const now = Date.now();
      if (now - last >= REDRAW_MS) {
        last = now;
        draw();
      }
    },
    finish(ok) {
      draw();
      stream.write(ok ? '\n' : ' (failed)\n');
    },
  };
}

function lineTask(stream: ProgressStream, label: string, total: number | undefined): ProgressTask {
  let nextStep = 1;
  let bytes = 0;
  return {
    update(n) {
      bytes = n;
      if (total && total > 0) {
        const tenths = Math.floor((bytes / total) * 10);
        if (tenths < nextStep) return;
        nextStep = tenths + 1;
        stream.write(`${label}: ${Math.min(100, tenths * 10)}% (${formatBytes(bytes)}/${formatBytes(total)})\n`);
      } else if (bytes >= nextStep * UNKNOWN_TOTAL_STEP) {
        nextStep = Math.floor(bytes / UNKNOWN_TOTAL_STEP) + 1;
        stream.write(`${label}: ${formatBytes(bytes)}\n`);
      }
    },
    finish(ok) {
      if (!ok) stream.write(`${label}: failed after ${formatBytes(bytes)}\n`);
      else if (!total) stream.write(`${label}: done (${formatBytes(bytes)})\n`);
    },
  };
}
