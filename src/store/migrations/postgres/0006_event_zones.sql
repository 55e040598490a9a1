-- Zones in the fleet's history (issue 41), as SQLite's events.zones_json and events.zone (0020).
ALTER TABLE events ADD COLUMN zones_json TEXT;
ALTER TABLE events ADD COLUMN zone TEXT;
