import type { HistoryEventT } from '../contract/events.js';
import { SYNTHETIC_EXIT_REASON } from '../contract/monitors.js';
import type { ClipRow, StoredEvent } from './historyStore.js';

/** The event's clip as the API shows it: from its joined row (r.clip), or what is known before (recording). */
function clipView(r: StoredEvent, base: string): HistoryEventT['clip'] {
  if (!r.clip_id) return null;
  const c: ClipRow | null = r.clip ?? null;
  const status = c?.status ?? 'recording';
  return {
    id: r.clip_id,
    status,
    url: status === 'ready' || status === 'recording' ? `${base}/clip.mp4` : null,
    started_at: c ? new Date(c.started_ms).toISOString() : null,
    duration_ms: c?.duration_ms ?? 0,
    bytes: c?.bytes ?? 0,
    end_reason: c?.end_reason ?? null,
  };
}

/** A history row as the API, webhooks and MQTT show it. */
export function eventView(r: StoredEvent): HistoryEventT {
  const ready = r.snapshot === 'ready';
  const base = `/v1/events/${r.id}`;
  return {
    id: r.id,
    box_id: r.box_id,
    type: r.type,
    monitor_id: r.monitor_id,
    collection_id: r.collection_id,
    occurred_at: r.occurred_at,
    stream_epoch: r.stream_epoch,
    sequence: r.sequence,
    track_id: r.track_id,
    person: r.person_id ? { id: r.person_id, name: r.person_name, external_id: r.person_external_id } : null,
    similarity: r.similarity,
    threshold: r.threshold,
    matched_face_id: r.matched_face_id,
    face: r.face_json ? (JSON.parse(r.face_json) as HistoryEventT['face']) : null,
    error: r.error_json ? (JSON.parse(r.error_json) as HistoryEventT['error']) : null,
    reason: (r.reason ?? null) as HistoryEventT['reason'],
    zones: r.zones_json ? (JSON.parse(r.zones_json) as string[]) : null,
    zone: r.zone ?? null,
    unknown_id: r.unknown_id ?? null,
    identity: r.identity_json ? (JSON.parse(r.identity_json) as HistoryEventT['identity']) : null,
    synthetic: r.reason === SYNTHETIC_EXIT_REASON,
    snapshot: {
      status: r.snapshot,
      frame_url: ready || r.snapshot === 'pending' ? `${base}/snapshot.jpg` : null,
      crop_url: ready || r.snapshot === 'pending' ? `${base}/crop.jpg` : null,
      width: r.snapshot_width,
      height: r.snapshot_height,
      crop_width: r.crop_width,
      crop_height: r.crop_height,
      bytes: r.snapshot_bytes,
    },
    clip: clipView(r, base),
  };
}
