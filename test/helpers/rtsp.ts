import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { REPO } from './shared.js';
import { fileTempDir } from './tempDir.js';

/** Where a photo sits on the frame: its top-left corner and its width, as fractions of the frame. */
export interface Placement {
  x: number;
  y: number;
  width: number;
}

/**
 * One stretch of the test stream: a photo (letterboxed onto the frame) or an empty grey frame. With `at`
 * the photo is pasted on the grey frame there instead (a scripted scene: a face somewhere in an empty
 * room), and with `to` as well it moves from `at` to `to` over the segment, one step per frame.
 */
export interface Segment {
  image: Buffer | null;
  seconds: number;
  at?: Placement;
  to?: Placement;
}

/**
 * Writes the JPEG frames of a looping scenario (frame00000.jpg, ...) for test/rtsp/server.py.
 * Every frame has the same size so the encoder never renegotiates. Without `dir` the frames go to a temp
 * dir removed when the test process exits (servers restarted in place read the same frames). `room`: the
 * empty frame (and the background of placed photos) is a fixed textured scene instead of plain grey, as a
 * camera sees a room: its contrast range does not change much when a face comes in (the motion gate's
 * contrast stretching works on the scene's range, which a plain frame does not have).
 */
export async function renderScenario(
  segments: Segment[],
  o: { width: number; height: number; fps: number; dir?: string; room?: boolean },
): Promise<string> {
  const dir = o.dir ?? fileTempDir('vigil-rtsp-');
  mkdirSync(dir, { recursive: true });
  let n = 0;
  const background = { r: 96, g: 96, b: 96 };
  const empty = o.room
    ? { raw: { width: o.width, height: o.height, channels: 3 as const }, pixels: roomPixels(o.width, o.height) }
    : null;
  const emptyFrame = () =>
    empty
      ? sharp(empty.pixels, { raw: empty.raw })
      : sharp({ create: { width: o.width, height: o.height, channels: 3, background } });
  const write = (jpeg: Buffer) => writeFileSync(join(dir, `frame${String(n++).padStart(5, '0')}.jpg`), jpeg);
  for (const s of segments) {
    const count = Math.round(s.seconds * o.fps);
    if (s.image && s.at) {
      // Resized once; each frame pastes it at its place on the grey frame.
      const width = Math.round(s.at.width * o.width);
      const photo = await sharp(s.image).rotate().resize({ width }).toBuffer();
      let lastKey = '';
      let jpeg = Buffer.alloc(0);
      for (let i = 0; i < count; i++) {
        const f = s.to && count > 1 ? i / (count - 1) : 0;
        const to = s.to ?? s.at;
        const left = Math.round((s.at.x + (to.x - s.at.x) * f) * o.width);
        const top = Math.round((s.at.y + (to.y - s.at.y) * f) * o.height);
        if (`${left},${top}` !== lastKey) {
          lastKey = `${left},${top}`;
          jpeg = await emptyFrame()
            .composite([{ input: photo, left, top }])
            .jpeg({ quality: 90 })
            .toBuffer();
        }
        write(jpeg);
      }
      continue;
    }
    const jpeg = s.image
      ? await sharp(s.image)
          .rotate()
          .resize(o.width, o.height, { fit: 'contain', background })
          .jpeg({ quality: 90 })
          .toBuffer()
      : await emptyFrame().jpeg({ quality: 90 }).toBuffer();
    for (let i = 0; i < count; i++) write(jpeg);
  }
  return dir;
}

/** A fixed "room": a wall gradient with a floor, a door frame and some shelves (RGB, width x height). */
function roomPixels(width: number, height: number): Buffer {
  const px = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const floor = y > height * 0.75;
      const door = x > width * 0.08 && x < width * 0.2 && y > height * 0.2 && !floor;
      const shelf = x > width * 0.8 && y % Math.max(4, Math.round(height / 12)) < 2;
      const v = floor ? 60 + ((x >> 3) % 2) * 20 : door ? 170 : shelf ? 30 : 110 + Math.round((70 * x) / width);
      px.set([v, Math.max(0, v - 10), Math.max(0, v - 25)], (y * width + x) * 3);
    }
  return px;
}

export interface RtspServer {
  port: number;
  frames: string;
  url: (mount?: string) => string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts test/rtsp/server.py (GstRtspServer, Debian's python3-gi: /usr/bin/python3, not a pyenv one)
 * and resolves once it listens. `port` 0 picks a free one; pass the old port to restart in place.
 */
export async function startRtspServer(o: {
  frames: string;
  fps: number;
  port?: number;
  mounts?: string[];
  bitrate?: number;
  markFrame?: number;
  onMark?: (ms: number) => void;
  tlsPem?: string;
  auth?: string;
  audioMount?: string;
  preencoded?: { mountOffsetsSeconds: number[] };
}): Promise<RtspServer> {
  const args = [
    join(REPO, 'test/rtsp/server.py'),
    '--frames',
    o.frames,
    '--fps',
    String(o.fps),
    '--port',
    String(o.port ?? 0),
  ];
  for (const m of o.mounts ?? []) args.push('--mount', m);
  if (o.bitrate) args.push('--bitrate', String(o.bitrate));
  if (o.markFrame !== undefined) args.push('--mark-frame', String(o.markFrame));
  if (o.tlsPem) args.push('--tls', o.tlsPem);
  if (o.auth) args.push('--auth', o.auth);
  if (o.audioMount) args.push('--audio-mount', o.audioMount);
  if (o.preencoded) args.push('--preencoded', '--mount-offsets', o.preencoded.mountOffsetsSeconds.join(','));
  const child = spawn('/usr/bin/python3', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`RTSP server did not start: ${stderr}`)), 20_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      for (const mark of c.toString().matchAll(/MARK (\d+)/g)) o.onMark?.(Number(mark[1]));
      const m = /READY (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`RTSP server exited with ${code}: ${stderr}`));
    });
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    port,
    child,
    frames: o.frames,
    url: (mount = '/stream') => `${o.tlsPem ? 'rtsps' : 'rtsp'}://127.0.0.1:${port}${mount}`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
