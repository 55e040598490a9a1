-- Zones, masks and the motion gate per monitor (issue 41). Polygons are JSON arrays of [x, y] points in
-- 0..1 of the frame; motion_json holds the monitor's overrides of [monitors.motion] (null fields follow it).
ALTER TABLE monitors ADD COLUMN zones_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE monitors ADD COLUMN motion_mask_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE monitors ADD COLUMN face_mask_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE monitors ADD COLUMN min_face_size INTEGER NOT NULL DEFAULT 0;
ALTER TABLE monitors ADD COLUMN motion_json TEXT NOT NULL DEFAULT '{}';
-- Events: the zones the track's face had been in (JSON array of names; NULL on events without a track and on
-- events recorded before this migration), and a zone event's zone.
ALTER TABLE events ADD COLUMN zones_json TEXT;
ALTER TABLE events ADD COLUMN zone TEXT;
