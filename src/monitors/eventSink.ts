import type { MonitorEventT } from '../contract/monitors.js';

/** The RGB frame an identity event was seen in (the processed frame, as inference received it). */
export interface EventFrame {
  data: Uint8Array;
  width: number;
  height: number;
  /** Set on a main stream frame beside a detect sub-stream (the event's box is in the sub-stream's pixels). */
  detectSize?: { width: number; height: number };
}

/**
 * Where the event's face lies in its context frame, in that frame's pixels: the event's own box when the frame is
 * the one it was detected in, scaled from the normalised box when the frame is another stream's (a monitor with a
 * detect sub-stream takes its pictures from the main stream).
 */
export function pictureBox(
  bbox: NonNullable<MonitorEventT['face']>['bbox'],
  frame: EventFrame | null,
): { x: number; y: number; width: number; height: number } {
  const p = bbox.pixels,
    n = bbox.normalized;
  if (!frame || !frame.detectSize) return p;
  return {
    x: n.left * frame.width,
    y: n.top * frame.height,
    width: n.width * frame.width,
    height: n.height * frame.height,
  };
}

export interface EventContext {
  collectionId: string;
  frame: EventFrame | null;
  /** The event clip recording around it (ClipRecorder), when the monitor records clips. */
  clipId?: string | null;
}

/**
 * Where a session's events go besides its RAM ring (the durable history and its outputs). Called
 * synchronously, in ring order, on the inference loop: an implementation only queues (it keeps the frame
 * reference; frames are never reused by the reader) and returns at once.
 */
export interface MonitorEventSink {
  /**
   * One event as the ring got it. `frame`: for person/unknown enter and exit, the frame the face was last
   * seen in (its box is `event.face.bbox.pixels` in that frame); null for other events.
   */
  event(event: MonitorEventT, context: EventContext): void;
  /** The session ended (stopped, restarted or deleted), after the exits of its open tracks. */
  sessionEnded(monitorId: string, epoch: string): void;
}
