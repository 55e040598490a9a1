/**
 * What the console says about an event's clip (pure: unit-tested; the DOM around it is clips.ts): its length
 * and size once ready, that it still records, or why there is nothing to play.
 */
import type { z } from 'zod';
import type { EventClip } from '../contract/events.js';

// The wire type as api.ts's Wire spells it, without importing the fetch client (the unit test has no DOM).
type Clip = z.output<typeof EventClip>;

/** m:ss (h:mm:ss from an hour): a clip's length as a player shows it. */
export function clipLength(ms: number): string {
  // Whole seconds down, as the player counts them.
  const s = Math.max(0, Math.floor(ms / 1000));
  const mmss = `${Math.floor(s / 60) % 60}:${String(s % 60).padStart(2, '0')}`;
  return s >= 3600 ? `${Math.floor(s / 3600)}:${mmss.padStart(5, '0')}` : mmss;
}

/** Bytes as a person reads them: kB below a megabyte, MB with one decimal below 100 MB. */
export function clipSize(bytes: number): string {
  if (bytes < 1_000_000) return `${Math.max(1, Math.round(bytes / 1000))} kB`;
  const mb = bytes / 1_000_000;
  return `${mb < 100 ? mb.toFixed(1) : Math.round(mb)} MB`;
}

/** How a clip ended, in words (end_reason; null while it records). */
const ENDED: Record<string, string> = {
  completed: 'ended after the post-roll',
  capped: 'cut at its longest length (max_seconds)',
  disk_full: 'stopped: the data disk was full',
  stream_lost: 'stopped: the camera stream was lost',
  monitor_stopped: 'stopped with the camera',
  recovered: 'kept after a restart (the daemon stopped while it recorded)',
  write_failed: 'could not be written',
  record_failed: "stopped: the camera's stream could not be recorded",
};
export const endedText = (reason: string | null): string | null =>
  reason === null ? null : (ENDED[reason] ?? reason.replaceAll('_', ' '));

/** The line beside or instead of the player. */
export function clipText(c: Clip): string {
  switch (c.status) {
    case 'ready': {
      const ended = c.end_reason && c.end_reason !== 'completed' ? ` · ${endedText(c.end_reason)}` : '';
      return `Clip ${clipLength(c.duration_ms)} · ${clipSize(c.bytes)}${ended}`;
    }
    case 'recording':
      return 'Recording clip…';
    case 'expired':
      return 'Clip expired: the retention of event pictures and clips (events.max_snapshot_bytes) removed it to make room.';
    case 'failed':
      return `No clip: the recording failed${c.end_reason ? ` (${endedText(c.end_reason)})` : ''}.`;
    default:
      return `Clip ${String(c.status)}`;
  }
}
