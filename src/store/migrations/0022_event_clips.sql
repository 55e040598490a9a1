-- Event clips (issue 41 item 3): MP4 files of a monitor's encoded stream around identity events, in the same
-- store as the event pictures (<data_dir>/events/snapshots/<day>/<clip id>.mp4, `path` its base name like
-- snapshot_path), pruned by the same retention (age, count, and max_snapshot_bytes counting pictures and clips
-- together) and removed through the same trash. One clip may serve several events (the enters and exits of the
-- tracks in view while it records); it goes when its last event goes (trigger below).
CREATE TABLE event_clips (
  id TEXT PRIMARY KEY,
  monitor_id TEXT NOT NULL,
  path TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  -- recording: being written; ready: whole; failed: nothing could be kept; expired: removed by the bytes retention.
  status TEXT NOT NULL CHECK (status IN ('recording', 'ready', 'failed', 'expired')),
  bytes INTEGER NOT NULL DEFAULT 0,
  duration_ms INTEGER NOT NULL DEFAULT 0,
  end_reason TEXT
);
ALTER TABLE events ADD COLUMN clip_id TEXT;
CREATE INDEX events_clip ON events (clip_id) WHERE clip_id IS NOT NULL;

CREATE TRIGGER events_clip_released AFTER DELETE ON events
  WHEN OLD.clip_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events WHERE clip_id = OLD.clip_id)
BEGIN
  INSERT OR IGNORE INTO event_file_trash (path)
    SELECT path FROM event_clips WHERE id = OLD.clip_id AND status IN ('ready', 'failed');
  DELETE FROM event_clips WHERE id = OLD.clip_id AND status != 'recording';
END;

-- Per monitor overrides of [monitors.clips] (null fields follow it).
ALTER TABLE monitors ADD COLUMN clips_json TEXT NOT NULL DEFAULT '{}';
