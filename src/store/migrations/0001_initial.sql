-- The API key of the face service: one active key; a different key at startup rotates it.
CREATE TABLE api_keys (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  label TEXT NOT NULL,
  salt BLOB NOT NULL,
  digest BLOB NOT NULL,
  active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
  created_at TEXT NOT NULL
);
CREATE INDEX api_keys_active ON api_keys(active);
