-- Collections deleted in the background (issue 36): a large collection's row is deleted at once (it is gone
-- from every answer, its id free again), with foreign keys off for that one statement so its persons and
-- faces stay; they are deleted from here in short batches between requests, resumed after a restart.
-- A create of the same id waits for its purge (the rows still carry the id).
CREATE TABLE collection_purges (
  collection_id TEXT PRIMARY KEY,
  persons INTEGER NOT NULL,
  faces INTEGER NOT NULL,
  requested_at TEXT NOT NULL
);
