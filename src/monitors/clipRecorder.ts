import { randomUUID } from 'node:crypto';
import type { MonitorEventT } from '../contract/monitors.js';
import { IDENTITY_EVENT_TYPES } from '../contract/events.js';
import { rebaseFragment, type Fragment, type InitInfo } from './fmp4.js';
import { RECORD_STALL_MS } from './clipPipeline.js';

/** Why a clip ended (the clip's `end_reason`). */
export const CLIP_END_REASONS = [
  'completed',
  'capped',
  'disk_full',
  'stream_lost',
  'monitor_stopped',
  'recovered',
  'write_failed',
  'record_failed',
] as const;
export type ClipEndReason = (typeof CLIP_END_REASONS)[number];

/** Where a clip's bytes go (the events layer's ClipStore). */
export interface ClipSink {
  /**
   * A new clip starting with `init`; null when none can be recorded now (the data dir is short of space or
   * clips are off): the events then carry no clip.
   */
  begin(clip: {
    id: string;
    monitorId: string;
    startedAt: number;
    init: Uint8Array;
    info: InitInfo;
  }): ClipWriter | null;
}

export interface ClipWriter {
  /**
   * Appends a fragment (renumbered and rebased to the clip's start), `ticks` long in the track's timescale.
   * False when the writer has ended the clip by itself (no room left before the data dir's reserve): nothing
   * more goes to it.
   */
  append(data: Uint8Array, ticks: number): boolean;
  /** Ends the clip: its duration goes into its init segment and it becomes playable as a whole. */
  finish(reason: ClipEndReason): void;
}

export interface ClipSettings {
  /** Recorded from this long before the first enter (from the key frame at or before that moment). */
  preMs: number;
  /** ... to this long after the last exit. */
  postMs: number;
  /** A clip never runs longer than this (it ends capped; its tracks' later events still name it). */
  maxMs: number;
}

/** A fragment with the wall-clock span it covers (estimated from its arrival and its duration). */
interface Held {
  f: Fragment;
  startAt: number;
  endAt: number;
}

interface Active {
  id: string;
  writer: ClipWriter | null;
  /** Tracks in view that this clip is recording for. */
  tracks: Set<string>;
  /** When the last track left plus post-roll (null while a track is in view). */
  endAt: number | null;
  /** The decode time of its first fragment (rebased to 0), null until a key frame arrived. */
  base: number | null;
  sequence: number;
  ticks: number;
  startedAt: number;
}

/** The pre-roll buffer never holds more than this many bytes (a camera with a very long key frame interval). */
const MAX_RING_BYTES = 64 * 1024 * 1024;

/**
 * A monitor's event clips, from the camera's encoded stream (mp4mux fragments, one per key frame interval,
 * see fmp4.ts): a ring of the last fragments is the pre-roll; an identity enter starts a clip at the newest
 * key frame at least `preMs` before it, every later fragment is appended while faces are in view, and the clip
 * ends `postMs` after the last exit (or at `maxMs`, or when the stream or the session ends). One clip at a time
 * per monitor: a face entering while one records joins it. Knows nothing of files (ClipSink).
 */
export class ClipRecorder {
  private ring: Held[] = [];
  private ringBytes = 0;
  private info: InitInfo | null = null;
  private init: Uint8Array | null = null;
  private active: Active | null = null;
  /** Which clip each track's events name (also after the clip ended, until the track's exit). */
  private readonly trackClip = new Map<string, string>();
  readonly counters = { clips: 0, fragments: 0, bytes: 0, stalls: 0 };
  /** When the record branch last gave something (connection, init segment, fragment); null while disconnected. */
  private heardAt: number | null = null;
  /** The branch went silent while frames were decoded (its muxer stopped): no clip starts until it speaks again. */
  private stalled = false;

  constructor(
    private readonly monitorId: string,
    private settings: ClipSettings,
    private readonly sink: ClipSink,
    private readonly now: () => number = Date.now,
  ) {}

  configure(settings: ClipSettings): void {
    this.settings = settings;
  }

  /** A connection delivers frames: its record branch has RECORD_STALL_MS from now to give its first fragment. */
  connected(at = this.now()): void {
    this.heardAt = at;
    this.stalled = false;
  }

  /**
   * A decoded frame: true (once per silence) when the record branch has given nothing for RECORD_STALL_MS,
   * so its muxer has stopped (clipPipeline's errorignore keeps decoding going). The clip recording ends
   * record_failed; none starts (events carry no clip) until a fragment comes again or the next connection.
   */
  checkStall(at = this.now()): boolean {
    if (this.heardAt === null || this.stalled || at - this.heardAt < RECORD_STALL_MS) return false;
    this.stalled = true;
    this.counters.stalls++;
    this.finish('record_failed');
    return true;
  }

