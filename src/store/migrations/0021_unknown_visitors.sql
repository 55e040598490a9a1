-- Unknown visitors (issue 42). Unknown tracks are grouped by face into unknowns with stable ids. Visits,
-- cameras and first/last seen come from the event history (events.unknown_id), so the history's retention and
-- deletes apply to them; an unknown with no event left is deleted with its crops. Per box: a fleet box
-- groups what its own cameras see (the fleet history carries each box's unknown_id as recorded).
CREATE TABLE unknowns (
  id TEXT PRIMARY KEY,
  -- The recognition model of the templates (pack id + recognizer): only visits of the same model join.
  model TEXT NOT NULL,
  -- float32 weighted sum of the unit-length templates of its visits; the centroid is it renormalised.
  centroid BLOB NOT NULL,
  weight REAL NOT NULL,
  -- Creation order: the older of two merged unknowns keeps its id.
  ord INTEGER NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'dismissed', 'enrolled')),
  -- Enrolled: the person its crops became (the unknown stays, so its past events keep their id).
  enrolled_collection_id TEXT,
  enrolled_person_id TEXT,
  first_seen_ms INTEGER NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX unknowns_last_seen ON unknowns (last_seen_ms DESC, id);
-- The best sample crops of an unknown (JPEG files, 0600, under <data_dir>/events/unknowns/<unknown id>/).
CREATE TABLE unknown_crops (
  id TEXT PRIMARY KEY,
  unknown_id TEXT NOT NULL REFERENCES unknowns (id) ON DELETE CASCADE,
  path TEXT NOT NULL,
  quality REAL NOT NULL,
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  monitor_id TEXT NOT NULL,
  seen_ms INTEGER NOT NULL
);
CREATE INDEX unknown_crops_unknown ON unknown_crops (unknown_id, quality DESC);
-- An unknown merged into another: its id still leads to the one it joined.
CREATE TABLE unknown_aliases (
  id TEXT PRIMARY KEY,
  unknown_id TEXT NOT NULL REFERENCES unknowns (id) ON DELETE CASCADE
);
ALTER TABLE events ADD COLUMN unknown_id TEXT;
-- Why the face had its identity (IdentityBasis as JSON): frames used, best quality, runner-up margin.
ALTER TABLE events ADD COLUMN identity_json TEXT;
CREATE INDEX events_unknown ON events (unknown_id, seq) WHERE unknown_id IS NOT NULL;
-- Per monitor: overrides of [monitors] track_identity and group_unknowns (JSON; null fields follow the box).
ALTER TABLE monitors ADD COLUMN faces_json TEXT NOT NULL DEFAULT '{}';
