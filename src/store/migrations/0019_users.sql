-- User accounts with roles, their browser sessions, and the audit log (docs/operations/users.md).
-- Per box: in fleet mode each box keeps its own users, sessions and audit log in its SQLite file.
CREATE TABLE users (
  id TEXT PRIMARY KEY,
  username TEXT NOT NULL UNIQUE COLLATE NOCASE,
  role TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
  -- $scrypt$v=1$n=…,r=…,p=…$salt$key (src/users/passwordHash.ts)
  password_hash TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  password_changed_at TEXT NOT NULL,
  last_sign_in_at TEXT
);

-- Only sha256(session token) is stored; the token lives in the browser's HttpOnly cookie. A revoke or a
-- sign-out deletes the row; expired rows are deleted by the periodic prune.
CREATE TABLE user_sessions (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  digest BLOB NOT NULL UNIQUE,
  created_at TEXT NOT NULL,
  last_seen_at TEXT NOT NULL,
  last_seen_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  address TEXT NOT NULL DEFAULT '',
  user_agent TEXT NOT NULL DEFAULT ''
);
CREATE INDEX user_sessions_user ON user_sessions (user_id);

-- Who did what and when, from the API (users, the API key) and the CLI. Never holds request bodies.
CREATE TABLE audit_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('api', 'cli')),
  actor_type TEXT NOT NULL,
  actor TEXT NOT NULL,
  user_id TEXT,
  session_id TEXT,
  address TEXT,
  action TEXT NOT NULL,
  method TEXT,
  path TEXT,
  status INTEGER,
  error_code TEXT,
  request_id TEXT,
  detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_at ON audit_log (at_ms);
CREATE INDEX audit_log_actor ON audit_log (actor, seq);
