-- The per-workspace seen-set of `only_new` runs: the key of every item delivered to a workspace, per
-- scraper kind, with when it was last delivered. Bounded by [scrapers] seen_items_per_kind: past it the
-- least recently delivered keys are forgotten (such an item can be delivered, and billed, again).
CREATE TABLE scrape_seen_items (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  item_key TEXT NOT NULL,
  seen_at TEXT NOT NULL,
  PRIMARY KEY (workspace_id, kind, item_key)
) WITHOUT ROWID;
CREATE INDEX scrape_seen_items_age ON scrape_seen_items(workspace_id, kind, seen_at, item_key);
