-- Scrape runs as datasets: two more statuses (waiting_for_rate_limit while the upstream's rate limit
-- holds a run, cancelled), when a waiting run resumes, and a cancel asked for. The status CHECK cannot be
-- altered in place, so the table is rebuilt (nothing references scrape_runs). Items move out of
-- result_json into scrape_items, one row each in delivery order, so they can be paged with a cursor and
-- streamed out without loading a run whole; result_json keeps the sources and warnings.
CREATE TABLE scrape_runs_rebuilt (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'waiting_for_rate_limit', 'succeeded', 'partial', 'failed', 'cancelled')),
  request_json TEXT NOT NULL,
  period TEXT NOT NULL,
  reserved_units INTEGER NOT NULL DEFAULT 0 CHECK (reserved_units >= 0),
  billed_units INTEGER NOT NULL DEFAULT 0 CHECK (billed_units >= 0),
  item_count INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  result_json TEXT,
  result_purged_at TEXT,
  error_json TEXT,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT,
  reserved_reviews INTEGER NOT NULL DEFAULT 0 CHECK (reserved_reviews >= 0),
  billed_reviews INTEGER NOT NULL DEFAULT 0 CHECK (billed_reviews >= 0),
  resume_at TEXT,
  cancel_requested_at TEXT
);
INSERT INTO scrape_runs_rebuilt (id, workspace_id, kind, status, request_json, period, reserved_units, billed_units, item_count, attempts, result_json,
  result_purged_at, error_json, created_at, started_at, finished_at, reserved_reviews, billed_reviews)
SELECT id, workspace_id, kind, status, request_json, period, reserved_units, billed_units, item_count, attempts, result_json,
  result_purged_at, error_json, created_at, started_at, finished_at, reserved_reviews, billed_reviews FROM scrape_runs;
DROP TABLE scrape_runs;
ALTER TABLE scrape_runs_rebuilt RENAME TO scrape_runs;
CREATE INDEX scrape_runs_workspace ON scrape_runs(workspace_id, created_at DESC, id DESC);
CREATE INDEX scrape_runs_active ON scrape_runs(status) WHERE status IN ('queued', 'running', 'waiting_for_rate_limit');

-- `item_key` is the kind's de-duplication key (what the seen-set of only_new remembers); items moved here
-- from older runs have an empty key.
CREATE TABLE scrape_items (
  run_id TEXT NOT NULL REFERENCES scrape_runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  item_key TEXT NOT NULL,
  item_json TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

INSERT INTO scrape_items (run_id, seq, item_key, item_json)
SELECT r.id, CAST(j.key AS INTEGER), '', j.value FROM scrape_runs r, json_each(r.result_json, '$.items') j
WHERE r.result_json IS NOT NULL AND json_type(r.result_json, '$.items') = 'array';
UPDATE scrape_runs SET result_json = json_remove(result_json, '$.items') WHERE result_json IS NOT NULL AND json_type(result_json, '$.items') IS NOT NULL;
