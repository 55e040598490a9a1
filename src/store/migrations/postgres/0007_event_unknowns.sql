-- Unknown visitors and the identity basis in the fleet's history (issue 42), as SQLite's events.unknown_id and
-- events.identity_json (0021). An unknown_id is its box's: each box groups the unknowns its cameras see.
ALTER TABLE events ADD COLUMN unknown_id TEXT;
ALTER TABLE events ADD COLUMN identity_json TEXT;
CREATE INDEX events_unknown ON events (box_id, unknown_id) WHERE unknown_id IS NOT NULL;
