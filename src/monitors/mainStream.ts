import type { Logger } from 'pino';
import type { EventFrame } from './eventSink.js';
import type { Frame } from './frameSource.js';
import { StreamReader, type StreamReaderOptions } from './streamReader.js';

/** How long the main stream stays open after the last tracked face (a face back soon finds it open). */
export const MAIN_LINGER_MS = 5000;
/** A main frame further than this from the detect frame's time is not "the same moment". */
export const MAIN_NEAREST_MS = 1000;

/** Whether the main stream should be open: demanded now, or within the linger since the last demand. */
export function mainWanted(demanded: boolean, lastDemandAt: number, now: number, lingerMs = MAIN_LINGER_MS): boolean {
  return demanded || now - lastDemandAt < lingerMs;
}

/**
 * The main stream of a monitor whose detection reads a sub-stream (Frigate's input roles: `detect` on the
 * sub-stream, the main stream for pictures). Decoding the main stream costs several times the sub-stream's,
 * so it is opened only while a face is tracked and closed `MAIN_LINGER_MS` after; its newest frame becomes
 * the picture of the events raised on a detect frame of about the same moment. Until it has connected (about
 * a second after the first face frame) the detect frame is the picture, at its own resolution: an enter
 * confirmed sooner has the sub-stream's picture, the exit the main stream's. Opening it on motion instead
 * (before the face) was measured in bench/capacity.ts: on a mostly-empty scene it made the two streams cost
 * more than the main stream alone.
 */
export class MainStream {
  private reader: StreamReader | null = null;
  private lastDemandAt = -Infinity;
  private kept: { sequence: number; frame: EventFrame } | null = null;
  readonly counters = { fromMain: 0, fromDetect: 0 };
  size: { width: number | null; height: number | null } = { width: null, height: null };

  constructor(
    private readonly url: string,
    private readonly options: StreamReaderOptions,
    private readonly log: Logger,
    private readonly monitorId: string,
  ) {}

  get open(): boolean {
    return this.reader !== null;
  }

  /** Called by the session's loop: opens the stream on demand, closes it after the linger. */
  demand(demanded: boolean, now: number): void {
    if (demanded) this.lastDemandAt = now;
    const want = mainWanted(demanded, this.lastDemandAt, now);
    if (want && !this.reader) {
      const reader = new StreamReader(
        this.url,
        this.options,
        {
          frame: () => {},
          connected: () => this.log.debug({ monitor_id: this.monitorId }, 'main stream open for pictures'),
          failed: () => {},
        },
        this.log,
        this.monitorId,
      );
      try {
        reader.start();
      } catch (e) {
        this.log.warn({ monitor_id: this.monitorId, err: (e as Error).message }, 'main stream could not start');
        return;
      }
      this.reader = reader;
    } else if (!want && this.reader) this.close();
  }

  /**
   * The picture for events raised on `detect` (a frame with faces): the main stream's newest frame when it
   * is open and within MAIN_NEAREST_MS of it, else `detect` itself. The main pixels are copied now (a newer
   * frame releases them), once per main frame.
   */
  pictureFor(detect: Frame): EventFrame {
    const newest: Frame | null = this.reader?.latest ?? null;
    if (!newest || Math.abs(newest.at - detect.at) > MAIN_NEAREST_MS) {
      this.counters.fromDetect++;
      return detect;
    }
    this.counters.fromMain++;
    this.size = { width: newest.width, height: newest.height };
    if (this.kept?.sequence !== newest.sequence) {
      let data: Uint8Array;
      try {
        data = newest.data;
      } catch {
        this.counters.fromMain--;
        this.counters.fromDetect++;
        return detect;
      }
      this.kept = {
        sequence: newest.sequence,
        frame: {
          data,
          width: newest.width,
          height: newest.height,
          detectSize: { width: detect.width, height: detect.height },
        },
      };
    }
    return this.kept.frame;
  }

  close(): void {
    this.reader?.stop();
    this.reader = null;
    this.kept = null;
  }
}
