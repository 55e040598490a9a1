import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { REPO } from './shared.js';
import { fileTempDir } from './tempDir.js';

/** One stretch of the test stream: a photo (letterboxed onto the frame) or an empty grey frame. */
export interface Segment {
  image: Buffer | null;
  seconds: number;
}

/**
 * Writes the JPEG frames of a looping scenario (frame00000.jpg, ...) for test/rtsp/server.py.
 * Every frame has the same size so the encoder never renegotiates. Without `dir` the frames go to a temp
 * dir removed when the test process exits (servers restarted in place read the same frames).
 */
export async function renderScenario(
  segments: Segment[],
  o: { width: number; height: number; fps: number; dir?: string },
): Promise<string> {
  const dir = o.dir ?? fileTempDir('vigil-rtsp-');
  mkdirSync(dir, { recursive: true });
  let n = 0;
  for (const s of segments) {
    const background = { r: 96, g: 96, b: 96 };
    const jpeg = s.image
      ? await sharp(s.image)
          .rotate()
          .resize(o.width, o.height, { fit: 'contain', background })
          .jpeg({ quality: 90 })
          .toBuffer()
      : await sharp({ create: { width: o.width, height: o.height, channels: 3, background } })
          .jpeg({ quality: 90 })
          .toBuffer();
    for (let i = 0; i < Math.round(s.seconds * o.fps); i++)
      writeFileSync(join(dir, `frame${String(n++).padStart(5, '0')}.jpg`), jpeg);
  }
  return dir;
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
