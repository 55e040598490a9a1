import type { Db } from '../store/database.js';
import type { CredentialCipher } from '../store/credentialCipher.js';
import { MonitorClips, MonitorFaces, MonitorMotion, type MonitorZoneT, type PolygonT } from '../contract/monitors.js';
import type { MonitorRecord } from './model.js';

interface MonitorRow {
  id: string;
  name: string;
  description: string;
  enabled: number;
  source_url_encrypted: string;
  collection_id: string;
  inference_fps: number;
  match_threshold: number | null;
  event_buffer_size: number;
  confirm_frames: number;
  absence_timeout_seconds: number;
  cooldown_seconds: number;
  emit_unknown: number;
  preview_enabled: number;
  zones_json: string;
  motion_mask_json: string;
  face_mask_json: string;
  min_face_size: number;
  motion_json: string;
  faces_json: string;
  detect_url_encrypted: string | null;
  clips_json: string;
  created_at: string;
  updated_at: string;
  box_id: string | null;
}

/** The detect URL's ciphertext is bound to its monitor and role: it cannot be swapped with the main URL's. */
const detectAad = (id: string) => `monitor:${id}:detect`;

/** SQL for monitors. The URL is encrypted on the way in and decrypted on the way out; nothing else sees the ciphertext. */
export class MonitorStore {
  constructor(
    private readonly db: Db,
    private readonly cipher: CredentialCipher,
  ) {}

  private fromRow(r: MonitorRow): MonitorRecord {
    return {
      id: r.id,
      name: r.name,
      description: r.description,
      enabled: r.enabled === 1,
      url: this.cipher.decrypt(r.source_url_encrypted, `monitor:${r.id}`),
      collection_id: r.collection_id,
      inference_fps: r.inference_fps,
      match_threshold: r.match_threshold,
      event_buffer_size: r.event_buffer_size,
      event_policy: {
        confirm_frames: r.confirm_frames,
        absence_timeout_seconds: r.absence_timeout_seconds,
        cooldown_seconds: r.cooldown_seconds,
        emit_unknown: r.emit_unknown === 1,
      },
      preview_enabled: r.preview_enabled === 1,
      zones: JSON.parse(r.zones_json) as MonitorZoneT[],
      motion_mask: JSON.parse(r.motion_mask_json) as PolygonT[],
      face_mask: JSON.parse(r.face_mask_json) as PolygonT[],
      min_face_size: r.min_face_size,
      // Fields a later version adds get their defaults (null: follow [monitors.motion]).
      motion: MonitorMotion.parse(JSON.parse(r.motion_json)),
      faces: MonitorFaces.parse(JSON.parse(r.faces_json)),
      detect_url: r.detect_url_encrypted === null ? null : this.cipher.decrypt(r.detect_url_encrypted, detectAad(r.id)),
      clips: MonitorClips.parse(JSON.parse(r.clips_json)),
      created_at: r.created_at,
      updated_at: r.updated_at,
      box_id: r.box_id ?? '',
    };
  }

  private toRow(m: MonitorRecord): MonitorRow {
    return {
      id: m.id,
      name: m.name,
      description: m.description,
      enabled: m.enabled ? 1 : 0,
      source_url_encrypted: this.cipher.encrypt(m.url, `monitor:${m.id}`),
      collection_id: m.collection_id,
      inference_fps: m.inference_fps,
      match_threshold: m.match_threshold,
      event_buffer_size: m.event_buffer_size,
      confirm_frames: m.event_policy.confirm_frames,
      absence_timeout_seconds: m.event_policy.absence_timeout_seconds,
      cooldown_seconds: m.event_policy.cooldown_seconds,
      emit_unknown: m.event_policy.emit_unknown ? 1 : 0,
      preview_enabled: m.preview_enabled ? 1 : 0,
      zones_json: JSON.stringify(m.zones),
      motion_mask_json: JSON.stringify(m.motion_mask),
      face_mask_json: JSON.stringify(m.face_mask),
      min_face_size: m.min_face_size,
      motion_json: JSON.stringify(m.motion),
      faces_json: JSON.stringify(m.faces ?? {}),
      detect_url_encrypted: m.detect_url ? this.cipher.encrypt(m.detect_url, detectAad(m.id)) : null,
      clips_json: JSON.stringify(m.clips ?? {}),
      created_at: m.created_at,
      updated_at: m.updated_at,
      box_id: m.box_id,
    };
  }

