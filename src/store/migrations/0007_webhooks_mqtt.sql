-- Signed webhooks (Standard Webhooks) from a durable outbox, shared by every publisher: monitor events
-- use scope 'admin' (/v1/webhooks); other owners (a workspace) use their own scope.
CREATE TABLE webhook_endpoints (
  id TEXT PRIMARY KEY,
  scope TEXT NOT NULL,
  url TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  -- [] = every event type of the scope.
  event_types_json TEXT NOT NULL DEFAULT '[]',
  -- {"monitor_id": ["door"]}: a message matches when each listed key has one of its values ({} = all).
  filters_json TEXT NOT NULL DEFAULT '{}',
  -- whsec_<base64>: kept so deliveries can be signed; shown once at creation.
  secret TEXT NOT NULL,
  enabled INTEGER NOT NULL CHECK (enabled IN (0, 1)),
  disabled_reason TEXT,
  disabled_at TEXT,
  failure_streak INTEGER NOT NULL DEFAULT 0,
  last_success_at TEXT,
  last_failure_at TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_scope ON webhook_endpoints (scope, id);

-- The outbox: one row per (endpoint, message), deleted once delivered. Delivered in seq order per endpoint.
CREATE TABLE webhook_outbox (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  message_id TEXT NOT NULL,
  type TEXT NOT NULL,
  body TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER NOT NULL
);
CREATE INDEX webhook_outbox_endpoint ON webhook_outbox (endpoint_id, seq);

-- The delivery log: every attempt, trimmed to the newest [webhooks] log_size per endpoint.
CREATE TABLE webhook_attempts (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  message_id TEXT NOT NULL,
  type TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  at TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('delivered', 'failed')),
  status_code INTEGER,
  latency_ms REAL NOT NULL,
  error TEXT,
  next_attempt_at TEXT
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, seq);

-- MQTT messages waiting for the broker, in publish order. Retained topics keep only their newest value.
CREATE TABLE mqtt_queue (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  payload BLOB NOT NULL,
  retain INTEGER NOT NULL CHECK (retain IN (0, 1)),
  created_ms INTEGER NOT NULL
);
CREATE INDEX mqtt_queue_retained ON mqtt_queue (topic) WHERE retain = 1;
