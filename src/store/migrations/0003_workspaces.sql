-- Workspaces (scraper tenants), their API keys, scrape runs and monthly usage. Independent of the face
-- service's single admin key (api_keys).
CREATE TABLE workspaces (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  -- NULL = the deployment's [scrapers] free_items_per_month.
  monthly_item_quota INTEGER CHECK (monthly_item_quota IS NULL OR monthly_item_quota >= 0),
  created_at TEXT NOT NULL
);

-- Only sha256(token) is stored; the token is shown once at creation. `prefix` identifies a key in lists.
CREATE TABLE workspace_keys (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  label TEXT NOT NULL DEFAULT '',
  prefix TEXT NOT NULL,
  digest BLOB NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  last_used_at TEXT,
  revoked_at TEXT
);
CREATE INDEX workspace_keys_workspace ON workspace_keys(workspace_id);

-- One scrape run. `reserved_units` holds quota while the run is queued/running (released when it
-- finishes); `billed_units` is what the finished run was billed, written in the same transaction as
-- usage_monthly.
CREATE TABLE scrape_runs (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'partial', 'failed')),
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
  finished_at TEXT
);
CREATE INDEX scrape_runs_workspace ON scrape_runs(workspace_id, created_at DESC, id DESC);
CREATE INDEX scrape_runs_active ON scrape_runs(status) WHERE status IN ('queued', 'running');

CREATE TABLE usage_monthly (
  workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  period TEXT NOT NULL,
  kind TEXT NOT NULL,
  units INTEGER NOT NULL DEFAULT 0 CHECK (units >= 0),
  runs INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (workspace_id, period, kind)
);
