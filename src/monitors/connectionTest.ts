import sharp from 'sharp';
import { Errors } from '../contract/errors.js';
import { rtspUrlProblem } from '../contract/monitors.js';
import type { MonitorTestResultT } from '../contract/settings.js';
import { expandPipeline, presetOf } from '../config/pipelinePresets.js';
import { GstFrameSource } from './frameSource.js';
import { probeRtsp } from './rtspProbe.js';
import { redactRtspUrl } from './rtspUrl.js';

export interface ConnectionTestOptions {
  /** A pipeline template, or a preset id (software, jetson, vaapi, v4l2). */
  pipeline: string;
  latencyMs: number;
  maxSide: number;
  timeoutMs: number;
  jpegQuality: number;
}

/** Tests running at once: each holds a GStreamer pipeline and a libuv thread for up to its timeout. */
const MAX_RUNNING = 2;

/**
 * "Test connection" of the camera set-up: the monitor's own probe (DNS, connect, one DESCRIBE, with the
 * cause a monitor would report), then the decode pipeline until its first frame, returned as a JPEG. Nothing
 * is stored; the result says how far it got (`stage`) and why it stopped there.
 */
export class ConnectionTester {
  private running = 0;

  async test(url: string, o: ConnectionTestOptions): Promise<MonitorTestResultT> {
    if (this.running >= MAX_RUNNING) throw Errors.monitorTestBusy(MAX_RUNNING);
    this.running++;
    try {
      return await runTest(url, o);
    } finally {
      this.running--;
    }
  }
}

async function runTest(url: string, o: ConnectionTestOptions): Promise<MonitorTestResultT> {
  const started = Date.now();
  const template = expandPipeline(o.pipeline);
  const base = {
    source: rtspUrlProblem(url) ? '(invalid URL)' : redactRtspUrl(url),
    pipeline: presetOf(template)?.id ?? 'custom',
    frame: null,
    snapshot: null,
  };
  const done = (r: Pick<MonitorTestResultT, 'ok' | 'stage' | 'cause' | 'message'>): MonitorTestResultT => ({
    ...base,
    ...r,
    elapsed_ms: Date.now() - started,
  });
  const urlProblem = rtspUrlProblem(url);
  if (urlProblem) return done({ ok: false, stage: 'url', cause: null, message: urlProblem });
  const probe = await probeRtsp(url, Math.min(o.timeoutMs, 5000));
  if (!probe.ok) return done({ ok: false, stage: 'probe', cause: probe.cause, message: probe.detail });
  const left = Math.max(500, o.timeoutMs - (Date.now() - started));
  const frame = await firstFrame(url, template, o, left);
  if ('problem' in frame) return done({ ok: false, stage: 'pipeline', cause: frame.cause, message: frame.problem });
  const jpeg = await sharp(frame.rgb, { raw: { width: frame.width, height: frame.height, channels: 3 } })
    .jpeg({ quality: o.jpegQuality })
    .toBuffer();
  return {
    ...done({
      ok: true,
      stage: 'frame',
      cause: null,
      message: `decoded a ${frame.width}x${frame.height} frame`,
    }),
    frame: { width: frame.width, height: frame.height },
    snapshot: { content_type: 'image/jpeg', data_base64: jpeg.toString('base64') },
  };
}

type FirstFrame =
  { rgb: Uint8Array; width: number; height: number } | { problem: string; cause: MonitorTestResultT['cause'] };

/** A pipeline that stopped early is started again after this (while time is left), as a monitor reconnects. */
const RETRY_DELAY_MS = 300;

/**
 * Runs the pipeline until its first frame (its pixels copied out), or the time is up. A pipeline that stops
 * early (end of stream, a server still tearing down the media the probe's DESCRIBE prepared) is started again
 * while time is left; one that cannot be built is reported at once.
 */
function firstFrame(url: string, pipeline: string, o: ConnectionTestOptions, timeoutMs: number): Promise<FirstFrame> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve) => {
    let settled = false;
    let source: GstFrameSource | null = null;
    let lastFailure: string | null = null;
    let retry: NodeJS.Timeout | null = null;
    const finish = (r: FirstFrame) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (retry) clearTimeout(retry);
      source?.stop();
      resolve(r);
    };
    const timer = setTimeout(
      () =>
        finish({
          problem: lastFailure
            ? `the pipeline stopped: ${lastFailure}`
            : `the camera answered but no frame was decoded within ${Math.round(timeoutMs / 100) / 10} s (a codec no installed decoder handles, or a pipeline that does not fit the stream)`,
          cause: 'timeout',
        }),
      timeoutMs,
    );
    const attempt = () => {
      retry = null;
      const left = deadline - Date.now();
      source = new GstFrameSource(
        url,
        { pipeline, latencyMs: o.latencyMs, maxFps: 5, maxSide: o.maxSide, openTimeoutMs: left, readTimeoutMs: left },
        {
          caps: () => undefined,
          frame: (pixels, width, height) => {
            try {
              finish({ rgb: Uint8Array.from(pixels.read()), width, height });
            } catch (e) {
              finish({ problem: `the frame could not be read: ${(e as Error).message}`, cause: null });
            }
          },
          failed: (reason) => {
            lastFailure = reason;
            source = null;
            if (!settled && deadline - Date.now() > RETRY_DELAY_MS + 500) retry = setTimeout(attempt, RETRY_DELAY_MS);
          },
        },
      );
      try {
        source.start();
      } catch (e) {
        source = null;
        finish({ problem: `the pipeline could not be built: ${(e as Error).message}`, cause: null });
      }
    };
    attempt();
  });
}
