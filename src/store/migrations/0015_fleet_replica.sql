-- Fleet mode (issue 16): in postgres mode this file is the box's replica of the gallery. change_revision
-- is the PostgreSQL change-log revision the replica has applied for the collection (0 in sqlite mode,
-- where it is unused); the follower catches up from it after any disconnect without a full rebuild.
ALTER TABLE collections ADD COLUMN change_revision INTEGER NOT NULL DEFAULT 0;
