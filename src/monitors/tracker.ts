import type { EventPolicy, ExitReason } from '../contract/monitors.js';

/** What one face is, for tracking: a recognised person, an unknown face, or one blocked by liveness. */
export type FaceKind = 'matched' | 'unknown' | 'liveness_blocked';

/** One face of one processed frame. `box` is normalised [left, top, width, height]. */
export interface Detection<P> {
  box: [number, number, number, number];
  kind: FaceKind;
  personId: string | null;
  payload: P;
}

export type TrackEventType = 'person_enter' | 'person_exit' | 'unknown_enter' | 'unknown_exit';
export interface TrackEvent<P> {
  type: TrackEventType;
  trackId: string;
  personId: string | null;
  payload: P;
  /** Exits only: why the track ended. */
  reason?: ExitReason;
}

interface Track<P> {
  id: string;
  box: [number, number, number, number];
  kind: FaceKind;
  personId: string | null;
  consecutive: number;
  confirmed: boolean;
  /** The enter event was emitted (not swallowed by cooldown or emit_unknown), so its exit is too. */
  announced: boolean;
  lastSeen: number;
  payload: P;
}

/** The association threshold: a face joins a track only above this IoU of normalised boxes. */
export const TRACK_IOU = 0.15;

export function iou(a: readonly number[], b: readonly number[]): number {
  const x1 = Math.max(a[0]!, b[0]!),
    y1 = Math.max(a[1]!, b[1]!);
  const x2 = Math.min(a[0]! + a[2]!, b[0]! + b[2]!),
    y2 = Math.min(a[1]! + a[3]!, b[1]! + b[3]!);
  const inter = Math.max(0, x2 - x1) * Math.max(0, y2 - y1);
  const union = a[2]! * a[3]! + b[2]! * b[3]! - inter;
  return union > 0 ? inter / union : 0;
}

/**
 * Turns per-frame face results into enter/exit events: greedy IoU association, confirmation after
 * `confirm_frames` consecutive frames of the same identity, exit after `absence_timeout_seconds` unseen,
 * and a per (type, person or track) cooldown on enters: a re-enter inside the cooldown is swallowed
 * together with its exit. Pure: time is passed in, so it is tested with synthetic
 * detections.
 */
export class Tracker<P> {
  private tracks: Track<P>[] = [];
  private readonly lastEmitted = new Map<string, number>();
  private nextId = 1;

  constructor(
    private readonly policy: EventPolicy,
    private readonly newTrackId: (n: number) => string = (n) => `t${n}`,
    /**
     * Called for each face once its track is known (a new track's id included), before its identity is
     * compared with the track's: returns the face with the identity to use (track-level identity, see
     * TrackFaces). Association itself uses the face's own identity.
     */
    private readonly decide: ((trackId: string, det: Detection<P>, now: number) => Detection<P>) | null = null,
  ) {}

  /**
   * Associates one frame's faces (at time `now`, ms) and returns the events, plus each face's track id and
   * the faces with the identity their tracks use (`decided`: the faces themselves without a decide hook).
   */
  update(
    detections: Detection<P>[],
    now: number,
  ): { events: TrackEvent<P>[]; trackIds: string[]; decided: Detection<P>[] } {
    // Tracks unseen for the absence timeout end first, so a face after a long gap starts a new track.
    const events: TrackEvent<P>[] = this.expire(now);
    const pairs: { d: number; t: number; iou: number }[] = [];
    detections.forEach((det, d) =>
      this.tracks.forEach((track, t) => {
        if (det.personId && track.personId && det.personId !== track.personId) return;
        const v = iou(det.box, track.box);
        if (v > TRACK_IOU) pairs.push({ d, t, iou: v });
      }),
    );
    pairs.sort((a, b) => b.iou - a.iou || a.d - b.d || a.t - b.t);
    const trackOf = new Array<Track<P> | undefined>(detections.length);
    const taken = new Set<number>();
    const decided: Detection<P>[] = [];
    for (const p of pairs) {
      if (trackOf[p.d] || taken.has(p.t)) continue;
      trackOf[p.d] = this.tracks[p.t];
      taken.add(p.t);
    }
    detections.forEach((face, d) => {
      let track = trackOf[d];
      const id = track?.id ?? this.newTrackId(this.nextId++);
      const det = this.decide ? this.decide(id, face, now) : face;
      decided.push(det);
      if (!track) {
        track = {
          id,
          box: det.box,
          kind: det.kind,
          personId: det.personId,
          consecutive: 0,
          confirmed: false,
          announced: false,
          lastSeen: now,
          payload: det.payload,
        };
        this.tracks.push(track);
        trackOf[d] = track;
      } else if (track.kind !== det.kind || track.personId !== det.personId) {
        // Identity changed: close what was confirmed, then confirm the new identity from scratch.
        this.close(track, 'identity_changed', events);
        Object.assign(track, {
          kind: det.kind,
          personId: det.personId,
          consecutive: 0,
          confirmed: false,
          announced: false,
        });
      }
      track.box = det.box;
      track.lastSeen = now;
      track.payload = det.payload;
      // Liveness-blocked faces never confirm: no enter events, and confirmation restarts when they pass.
      track.consecutive = det.kind === 'liveness_blocked' ? 0 : track.consecutive + 1;
      if (!track.confirmed && det.kind !== 'liveness_blocked' && track.consecutive >= this.policy.confirm_frames) {
        track.confirmed = true;
        track.announced = this.emit(det.kind === 'matched' ? 'person_enter' : 'unknown_enter', track, now, events);
      }
    });
    return { events, trackIds: trackOf.map((t) => t!.id), decided };
  }

