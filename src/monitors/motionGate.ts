import type { VigilConfig } from '../config/schema.js';
import type { MonitorRecord } from './model.js';
import { MotionDetector, type MotionSettings, type NormBox } from './motionDetector.js';
import { rasterizePolygons, type Polygon } from './zones.js';

/** [monitors.motion]. */
export type MotionDefaults = VigilConfig['monitors']['motion'];
/** More than this share of the motion frame moving at once is a lighting change (Frigate's lightning_threshold). */
const LIGHTNING_THRESHOLD = 0.8;

/** A monitor's gate settings: its overrides (null: the box's) over [monitors.motion]. */
export function gateSettings(record: Pick<MonitorRecord, 'motion' | 'motion_mask'>, d: MotionDefaults): GateSettings {
  const m = record.motion;
  return {
    enabled: m.gate ?? d.gate,
    threshold: m.threshold ?? d.threshold,
    minArea: m.min_area ?? d.min_area,
    keepaliveMs: (m.keepalive_seconds ?? d.keepalive_seconds) * 1000,
    frameAlpha: d.frame_alpha,
    improveContrast: d.improve_contrast,
    lightningThreshold: LIGHTNING_THRESHOLD,
    offDelayMs: d.off_delay_seconds * 1000,
    regions: d.regions,
    motionMask: record.motion_mask,
  };
}

/** How the gate decides (the effective [monitors.motion] settings with the monitor's overrides). */
export interface GateSettings extends MotionSettings {
  /** Gate the face detector by motion; false runs it on every sampled frame (motion is still reported). */
  enabled: boolean;
  /** With nothing moving, the detector still runs this often (a face that appeared without motion). */
  keepaliveMs: number;
  /** Motion stays "active" (state, MQTT) this long after the last moving frame. */
  offDelayMs: number;
  /** Run the detector on the moving region (and the tracked faces) only, when it is small enough. */
  regions: boolean;
  motionMask: Polygon[];
}

/** An open track, as the gate sees it. */
export interface GateTrack {
  box: NormBox;
  confirmed: boolean;
  /** Liveness-blocked faces never confirm: they do not hold the gate open. */
  blocked: boolean;
}

export type GateReason = 'ungated' | 'calibrating' | 'motion' | 'confirming' | 'keepalive';
export type GateDecision =
  | { infer: true; reason: GateReason; region: NormBox | null }
  | { infer: false; /** When the keep-alive falls due (wall ms). */ dueAt: number };

/** A region covering more than this share of the frame is not worth cropping: the whole frame is inferred. */
export const MAX_REGION_SHARE = 0.5;
/** Padding around a motion box, as a share of its longer side (its blob is coarse: 8 px of a 1280 px frame per motion pixel). */
const MOTION_PAD = 0.25;
/** Padding around a tracked face's last box, as a share of its longer side: where it can be one frame later. */
const TRACK_PAD = 1;
/** At least this much padding (share of the frame), so a small box keeps the detector's context. */
const MIN_PAD = 0.03;

const pad = (b: NormBox, share: number): NormBox => {
  const p = Math.max(MIN_PAD, share * Math.max(b[2], b[3]));
  return [b[0] - p, b[1] - p, b[2] + 2 * p, b[3] + 2 * p];
};

/**
 * The one region the detector runs on: the padded motion boxes and tracked faces together, clamped to the
 * frame; null (the whole frame) when that is more than MAX_REGION_SHARE of it, or when there is nothing.
 */
export function regionOfInterest(motion: NormBox[], tracks: NormBox[]): NormBox | null {
  const boxes = [...motion.map((b) => pad(b, MOTION_PAD)), ...tracks.map((b) => pad(b, TRACK_PAD))];
  if (!boxes.length) return null;
  const x0 = Math.max(0, Math.min(...boxes.map((b) => b[0]))),
    y0 = Math.max(0, Math.min(...boxes.map((b) => b[1])));
  const x1 = Math.min(1, Math.max(...boxes.map((b) => b[0] + b[2]))),
    y1 = Math.min(1, Math.max(...boxes.map((b) => b[1] + b[3])));
  if (!(x1 > x0 && y1 > y0) || (x1 - x0) * (y1 - y0) > MAX_REGION_SHARE) return null;
  return [x0, y0, x1 - x0, y1 - y0];
}

/**
 * Whether to run the detector on the newest frame, and where. In order:
 * - gating off, or no motion frames (a pipeline without the motion branch): every frame, the whole frame;
 * - the detector is (re)learning the scene (a lighting change, or so much moving that it cannot settle): it
 *   cannot tell what moves, so every frame, the whole frame, as without the gate;
 * - motion since the last inference: now, on the moving region (and the open tracks) when regions are on;
 * - a track waiting for confirmation: every frame, as without the gate (confirmation is not slowed down);
 * - the keep-alive: the whole frame every keepalive, and while tracks are open at least twice per absence
 *   timeout, so a face that stands still keeps its track (and its identity) instead of timing out;
 * - else skip, until the keep-alive is due (`dueAt`) or motion comes.
 */
