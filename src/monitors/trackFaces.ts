import type { ExitReason, MonitorFacesT } from '../contract/monitors.js';
import type { MonitorRecord } from './model.js';
import type { IdentityBasisT } from '../contract/identity.js';
import type { EventFrame } from './eventSink.js';
import type { FacePayload, RankedMatch } from './frameProcessor.js';
import type { Detection, TrackEvent } from './tracker.js';
import { decideIdentity, poolTemplate, runnerUp, TrackFrameBank } from './trackIdentity.js';

/** A face with margin copied out of a frame (packed RGB), kept while its track lives (unknown sample crops). */
export interface FaceCrop {
  data: Uint8Array;
  width: number;
  height: number;
  quality: number;
  /** Wall clock (ms) of the frame. */
  at: number;
}

/** A track's visit as the unknown-visitor grouping sees it. */
export interface UnknownVisit {
  monitorId: string;
  collectionId: string;
  trackId: string;
  streamEpoch: string;
  /** Wall clock (ms). */
  at: number;
  /** The track's pooled template (unit length) and its best frame's quality. */
  template: Float32Array;
  quality: number;
  /** [monitors] unknown_threshold and unknown_crops as they are now. */
  grouping: { threshold: number; crops: number };
}

/**
 * Where announced unknown tracks are grouped into unknown visitors (implemented by the events layer's
 * UnknownService). `enter` runs on the inference loop and must answer at once.
 */
export interface UnknownVisitors {
  /** The unknown_id this newly announced unknown track belongs to (a new one when nobody is near), or null. */
  enter(v: UnknownVisit): string | null;
  /** The track ended (its exit was pushed): its final template and best crops refine its unknown. */
  exit(v: UnknownVisit & { unknownId: string; crops: FaceCrop[]; reason: ExitReason | null }): void;
}

export interface TrackFacesOptions {
  /** Decide identities on the track's pooled template (false: every frame on its own). */
  trackIdentity: boolean;
  /** Frames kept per track ([monitors] track_frames). */
  bankSize: number;
  /** How far a new template must clear the current decision to change it ([monitors] track_hysteresis). */
  hysteresis: number;
  /** Grouping of unknown visitors; null when off for this monitor. */
  unknowns: UnknownVisitors | null;
  grouping: { threshold: number; crops: number };
  monitorId: string;
  collectionId: string;
  epoch: string;
}

/** The persons a template is compared with, best first (at most `k`, any similarity). */
export type RankFn = (embedding: Float32Array, k: number) => RankedMatch[];

interface TrackState {
  bank: TrackFrameBank<FaceCrop>;
  /** undefined: nothing decided yet; null: unknown. */
  decided: string | null | undefined;
  match: RankedMatch | null;
  basis: IdentityBasisT | null;
  unknownId: string | null;
}

/** Persons compared with a template: enough for the decided one and its runner-up to be among them. */
const RANKED = 3;
/** A sample crop is the face box grown by this fraction of its size on each side (the detector needs context). */
const CROP_MARGIN = 0.5;
/** Longest side of a kept crop; larger faces are averaged down by an integer factor. */
const CROP_MAX_SIDE = 320;

/**
 * The face of `box` (pixels) with CROP_MARGIN around it, clipped to the frame, averaged down by the smallest
 * integer factor that brings its longest side to CROP_MAX_SIDE or less. Null when nothing of it is inside.
 */
