import { mkdirSync, readdirSync, unlinkSync, rmdirSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import type { EventFrame } from '../monitors/eventSink.js';
import { isStorageFull, type StorageGuard } from '../store/storageGuard.js';

export interface SnapshotOptions {
  /** Longest side of the frame JPEG (never upscaled). */
  maxSide: number;
  /** The crop is the face box grown by this fraction of its size on every side. */
  cropMargin: number;
  cropMaxSide: number;
  quality: number;
  /** Encodes at once; more wait, and past `maxQueued` a snapshot is skipped (counted). */
  concurrency?: number;
  maxQueued?: number;
  /**
   * The data dir's full-disk guard: no picture is made while it reports the disk full, and a picture that
   * fails for lack of space marks it full (which releases its reserve for deletes, and pictures stay off it).
   */
  storage?: StorageGuard;
}

/** What was written: `path` is the base name under the snapshot folder (`<day>/<event id>`). */
export interface SnapshotFiles {
  path: string;
  bytes: number;
  width: number;
  height: number;
  cropWidth: number;
  cropHeight: number;
  frameJpeg: Buffer;
}

export interface PixelBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * The crop rectangle: the face box grown by `margin` × its size on each side, clipped to the frame.
 * A recognizer needs context around the face (the detector must find it again in the crop), so the
 * crop is never just the tight box. Null when nothing of the box lies inside the frame.
 */
export function cropRect(
  box: PixelBox,
  frameWidth: number,
  frameHeight: number,
  margin: number,
): { left: number; top: number; width: number; height: number } | null {
  const mx = box.width * margin,
    my = box.height * margin;
  const left = Math.max(0, Math.floor(box.x - mx)),
    top = Math.max(0, Math.floor(box.y - my));
  const right = Math.min(frameWidth, Math.ceil(box.x + box.width + mx)),
    bottom = Math.min(frameHeight, Math.ceil(box.y + box.height + my));
  if (right - left < 2 || bottom - top < 2) return null;
  return { left, top, width: right - left, height: bottom - top };
}

/** Size that fits inside `maxSide` keeping the aspect ratio (never larger than the source). */
export function fitInside(width: number, height: number, maxSide: number): { width: number; height: number } {
  const s = Math.min(1, maxSide / Math.max(width, height));
  return { width: Math.max(1, Math.round(width * s)), height: Math.max(1, Math.round(height * s)) };
}

const dayOf = (iso: string) => iso.slice(0, 10);

/**
 * Writes a picture of a face: 0600, under a temporary name renamed over `file`, so a crash leaves either
 * nothing or a whole file (a leftover `.tmp` is removed by the startup sweeps).
 */
export async function writePrivateFile(file: string, data: Buffer): Promise<void> {
  const tmp = `${file}.tmp`;
  try {
    await writeFile(tmp, data, { mode: 0o600 });
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await rename(tmp, file);
}
const EXTENSIONS = { frame: '.jpg', crop: '.crop.jpg', clip: '.mp4' } as const;
const SAFE = /^[0-9]{4}-[0-9]{2}-[0-9]{2}\/[0-9a-f-]{36}$/;

/**
 * Event pictures as files under `<data_dir>/events/snapshots/<day>/`: `<event id>.jpg` (the frame,
 * downscaled) and `<event id>.crop.jpg` (the face with margin); event clips beside them as `<clip id>.mp4`
 * (written by ClipStore). Encoding runs in sharp's thread pool,
 * never on the inference loop; files are written under a temporary name and renamed, so a crash leaves
 * either nothing or a whole file.
 */
export class SnapshotStore {
  readonly root: string;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  /** Snapshots skipped because too many were waiting to be encoded. */
  skipped = 0;
  /** Snapshots skipped because the data dir was full (its space reserve is kept for deletes). */
  skippedFull = 0;

  constructor(
    dataDir: string,
    private readonly o: SnapshotOptions,
  ) {
    this.root = join(dataDir, 'events', 'snapshots');
    mkdirSync(this.root, { recursive: true, mode: 0o700 });
  }

  /** A picture's file, or an event clip's (clips live in the same store: same folders, trash and retention). */
  file(path: string, kind: 'frame' | 'crop' | 'clip'): string {
    if (!SAFE.test(path)) throw new Error(`not a snapshot path: ${path}`);
    return join(this.root, `${path}${EXTENSIONS[kind]}`);
  }

  /** Null when the encoder queue or the disk is full (the event is recorded without a picture). */
  make(eventId: string, occurredAt: string, frame: EventFrame, box: PixelBox): Promise<SnapshotFiles> | null {
    if (this.o.storage?.isFull()) {
      this.skippedFull++;
      return null;
    }
    if (this.waiting.length >= (this.o.maxQueued ?? 64)) {
      this.skipped++;
      return null;
    }
    return this.slot(() => this.encode(eventId, occurredAt, frame, box));
  }

  private async slot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= (this.o.concurrency ?? 2)) await new Promise<void>((r) => this.waiting.push(r));
    this.running++;
    try {
      return await fn();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private async encode(eventId: string, occurredAt: string, frame: EventFrame, box: PixelBox): Promise<SnapshotFiles> {
    const raw = { raw: { width: frame.width, height: frame.height, channels: 3 as const } };
    const input = Buffer.from(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength);
    const size = fitInside(frame.width, frame.height, this.o.maxSide);
    const rect = cropRect(box, frame.width, frame.height, this.o.cropMargin);
    if (!rect) throw new Error('the face box lies outside the frame');
    const cropSize = fitInside(rect.width, rect.height, this.o.cropMaxSide);
    const [frameJpeg, cropJpeg] = await Promise.all([
      sharp(input, raw)
        .resize(size.width, size.height, { fit: 'fill' })
        .jpeg({ quality: this.o.quality, mozjpeg: false })
        .toBuffer(),
      sharp(input, raw)
        .extract(rect)
        .resize(cropSize.width, cropSize.height, { fit: 'fill' })
        .jpeg({ quality: Math.max(this.o.quality, 90) })
        .toBuffer(),
    ]);
    const path = `${dayOf(occurredAt)}/${eventId}`;
    // Checked again after encoding: the disk may have filled while this picture waited for the encoder.
    if (this.o.storage?.isFull()) {
      this.skippedFull++;
      throw new Error('the data directory is full: event picture skipped');
    }
    try {
      mkdirSync(join(this.root, dayOf(occurredAt)), { recursive: true, mode: 0o700 });
      await Promise.all([
        this.writeAtomic(this.file(path, 'frame'), frameJpeg),
        this.writeAtomic(this.file(path, 'crop'), cropJpeg),
      ]);
    } catch (e) {
      // Half a picture is no picture (and its bytes are what deletes need now).
      this.remove(path);
      if (isStorageFull(e))
        this.o.storage?.markFull(`an event picture could not be written: ${(e as { code: string }).code}`);
      throw e;
    }
    return {
      path,
      bytes: frameJpeg.length + cropJpeg.length,
      width: size.width,
      height: size.height,
      cropWidth: cropSize.width,
      cropHeight: cropSize.height,
      frameJpeg,
    };
  }

  private writeAtomic(file: string, data: Buffer): Promise<void> {
    return writePrivateFile(file, data);
  }

  read(path: string, kind: 'frame' | 'crop'): Promise<Buffer> {
    return readFile(this.file(path, kind));
  }

  /** Removes the files of a base path: both pictures, or a clip (missing ones are fine). */
  remove(path: string): void {
    for (const kind of ['frame', 'crop', 'clip'] as const) {
      try {
        unlinkSync(this.file(path, kind));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
  }

  /** Every snapshot base path on disk (and leftover temporary files, removed on the way), for the startup sweep. */
  onDisk(): Set<string> {
    const out = new Set<string>();
    for (const day of readdirSync(this.root)) {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) continue;
      const names = readdirSync(join(this.root, day));
      for (const name of names) {
        if (name.endsWith('.tmp')) {
          unlinkSync(join(this.root, day, name));
          continue;
        }
        const m = /^([0-9a-f-]{36})(?:\.crop\.jpg|\.jpg|\.mp4)$/.exec(name);
        if (m) out.add(`${day}/${m[1]}`);
      }
      if (names.length === 0) {
        try {
          rmdirSync(join(this.root, day));
        } catch {
          /* a snapshot was just written there */
        }
      }
    }
    return out;
  }
}