  /** A new connection's init segment: the clip recording ends (its stream is gone), the pre-roll restarts. */
  start(init: Uint8Array, info: InitInfo, at = this.now()): void {
    this.heardAt = at;
    this.finish('stream_lost');
    this.init = init;
    this.info = info;
    this.ring = [];
    this.ringBytes = 0;
  }

  /** The connection ended: what is recording ends now. */
  streamEnded(): void {
    this.heardAt = null;
    this.stalled = false;
    this.finish('stream_lost');
    this.init = null;
    this.info = null;
    this.ring = [];
    this.ringBytes = 0;
  }

  fragment(f: Fragment, arrivedAt = this.now()): void {
    if (!this.info) return;
    this.heardAt = arrivedAt;
    this.stalled = false;
    const ms = (f.duration * 1000) / this.info.timescale;
    const held: Held = { f, startAt: arrivedAt - ms, endAt: arrivedAt };
    this.ring.push(held);
    this.ringBytes += f.data.length;
    this.trim();
    const a = this.active;
    if (!a) return;
    if (a.base === null && !f.sync) return; // waiting for a key frame to start on
    this.append(a, held);
    if (this.active !== a) return;
    if (a.endAt !== null && held.endAt >= a.endAt) this.finish('completed');
    else if ((a.ticks * 1000) / this.info.timescale >= this.settings.maxMs) this.finish('capped');
  }

  /** The clip an event belongs to (null: none); identity enters and exits start and end clips. */
  event(e: Pick<MonitorEventT, 'type' | 'track_id'>, at = this.now()): string | null {
    const track = e.track_id ?? null;
    if (!IDENTITY_EVENT_TYPES.includes(e.type) || track === null)
      return track !== null ? (this.trackClip.get(track) ?? null) : null;
    if (e.type.endsWith('_enter')) {
      if (this.active) {
        this.active.tracks.add(track);
        this.active.endAt = null;
        this.trackClip.set(track, this.active.id);
        return this.active.id;
      }
      const id = this.begin(at);
      if (id === null) return this.trackClip.get(track) ?? null;
      this.active!.tracks.add(track);
      this.trackClip.set(track, id);
      return id;
    }
    const id = this.trackClip.get(track) ?? null;
    this.trackClip.delete(track);
    const a = this.active;
    if (a && a.tracks.delete(track) && a.tracks.size === 0) a.endAt = at + this.settings.postMs;
    return id;
  }

  /** The session ends: the clip recording ends with what it has. */
  close(): void {
    this.finish('monitor_stopped');
    this.ring = [];
    this.ringBytes = 0;
  }

  get recording(): string | null {
    return this.active?.id ?? null;
  }

  private begin(at: number): string | null {
    if (!this.info || !this.init || this.stalled) return null;
    const id = randomUUID();
    // The newest key frame at least preMs before the event; the oldest one held when the ring is shorter.
    const want = at - this.settings.preMs;
    let from = -1;
    for (let i = 0; i < this.ring.length; i++) {
      if (!this.ring[i]!.f.sync) continue;
      if (from === -1 || this.ring[i]!.startAt <= want) from = i;
      if (this.ring[i]!.startAt > want) break;
    }
    const first = from === -1 ? null : this.ring[from]!;
    const writer = this.sink.begin({
      id,
      monitorId: this.monitorId,
      startedAt: Math.round(first?.startAt ?? at),
      init: this.init,
      info: this.info,
    });
    if (!writer) return null;
    const a: Active = {
      id,
      writer,
      tracks: new Set(),
      endAt: null,
      base: null,
      sequence: 0,
      ticks: 0,
      startedAt: first?.startAt ?? at,
    };
    this.active = a;
    this.counters.clips++;
    if (from !== -1) for (const h of this.ring.slice(from)) if (this.active === a) this.append(a, h);
    return id;
  }

  private append(a: Active, h: Held): void {
    a.base ??= h.f.baseDecodeTime;
    a.sequence++;
    const rebased = rebaseFragment(h.f, a.sequence, h.f.baseDecodeTime - a.base);
    a.ticks += h.f.duration;
    this.counters.fragments++;
    this.counters.bytes += rebased.length;
    if (!a.writer!.append(rebased, h.f.duration)) {
      a.writer = null;
      this.active = null;
    }
  }

  private finish(reason: ClipEndReason): void {
    const a = this.active;
    if (!a) return;
    this.active = null;
    a.writer?.finish(reason);
  }

  /** Drops what no future clip can start from: fragments older than the newest key frame at least preMs old. */
  private trim(): void {
    const newest = this.ring[this.ring.length - 1];
    if (!newest) return;
    const want = newest.endAt - this.settings.preMs;
    let keep = 0;
    for (let i = 0; i < this.ring.length; i++) if (this.ring[i]!.f.sync && this.ring[i]!.startAt <= want) keep = i;
    while (keep > 0 || (this.ringBytes > MAX_RING_BYTES && this.ring.length > 1)) {
      this.ringBytes -= this.ring.shift()!.f.data.length;
      keep = Math.max(0, keep - 1);
    }
  }
}