export function copyFaceCrop(
  frame: EventFrame,
  box: { x: number; y: number; width: number; height: number },
): Omit<FaceCrop, 'quality' | 'at'> | null {
  const mx = box.width * CROP_MARGIN,
    my = box.height * CROP_MARGIN;
  const left = Math.max(0, Math.floor(box.x - mx)),
    top = Math.max(0, Math.floor(box.y - my));
  const right = Math.min(frame.width, Math.ceil(box.x + box.width + mx)),
    bottom = Math.min(frame.height, Math.ceil(box.y + box.height + my));
  if (right - left < 2 || bottom - top < 2) return null;
  const f = Math.max(1, Math.ceil(Math.max(right - left, bottom - top) / CROP_MAX_SIDE));
  const width = Math.floor((right - left) / f),
    height = Math.floor((bottom - top) / f);
  const data = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++)
      for (let c = 0; c < 3; c++) {
        let sum = 0;
        for (let dy = 0; dy < f; dy++)
          for (let dx = 0; dx < f; dx++)
            sum += frame.data[((top + y * f + dy) * frame.width + left + x * f + dx) * 3 + c]!;
        data[(y * width + x) * 3 + c] = Math.round(sum / (f * f));
      }
  return { data, width, height };
}

/**
 * The faces of one monitor session over time: each track's frame bank, its identity decided on the pooled
 * template (track_identity), and the unknown visitor an announced unknown track belongs to. The tracker
 * calls `decide` for every face once it knows the face's track; MonitorActivity tells it about the frame
 * (`frame`), the events it emits (`entered` / `exited`) and the tracks still open (`retain`).
 */
export class TrackFaces {
  private readonly tracks = new Map<string, TrackState>();
  private current: { threshold: number; rank: RankFn | null; frame: EventFrame | null } = {
    threshold: 1,
    rank: null,
    frame: null,
  };

  constructor(private readonly o: TrackFacesOptions) {}

  /** The frame being tracked now: its threshold, how to rank a template, and its pixels (for crops). */
  frame(threshold: number, rank: RankFn | null, frame: EventFrame | null): void {
    this.current = { threshold, rank, frame };
  }

  private state(trackId: string): TrackState {
    let s = this.tracks.get(trackId);
    if (!s) {
      s = { bank: new TrackFrameBank(this.o.bankSize), decided: undefined, match: null, basis: null, unknownId: null };
      this.tracks.set(trackId, s);
    }
    return s;
  }

  /**
   * A face of `trackId` in this frame: its embedding joins the bank when it is among the best frames, and with
   * track_identity the track is identified again on the new template; the face then carries the track's
   * identity (and its basis). Liveness-blocked faces are left as they are.
   */
  readonly decide = (trackId: string, det: Detection<FacePayload>, now: number): Detection<FacePayload> => {
    if (det.kind === 'liveness_blocked') return det;
    const s = this.state(trackId);
    const p = det.payload;
    const quality = p.face.quality.score;
    const kept =
      p.embedding !== undefined &&
      s.bank.offer({ embedding: p.embedding, quality, at: now }, () => this.crop(p, quality, now));
    if (!this.o.trackIdentity || !this.current.rank) {
      if (p.embedding !== undefined)
        s.basis = {
          method: 'frame',
          frames: 1,
          frames_seen: s.bank.seen,
          best_quality: quality,
          similarity: p.similarity,
          runner_up: null,
          margin: null,
        };
      return s.basis ? { ...det, payload: { ...p, identity: s.basis } } : det;
    }
    if (kept || s.decided === undefined) {
      if (s.bank.frames.length === 0) return det; // nothing embedded yet (a reused identity): as the frame says
      const ranked = this.current.rank(poolTemplate(s.bank.frames), RANKED);
      const people = ranked.map((r) => ({ personId: r.person.id, similarity: r.similarity }));
      s.decided = decideIdentity(s.decided, people, this.current.threshold, this.o.hysteresis);
      s.match = s.decided === null ? null : (ranked.find((r) => r.person.id === s.decided) ?? null);
      const { runnerUp: other, margin } = runnerUp(s.decided, people);
      s.basis = {
        method: 'track',
        frames: s.bank.frames.length,
        frames_seen: s.bank.seen,
        best_quality: s.bank.bestQuality,
        similarity: s.match ? round6(s.match.similarity) : null,
        runner_up: other ? { person_id: other.personId, similarity: round6(other.similarity) } : null,
        margin,
      };
    } else if (s.basis) s.basis = { ...s.basis, frames_seen: s.bank.seen };
    const m = s.match;
    return {
      ...det,
      kind: m ? 'matched' : 'unknown',
      personId: m?.person.id ?? null,
      payload: {
        ...p,
        person: m ? m.person : null,
        similarity: m ? m.similarity : null,
        matched_face_id: m?.matched_face_id ?? null,
        identity: s.basis!,
      },
    };
  };