  get(id: string): MonitorRecord | null {
    const r = this.db.prepare('SELECT * FROM monitors WHERE id = ?').get(id) as MonitorRow | undefined;
    return r ? this.fromRow(r) : null;
  }

  list(after: string | null, limit: number): MonitorRecord[] {
    return (
      this.db.prepare('SELECT * FROM monitors WHERE id > ? ORDER BY id LIMIT ?').all(after ?? '', limit) as MonitorRow[]
    ).map((r) => this.fromRow(r));
  }

  /** Enabled monitors in id order, each decrypted separately so one bad row cannot hide the others. */
  enabledIds(): string[] {
    return (this.db.prepare('SELECT id FROM monitors WHERE enabled = 1 ORDER BY id').all() as { id: string }[]).map(
      (r) => r.id,
    );
  }

  /** Rows from before box identity (box_id NULL) become this box's: a single box keeps running all its monitors. */
  claimUnowned(boxId: string): number {
    return this.db.prepare('UPDATE monitors SET box_id = ? WHERE box_id IS NULL').run(boxId).changes;
  }

  /** False when the id is taken. */
  insert(m: MonitorRecord): boolean {
    const r = this.db
      .prepare(
        `INSERT INTO monitors (id, name, description, enabled, source_url_encrypted, collection_id, inference_fps,
      match_threshold, event_buffer_size, confirm_frames, absence_timeout_seconds, cooldown_seconds, emit_unknown, preview_enabled,
      zones_json, motion_mask_json, face_mask_json, min_face_size, motion_json, faces_json, detect_url_encrypted, clips_json, created_at, updated_at, box_id)
      VALUES (@id, @name, @description, @enabled, @source_url_encrypted, @collection_id, @inference_fps, @match_threshold, @event_buffer_size,
      @confirm_frames, @absence_timeout_seconds, @cooldown_seconds, @emit_unknown, @preview_enabled,
      @zones_json, @motion_mask_json, @face_mask_json, @min_face_size, @motion_json, @faces_json, @detect_url_encrypted, @clips_json, @created_at, @updated_at, @box_id)
      ON CONFLICT (id) DO NOTHING`,
      )
      .run(this.toRow(m));
    return r.changes === 1;
  }

  update(m: MonitorRecord): void {
    this.db
      .prepare(
        `UPDATE monitors SET name = @name, description = @description, enabled = @enabled, source_url_encrypted = @source_url_encrypted,
      collection_id = @collection_id, inference_fps = @inference_fps, match_threshold = @match_threshold, event_buffer_size = @event_buffer_size,
      confirm_frames = @confirm_frames, absence_timeout_seconds = @absence_timeout_seconds, cooldown_seconds = @cooldown_seconds,
      emit_unknown = @emit_unknown, preview_enabled = @preview_enabled, zones_json = @zones_json, motion_mask_json = @motion_mask_json,
      face_mask_json = @face_mask_json, min_face_size = @min_face_size, motion_json = @motion_json, faces_json = @faces_json,
      detect_url_encrypted = @detect_url_encrypted, clips_json = @clips_json,
      updated_at = @updated_at WHERE id = @id`,
      )
      .run(this.toRow(m));
  }

  delete(id: string): boolean {
    return this.db.prepare('DELETE FROM monitors WHERE id = ?').run(id).changes === 1;
  }

  /** Whether any monitor references the collection (collection delete answers 409 collection_in_use). */
  referencesCollection(collectionId: string): boolean {
    return this.db.prepare('SELECT 1 FROM monitors WHERE collection_id = ? LIMIT 1').get(collectionId) !== undefined;
  }
}
