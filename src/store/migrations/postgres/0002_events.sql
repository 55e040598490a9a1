-- Fleet mode (issue 16): one event history for the fleet. Every box writes its events to its own SQLite
-- history first (the durable queue) and forwards them here; `id` (the event's uuid) is the key, so a
-- copy repeated after a crash or an outage is a no-op (ON CONFLICT DO NOTHING). Columns as SQLite's
-- events table (0006 + 0009); pictures stay on the recording box (snapshot_path is that box's file).
CREATE TABLE events (
  id TEXT PRIMARY KEY,
  box_id TEXT NOT NULL,
  box_seq BIGINT NOT NULL,
  type TEXT NOT NULL,
  monitor_id TEXT NOT NULL,
  collection_id TEXT,
  person_id TEXT,
  person_name TEXT,
  person_external_id TEXT,
  similarity DOUBLE PRECISION,
  threshold DOUBLE PRECISION,
  matched_face_id TEXT,
  track_id TEXT,
  stream_epoch TEXT NOT NULL,
  sequence BIGINT NOT NULL,
  occurred_at TEXT NOT NULL,
  occurred_ms BIGINT NOT NULL,
  face_json TEXT,
  error_json TEXT,
  snapshot TEXT NOT NULL DEFAULT 'none' CHECK (snapshot IN ('none', 'pending', 'ready', 'failed', 'expired')),
  snapshot_path TEXT,
  snapshot_bytes BIGINT NOT NULL DEFAULT 0,
  snapshot_width INTEGER,
  snapshot_height INTEGER,
  crop_width INTEGER,
  crop_height INTEGER,
  forwarded_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
-- The fleet list is newest first by occurrence (a box's backlog forwarded after an outage lands where
-- it happened, not on top); the cursor is (occurred_ms, id).
CREATE INDEX events_time ON events (occurred_ms DESC, id DESC);
CREATE INDEX events_box ON events (box_id, occurred_ms DESC, id DESC);
CREATE INDEX events_monitor ON events (monitor_id, occurred_ms DESC, id DESC);
CREATE INDEX events_person ON events (collection_id, person_id, occurred_ms DESC);
CREATE INDEX events_type ON events (type, occurred_ms DESC);

-- Deleting a person (or a collection, whose persons cascade) deletes the person's events fleet-wide, as
-- SQLite's events_person_deleted trigger does on each box. Per statement (transition table).
CREATE FUNCTION vigil_person_events_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM events e USING old_rows o WHERE e.collection_id = o.collection_id AND e.person_id = o.id;
  RETURN NULL;
END $$;
CREATE TRIGGER persons_events_removed AFTER DELETE ON persons REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION vigil_person_events_removed();

-- Fleet retention runs once per interval for the whole fleet: the box that takes the advisory lock and
-- finds the last run older than the interval runs it and records the time here.
CREATE TABLE event_retention (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  ran_at_ms BIGINT NOT NULL,
  box_id TEXT NOT NULL,
  deleted BIGINT NOT NULL DEFAULT 0
);

-- The fleet's monitor directory: every box publishes its own monitors here (no source URLs: those stay
-- encrypted on the box), so any box can list the whole fleet's monitors with their box and status. The
-- monitors themselves stay in each box's SQLite file (a box runs them with the database down).
-- reported_at tells a reader how fresh a box's rows are (a box that is off stops reporting).
CREATE TABLE fleet_monitors (
  box_id TEXT NOT NULL,
  id TEXT NOT NULL,
  name TEXT NOT NULL,
  enabled BOOLEAN NOT NULL,
  collection_id TEXT NOT NULL,
  inference_fps DOUBLE PRECISION NOT NULL,
  preview_enabled BOOLEAN NOT NULL,
  status TEXT NOT NULL,
  connected BOOLEAN NOT NULL,
  last_frame_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  reported_at TEXT NOT NULL,
  PRIMARY KEY (box_id, id)
);
