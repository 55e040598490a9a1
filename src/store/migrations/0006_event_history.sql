-- The durable monitor event history (the RAM ring of /v1/monitors/{id}/events stays as it was).
-- seq is the history order (the order the monitors pushed their events). Person, collection and monitor
-- are plain values, not foreign keys: a monitor's events outlive it; a person's events go with the person
-- (trigger below). Snapshot JPEGs are files under <data_dir>/events/; `snapshot_path` is their base name.
CREATE TABLE events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  type TEXT NOT NULL,
  monitor_id TEXT NOT NULL,
  collection_id TEXT,
  person_id TEXT,
  person_name TEXT,
  person_external_id TEXT,
  similarity REAL,
  threshold REAL,
  matched_face_id TEXT,
  track_id TEXT,
  stream_epoch TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  occurred_at TEXT NOT NULL,
  occurred_ms INTEGER NOT NULL,
  face_json TEXT,
  error_json TEXT,
  -- none: the event has no picture (monitor_error/recovered, or snapshots off); pending: being written;
  -- ready: both files exist; failed: could not be made; expired: removed by the bytes retention.
  snapshot TEXT NOT NULL DEFAULT 'none' CHECK (snapshot IN ('none', 'pending', 'ready', 'failed', 'expired')),
  snapshot_path TEXT,
  snapshot_bytes INTEGER NOT NULL DEFAULT 0,
  snapshot_width INTEGER,
  snapshot_height INTEGER,
  crop_width INTEGER,
  crop_height INTEGER
);
CREATE INDEX events_monitor ON events (monitor_id, seq);
CREATE INDEX events_person ON events (collection_id, person_id, seq);
CREATE INDEX events_type ON events (type, seq);
CREATE INDEX events_time ON events (occurred_ms);
CREATE INDEX events_snapshots ON events (seq) WHERE snapshot = 'ready';

-- Snapshot files whose event row is gone (deleted, retention, person deleted): removed from disk by the
-- background sweeper, so a crash between the row delete and the unlink leaves no orphan.
CREATE TABLE event_file_trash (
  path TEXT PRIMARY KEY
);

-- Deleting a person deletes its events and their pictures (a collection delete cascades to its persons,
-- and cascades fire this trigger too).
CREATE TRIGGER events_person_deleted AFTER DELETE ON persons BEGIN
  INSERT OR IGNORE INTO event_file_trash (path)
    SELECT snapshot_path FROM events WHERE collection_id = OLD.collection_id AND person_id = OLD.id AND snapshot_path IS NOT NULL;
  DELETE FROM events WHERE collection_id = OLD.collection_id AND person_id = OLD.id;
END;

-- Counters that must survive restarts (MQTT queue overflow, events dropped by retention).
CREATE TABLE event_counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