  private crop(p: FacePayload, quality: number, at: number): FaceCrop | null {
    if (!this.o.unknowns || !this.current.frame) return null;
    const c = copyFaceCrop(this.current.frame, p.face.bbox.pixels);
    return c && { ...c, quality, at };
  }

  /** The fields every event of this track carries (unknown_id of an announced unknown). */
  unknownId(trackId: string): string | null {
    return this.tracks.get(trackId)?.unknownId ?? null;
  }

  private visit(trackId: string, s: TrackState, at: number): UnknownVisit | null {
    if (!s.bank.frames.length) return null;
    return {
      monitorId: this.o.monitorId,
      collectionId: this.o.collectionId,
      trackId,
      streamEpoch: this.o.epoch,
      at,
      template: poolTemplate(s.bank.frames),
      quality: s.bank.bestQuality,
      grouping: this.o.grouping,
    };
  }

  /** Before an enter is pushed: an unknown track is assigned its unknown visitor. */
  entered(e: TrackEvent<FacePayload>, at: number): void {
    const s = this.tracks.get(e.trackId);
    if (!s || e.type !== 'unknown_enter' || !this.o.unknowns) return;
    const v = this.visit(e.trackId, s, at);
    s.unknownId = v ? this.o.unknowns.enter(v) : null;
  }

  /** After an exit was pushed: an unknown's visit ends with the track's final template and best crops. */
  exited(e: TrackEvent<FacePayload>, at: number): void {
    const s = this.tracks.get(e.trackId);
    if (!s || !s.unknownId) return;
    const v = this.visit(e.trackId, s, at);
    if (v && this.o.unknowns) {
      const crops = s.bank.frames.map((f) => f.crop).filter((c): c is FaceCrop => c !== null);
      this.o.unknowns.exit({ ...v, unknownId: s.unknownId, crops, reason: e.reason ?? null });
    }
    s.unknownId = null;
  }

  /** Forgets the tracks that are no longer open. */
  retain(open: Set<string>): void {
    for (const id of this.tracks.keys()) if (!open.has(id)) this.tracks.delete(id);
  }

  get size(): number {
    return this.tracks.size;
  }
}

const round6 = (v: number) => Math.round(v * 1e6) / 1e6;

/** [monitors] track_identity, track_frames, track_hysteresis, group_unknowns, unknown_threshold, unknown_crops. */
export interface TrackFacesDefaults {
  trackIdentity: boolean;
  bankSize: number;
  hysteresis: number;
  groupUnknowns: boolean;
  unknownThreshold: number;
  unknownCrops: number;
}

/**
 * A session's TrackFaces: the box's defaults with the monitor's overrides (faces.track_identity,
 * faces.group_unknowns; null follows the box). Null when neither track identity nor grouping is on.
 */
export function trackFacesFor(
  record: MonitorRecord,
  d: TrackFacesDefaults | undefined,
  unknowns: UnknownVisitors | null,
  epoch: string,
): TrackFaces | null {
  if (!d) return null;
  const faces: Partial<MonitorFacesT> = record.faces ?? {};
  const trackIdentity = faces.track_identity ?? d.trackIdentity;
  const group = (faces.group_unknowns ?? d.groupUnknowns) && unknowns !== null;
  if (!trackIdentity && !group) return null;
  return new TrackFaces({
    trackIdentity,
    bankSize: d.bankSize,
    hysteresis: d.hysteresis,
    unknowns: group ? unknowns : null,
    grouping: { threshold: d.unknownThreshold, crops: d.unknownCrops },
    monitorId: record.id,
    collectionId: record.collection_id,
    epoch,
  });
}
