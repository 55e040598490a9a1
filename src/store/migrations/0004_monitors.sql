-- RTSP monitors. The source URL (it may hold camera credentials) is stored only AES-256-GCM encrypted;
-- events and frames are never persisted. A collection referenced by a monitor cannot be deleted.
CREATE TABLE monitors (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  source_url_encrypted TEXT NOT NULL,
  collection_id TEXT NOT NULL REFERENCES collections (id) ON DELETE RESTRICT,
  inference_fps REAL NOT NULL CHECK (inference_fps BETWEEN 0.1 AND 30),
  match_threshold REAL CHECK (match_threshold IS NULL OR match_threshold BETWEEN 0 AND 1),
  event_buffer_size INTEGER NOT NULL CHECK (event_buffer_size BETWEEN 10 AND 10000),
  confirm_frames INTEGER NOT NULL CHECK (confirm_frames BETWEEN 1 AND 100),
  absence_timeout_seconds REAL NOT NULL CHECK (absence_timeout_seconds BETWEEN 0.1 AND 300),
  cooldown_seconds REAL NOT NULL CHECK (cooldown_seconds BETWEEN 0 AND 3600),
  emit_unknown INTEGER NOT NULL CHECK (emit_unknown IN (0, 1)),
  preview_enabled INTEGER NOT NULL CHECK (preview_enabled IN (0, 1)),
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX monitors_collection ON monitors (collection_id);