  /** Ends tracks unseen for the absence timeout; also called between frames so exits do not wait for video. */
  expire(now: number): TrackEvent<P>[] {
    const events: TrackEvent<P>[] = [];
    const timeout = this.policy.absence_timeout_seconds * 1000;
    this.tracks = this.tracks.filter((t) => {
      if (now - t.lastSeen < timeout) return true;
      this.close(t, 'absent', events);
      return false;
    });
    return events;
  }

  /** Ends every track (the session ends with faces in view): the exits of the announced ones, with `reason`. */
  end(reason: ExitReason): TrackEvent<P>[] {
    const events: TrackEvent<P>[] = [];
    for (const t of this.tracks) this.close(t, reason, events);
    this.tracks = [];
    return events;
  }

  get size(): number {
    return this.tracks.length;
  }

  /** Every open track as it is now (read only: what the motion gate and the zones need). */
  open(): { id: string; box: [number, number, number, number]; kind: FaceKind; confirmed: boolean }[] {
    return this.tracks.map(({ id, box, kind, confirmed }) => ({ id, box, kind, confirmed }));
  }

  /** The confirmed tracks as they are now (read only: what the next frame may reuse, see MonitorActivity.knownTracks). */
  confirmed(): {
    id: string;
    box: [number, number, number, number];
    kind: FaceKind;
    personId: string | null;
    lastSeen: number;
    payload: P;
  }[] {
    return this.tracks
      .filter((t) => t.confirmed)
      .map(({ id, box, kind, personId, lastSeen, payload }) => ({ id, box, kind, personId, lastSeen, payload }));
  }

  /** An announced enter always gets its exit (no cooldown), so clients never see an enter without an exit. */
  private close(t: Track<P>, reason: ExitReason, events: TrackEvent<P>[]): void {
    if (t.confirmed && t.announced)
      events.push({
        type: t.kind === 'matched' ? 'person_exit' : 'unknown_exit',
        trackId: t.id,
        personId: t.personId,
        payload: t.payload,
        reason,
      });
  }

  /** Applies emit_unknown and the cooldown to an enter; true when it was emitted. */
  private emit(type: TrackEventType, t: Track<P>, now: number, events: TrackEvent<P>[]): boolean {
    if (!this.policy.emit_unknown && type.startsWith('unknown_')) return false;
    const key = `${type}:${t.personId ?? t.id}`;
    const last = this.lastEmitted.get(key);
    if (last !== undefined && now - last < this.policy.cooldown_seconds * 1000) return false;
    this.lastEmitted.set(key, now);
    // The map only needs keys younger than the cooldown; prune so long runs do not grow it.
    if (this.lastEmitted.size > 1024) {
      for (const [k, at] of this.lastEmitted)
        if (now - at >= this.policy.cooldown_seconds * 1000) this.lastEmitted.delete(k);
    }
    events.push({ type, trackId: t.id, personId: t.personId, payload: t.payload });
    return true;
  }
}
