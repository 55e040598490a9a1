import type { PreviewFaceT } from '../contract/preview.js';

export interface OverlayFace {
  /** Normalised 0..1 box of the face in the frame. */
  box: { left: number; top: number; width: number; height: number };
  label: string;
  kind: 'matched' | 'unknown' | 'blocked';
  /** Landmarks in source pixels, drawn when given. */
  landmarks?: number[][];
}

/**
 * What one MJPEG part of the preview says about its frame (pure: unit-tested). `faces` is null for a frame
 * that was not analysed: nothing is drawn on it, whatever an earlier frame showed.
 */
export interface PartFrame {
  seq: number | null;
  faces: PreviewFaceT[] | null;
}

export function partFrame(headers: Record<string, string>): PartFrame {
  const seq = Number(headers['x-frame-seq']);
  let faces: PreviewFaceT[] | null = null;
  const raw = headers['x-faces'];
  if (raw !== undefined) {
    try {
      const parsed: unknown = JSON.parse(raw);
      faces = Array.isArray(parsed) ? (parsed as PreviewFaceT[]) : null;
    } catch {
      faces = null;
    }
  }
  return { seq: Number.isInteger(seq) && seq > 0 ? seq : null, faces };
}

/** One recognised face as the page lists it next to (or over) the video. */
export interface Recognised {
  name: string;
  kind: OverlayFace['kind'];
  similarity: number | null;
}

/** A frame's faces as boxes with labels, and as the list of names. */
export function overlayOf(faces: PreviewFaceT[]): { overlay: OverlayFace[]; recognised: Recognised[] } {
  const overlay: OverlayFace[] = [];
  const recognised: Recognised[] = [];
  for (const f of faces) {
    const kind = f.status === 'matched' ? 'matched' : f.status === 'unknown' ? 'unknown' : 'blocked';
    const name = f.person ? (f.person.name ?? f.person.id) : kind === 'blocked' ? 'Liveness check failed' : 'Unknown';
    const label = f.similarity !== null && f.person ? `${name} ${f.similarity.toFixed(2)}` : name;
    overlay.push({ box: f.box, label, kind });
    recognised.push({ name, kind, similarity: f.similarity });
  }
  return { overlay, recognised };
}
