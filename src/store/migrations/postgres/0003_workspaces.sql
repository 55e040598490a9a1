-- Fleet mode (issue 16): workspaces, their API keys, monthly usage, scrape runs with their items (the
-- datasets) and the only_new seen-set in PostgreSQL, shared by every box. The same tables and columns as
-- the SQLite migrations (0003, 0005, 0012, 0013), so one row shape serves both engines; timestamps stay
-- ISO-8601 text. Two additions: scrape_runs.box_id, the box that accepted the run and executes it (it
-- re-queues its own unfinished runs after a restart and delivers their webhooks from its local outbox),
-- and scrape_runs.announced_at, set once that box has queued the run's webhook in its local outbox (the
-- outbox is SQLite, so not in the finishing transaction): a run finished but not announced when the box
-- stopped is announced at its next start, so a finished run never lacks its webhook (at least once).
CREATE TABLE workspaces (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  monthly_item_quota INTEGER CHECK (monthly_item_quota IS NULL OR monthly_item_quota >= 0),
  monthly_review_quota INTEGER CHECK (monthly_review_quota IS NULL OR monthly_review_quota >= 0),
  created_at TEXT NOT NULL
);

CREATE TABLE workspace_keys (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  label TEXT NOT NULL DEFAULT '',
  prefix TEXT NOT NULL,
  digest BYTEA NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  last_used_at TEXT,
  revoked_at TEXT
);
CREATE INDEX workspace_keys_workspace ON workspace_keys(workspace_id);

CREATE TABLE scrape_runs (
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
  cancel_requested_at TEXT,
  box_id TEXT NOT NULL,
  announced_at TEXT
);
CREATE INDEX scrape_runs_unannounced ON scrape_runs(box_id) WHERE announced_at IS NULL AND finished_at IS NOT NULL;
CREATE INDEX scrape_runs_workspace ON scrape_runs(workspace_id, created_at DESC, id DESC);
CREATE INDEX scrape_runs_active ON scrape_runs(box_id, status) WHERE status IN ('queued', 'running', 'waiting_for_rate_limit');
CREATE INDEX scrape_runs_reserving ON scrape_runs(workspace_id, period) WHERE status IN ('queued', 'running', 'waiting_for_rate_limit');

CREATE TABLE scrape_items (
  run_id TEXT NOT NULL REFERENCES scrape_runs(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  item_key TEXT NOT NULL,
  item_json TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);

CREATE TABLE usage_monthly (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  period TEXT NOT NULL,
  kind TEXT NOT NULL,
  units INTEGER NOT NULL DEFAULT 0 CHECK (units >= 0),
  runs INTEGER NOT NULL DEFAULT 0,
  review_units INTEGER NOT NULL DEFAULT 0 CHECK (review_units >= 0),
  PRIMARY KEY (workspace_id, period, kind)
);

CREATE TABLE scrape_seen_items (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  item_key TEXT NOT NULL,
  seen_at TEXT NOT NULL,
  PRIMARY KEY (workspace_id, kind, item_key)
);
CREATE INDEX scrape_seen_items_age ON scrape_seen_items(workspace_id, kind, seen_at, item_key);
