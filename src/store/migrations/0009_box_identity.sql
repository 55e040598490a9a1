-- Box identity (issue 16): monitors and events name the box ([server] box_id, default the hostname).
-- monitors.box_id is NULL on rows from before this migration; the first start stamps them with the
-- starting box, so a single box keeps running every monitor it had. A box starts only its own monitors
-- (fleet mode: a data dir restored onto another box does not run the first box's cameras).
ALTER TABLE monitors ADD COLUMN box_id TEXT;
-- events.box_id: the box that recorded the event ('' on old rows until the first start stamps them).
ALTER TABLE events ADD COLUMN box_id TEXT NOT NULL DEFAULT '';
CREATE INDEX events_box ON events (box_id, seq);
-- Fleet mode: the local history is the durable queue of the fleet history in PostgreSQL; forwarded_seq
-- is the highest local seq whose row (and those before it) PostgreSQL has (copies are idempotent by id).
CREATE TABLE event_forward (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  forwarded_seq INTEGER NOT NULL
);
-- The box_id this data dir runs as when [server] box_id is not set (sqlite mode): the hostname at the
-- first start, kept, so renaming a single box's host does not make its monitors another box's.
CREATE TABLE box_identity (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  box_id TEXT NOT NULL
);