export function gateDecision(i: {
  enabled: boolean;
  available: boolean;
  calibrating: boolean;
  motion: NormBox[] | null;
  tracks: GateTrack[];
  now: number;
  lastInferenceAt: number | null;
  keepaliveMs: number;
  absenceMs: number;
  regions: boolean;
}): GateDecision {
  if (!i.enabled || !i.available) return { infer: true, reason: 'ungated', region: null };
  if (i.calibrating) return { infer: true, reason: 'calibrating', region: null };
  const trackBoxes = i.tracks.map((t) => t.box);
  if (i.motion)
    return { infer: true, reason: 'motion', region: i.regions ? regionOfInterest(i.motion, trackBoxes) : null };
  if (i.tracks.some((t) => !t.confirmed && !t.blocked))
    return { infer: true, reason: 'confirming', region: i.regions ? regionOfInterest([], trackBoxes) : null };
  const every = i.tracks.length ? Math.min(i.keepaliveMs, i.absenceMs / 2) : i.keepaliveMs;
  const dueAt = i.lastInferenceAt === null ? i.now : i.lastInferenceAt + every;
  if (i.now >= dueAt) return { infer: true, reason: 'keepalive', region: null };
  return { infer: false, dueAt };
}

/** The gate's counters and motion state (the monitor state's `motion`). */
export interface GateStats {
  available: boolean;
  active: boolean;
  calibrating: boolean;
  regions: NormBox[];
  lastMotionAt: number | null;
  framesAnalysed: number;
  motionFrames: number;
  skipped: number;
  byReason: Record<GateReason, number>;
  regionInferences: number;
}

/**
 * One monitor's motion gate: a MotionDetector over the motion frames as they arrive, the motion seen since
 * the last inference (which the inference loop takes with it), the active/idle state with its off delay
 * (`onActive` is told each change: the MQTT motion topic), and the counters.
 */
export class MotionGate {
  private settings: GateSettings;
  private readonly detector: MotionDetector;
  private pending: NormBox[] | null = null;
  private last: { regions: NormBox[]; calibrating: boolean } = { regions: [], calibrating: true };
  private lastMotionAt: number | null = null;
  private active = false;
  private available = false;
  private framesAnalysed = 0;
  private motionFrames = 0;
  private skipped = 0;
  private lastSkipAt = -Infinity;
  private regionInferences = 0;
  private readonly byReason: Record<GateReason, number> = {
    ungated: 0,
    calibrating: 0,
    motion: 0,
    confirming: 0,
    keepalive: 0,
  };
  /** Frames analysed since the detector started learning the scene (its first frame is always one). */
  private calibratingFrames = 0;

  constructor(
    settings: GateSettings,
    private readonly onActive: (active: boolean) => void = () => undefined,
  ) {
    this.settings = settings;
    this.detector = new MotionDetector(settings, this.maskFor(settings.motionMask));
  }

  private maskFor(polys: Polygon[]) {
    return (w: number, h: number) => rasterizePolygons(polys, w, h);
  }

  /** Settings apply from the next frame (a new motion mask restarts the detector's calibration). */
  configure(settings: GateSettings): void {
    const maskChanged = JSON.stringify(settings.motionMask) !== JSON.stringify(this.settings.motionMask);
    this.settings = settings;
    this.detector.configure(settings, maskChanged ? this.maskFor(settings.motionMask) : undefined);
  }

  get enabled(): boolean {
    return this.settings.enabled;
  }

  /** One motion frame (valid during this call only). */
  observe(grey: Uint8Array, w: number, h: number, now: number): void {
    this.available = true;
    this.framesAnalysed++;
    const r = this.detector.detect(grey, w, h);
    this.calibratingFrames = r.calibrating ? this.calibratingFrames + 1 : 0;
    this.last = { regions: r.regions, calibrating: r.calibrating };
    if (r.regions.length) {
      this.motionFrames++;
      this.lastMotionAt = now;
      this.pending = [...(this.pending ?? []), ...r.regions];
    }
    this.tick(now);
  }

  /** The off delay: called on every frame and loop turn. */
  tick(now: number): void {
    const active = this.lastMotionAt !== null && now - this.lastMotionAt < this.settings.offDelayMs;
    if (active === this.active) return;
    this.active = active;
    this.onActive(active);
  }

  /** The source disconnected: the next frames may be of another scene size; nothing is moving meanwhile. */
  reset(): void {
    this.pending = null;
  }

  decide(now: number, tracks: GateTrack[], lastInferenceAt: number | null, absenceMs: number): GateDecision {
    return gateDecision({
      enabled: this.settings.enabled,
      available: this.available,
      // The first frame of a (re)start is the scene itself, not a calibration to wait out.
      calibrating: this.last.calibrating && this.calibratingFrames > 1,
      motion: this.pending,
      tracks,
      now,
      lastInferenceAt,
      keepaliveMs: this.settings.keepaliveMs,
      absenceMs,
      regions: this.settings.regions,
    });
  }

  /** An inference starts: the motion seen so far is its motion. */
  inferring(reason: GateReason, region: NormBox | null): void {
    this.pending = null;
    this.byReason[reason]++;
    if (region) this.regionInferences++;
  }

  /** A frame the loop would have inferred without the gate; counted at most once per inference interval. */
  skippedOne(now: number, intervalMs: number): void {
    if (now - this.lastSkipAt < intervalMs) return;
    this.lastSkipAt = now;
    this.skipped++;
  }

  stats(): GateStats {
    return {
      available: this.available,
      active: this.active,
      calibrating: this.available && this.last.calibrating,
      regions: this.last.regions,
      lastMotionAt: this.lastMotionAt,
      framesAnalysed: this.framesAnalysed,
      motionFrames: this.motionFrames,
      skipped: this.skipped,
      byReason: { ...this.byReason },
      regionInferences: this.regionInferences,
    };
  }
}
