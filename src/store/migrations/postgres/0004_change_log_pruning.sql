-- Fleet mode (issue 16): pruning of the gallery change log. Every box's follower records, per collection
-- (and incarnation), the change_revision its replica has applied, with the time it last said so. Changes
-- at or below the lowest revision of the boxes seen within [store] change_log_retention_seconds are no
-- longer needed by anyone and are deleted; a box away for longer than that falls back to a full copy of
-- the collection when it returns (its revision is no longer in the log). gallery_maintenance keeps the
-- time of the last prune so one box per interval does it (under an advisory lock), not every box.
CREATE TABLE gallery_box_progress (
  box_id TEXT NOT NULL,
  collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  index_epoch TEXT NOT NULL,
  applied_revision BIGINT NOT NULL,
  seen_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, box_id)
);

CREATE TABLE gallery_maintenance (
  task TEXT PRIMARY KEY,
  last_run_at TIMESTAMPTZ NOT NULL,
  last_box_id TEXT NOT NULL,
  last_deleted BIGINT NOT NULL DEFAULT 0
);
