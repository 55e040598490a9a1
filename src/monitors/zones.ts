/**
 * Zones and masks of a monitor: polygons in normalised coordinates (0..1 of the frame, x right, y down).
 * Pure geometry (point in polygon, area, rasterising a mask onto the small motion frame), the rule that
 * drops a face (face_mask, min_face_size), and ZoneTracker: which zones each tracked face is in, with
 * inertia so a face on a zone's edge does not flicker in and out.
 */
import type { NormBox } from './motionDetector.js';

export { polygonArea } from '../contract/monitors.js';

export type Point = [number, number];
export type Polygon = Point[];
export interface Zone {
  name: string;
  polygon: Polygon;
  /** Consecutive processed frames the face's centre must be inside (or outside) before it enters (or leaves). */
  inertia: number;
}

/** Even-odd ray casting; a point exactly on an edge may fall either way. */
export function pointInPolygon(x: number, y: number, poly: Polygon): boolean {
  let inside = false;
  for (let i = 0, j = poly.length - 1; i < poly.length; j = i++) {
    const [xi, yi] = poly[i]!,
      [xj, yj] = poly[j]!;
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

export const inAnyPolygon = (p: Point, polys: Polygon[]): boolean => polys.some((q) => pointInPolygon(p[0], p[1], q));

/** 1 for each pixel of a w x h frame whose centre lies in any polygon; null when there is none. */
export function rasterizePolygons(polys: Polygon[], w: number, h: number): Uint8Array | null {
  if (!polys.length) return null;
  const out = new Uint8Array(w * h);
  for (let y = 0; y < h; y++) {
    const py = (y + 0.5) / h;
    for (let x = 0; x < w; x++) if (inAnyPolygon([(x + 0.5) / w, py], polys)) out[y * w + x] = 1;
  }
  return out;
}

export const boxCentre = (b: NormBox): Point => [b[0] + b[2] / 2, b[1] + b[3] / 2];

/**
 * Why a face is dropped before search and tracking, or null: its box centre lies in the face mask, or the
 * shorter side of its box (pixels of the frame inferred on) is below min_face_size.
 */
export function faceDropReason(
  box: NormBox,
  shortSidePx: number,
  faceMask: Polygon[],
  minFaceSize: number,
): 'face_mask' | 'min_face_size' | null {
  if (faceMask.length && inAnyPolygon(boxCentre(box), faceMask)) return 'face_mask';
  if (minFaceSize > 0 && shortSidePx < minFaceSize) return 'min_face_size';
  return null;
}

interface TrackZones {
  inside: Set<string>;
  /** Consecutive frames the centre disagreed with `inside`, per zone. */
  streak: Map<string, number>;
  /** Every zone the face has been in during its track (Frigate's entered_zones), in the order entered. */
  visited: string[];
}

/**
 * Which zones each track's face is in, from its box centre per processed frame. A zone is entered (or left)
 * once the centre has been inside (or outside) for the zone's inertia in consecutive observations. Knows
 * nothing of events: MonitorActivity turns the changes of announced tracks into zone_enter / zone_exit.
 */
export class ZoneTracker {
  private readonly tracks = new Map<string, TrackZones>();

  constructor(private readonly zones: Zone[]) {}

  /** The track's face centre in this frame; returns the zones it entered and left with it. */
  observe(trackId: string, centre: Point): { entered: string[]; left: string[] } {
    const entered: string[] = [],
      left: string[] = [];
    if (!this.zones.length) return { entered, left };
    let t = this.tracks.get(trackId);
    if (!t) {
      t = { inside: new Set(), streak: new Map(), visited: [] };
      this.tracks.set(trackId, t);
    }
    for (const z of this.zones) {
      const now = pointInPolygon(centre[0], centre[1], z.polygon);
      if (now === t.inside.has(z.name)) {
        t.streak.delete(z.name);
        continue;
      }
      const n = (t.streak.get(z.name) ?? 0) + 1;
      if (n < z.inertia) {
        t.streak.set(z.name, n);
        continue;
      }
      t.streak.delete(z.name);
      if (now) {
        t.inside.add(z.name);
        if (!t.visited.includes(z.name)) t.visited.push(z.name);
        entered.push(z.name);
      } else {
        t.inside.delete(z.name);
        left.push(z.name);
      }
    }
    return { entered, left };
  }

  /** The zones the track's face is in now, in the monitor's zone order. */
  inside(trackId: string): string[] {
    const t = this.tracks.get(trackId);
    return t ? this.zones.map((z) => z.name).filter((n) => t.inside.has(n)) : [];
  }

  visited(trackId: string): string[] {
    return [...(this.tracks.get(trackId)?.visited ?? [])];
  }

  /** The track is gone (ended or expired unconfirmed). */
  drop(trackId: string): void {
    this.tracks.delete(trackId);
  }

  /** Tracks not in `live` are forgotten (tracks that expired before they were confirmed leave no exit). */
  retain(live: Set<string>): void {
    for (const id of this.tracks.keys()) if (!live.has(id)) this.tracks.delete(id);
  }
}
