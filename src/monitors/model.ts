import type {
  EventPolicy,
  MonitorClipsT,
  MonitorFacesT,
  MonitorMotionT,
  MonitorZoneT,
  PolygonT,
} from '../contract/monitors.js';

/** A stored monitor with its plaintext URL (decrypted in memory only). */
export interface MonitorRecord {
  id: string;
  name: string;
  description: string;
  enabled: boolean;
  url: string;
  collection_id: string;
  inference_fps: number;
  match_threshold: number | null;
  event_buffer_size: number;
  event_policy: EventPolicy;
  preview_enabled: boolean;
  zones: MonitorZoneT[];
  motion_mask: PolygonT[];
  face_mask: PolygonT[];
  min_face_size: number;
  /** Overrides of [monitors.motion] (null: the box's setting). */
  motion: MonitorMotionT;
  /** Overrides of [monitors] track_identity and group_unknowns (null or absent: the box's setting). */
  faces?: MonitorFacesT;
  /** The detect sub-stream (plaintext in memory, encrypted at rest as `url` is); null or absent: `url` only. */
  detect_url?: string | null;
  /** Overrides of [monitors.clips] (null or absent: the box's setting). */
  clips?: MonitorClipsT;
  created_at: string;
  updated_at: string;
  /** The box that runs it ([server] box_id of the box it was created on). */
  box_id: string;
}
