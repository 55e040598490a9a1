import type { MonitorEventT } from '../contract/monitors.js';

/** The RGB frame an identity event was seen in (the processed frame, as inference received it). */
export interface EventFrame {
  data: Uint8Array;
  width: number;
  height: number;
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
  event(event: MonitorEventT, context: { collectionId: string; frame: EventFrame | null }): void;
  /** The session ended (stopped, restarted or deleted), after the exits of its open tracks. */
  sessionEnded(monitorId: string, epoch: string): void;
}
