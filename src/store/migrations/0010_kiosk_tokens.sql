-- Preview-only kiosk tokens: each opens the preview and state of the listed monitors and nothing else.
-- Only sha256(token) is stored; the token is shown once, inside the kiosk URL's fragment.
CREATE TABLE kiosk_tokens (
  id TEXT PRIMARY KEY,
  label TEXT NOT NULL DEFAULT '',
  prefix TEXT NOT NULL,
  digest BLOB NOT NULL UNIQUE,
  -- JSON array of monitor ids (they need not exist yet: a monitor deleted and re-created keeps its kiosk).
  monitor_ids TEXT NOT NULL,
  created_at TEXT NOT NULL,
  last_used_at TEXT,
  revoked_at TEXT
);
