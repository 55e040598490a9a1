-- Every enter gets its exit (issue 37). events.reason: why an exit happened (absent, identity_changed,
-- monitor_disabled, monitor_restarted, monitor_deleted, daemon_stopped, daemon_restarted); NULL on other
-- events and on exits recorded before this migration.
ALTER TABLE events ADD COLUMN reason TEXT;
-- The tracks whose enter is in the history and whose exit is not yet: written in the same transaction as
-- the history rows. What is left here at start was open when the previous process died; the start closes
-- it with a synthetic exit (reason daemon_restarted). An enter deleted meanwhile (its person deleted,
-- retention) takes its row along, so a deleted person gets no new event.
CREATE TABLE event_open_tracks (
  stream_epoch TEXT NOT NULL,
  track_id TEXT NOT NULL,
  enter_id TEXT NOT NULL UNIQUE REFERENCES events (id) ON DELETE CASCADE,
  PRIMARY KEY (stream_epoch, track_id)
);
-- Retained MQTT presence topics (<prefix>/<monitor>/person/<person>) of deleted persons, noted before their
-- events go (a person delete, a collection delete's cascade, a fleet replica's delete alike); the MQTT
-- output clears each topic (an empty retained message) and removes the row.
CREATE TABLE mqtt_person_topics_cleared (
  monitor_id TEXT NOT NULL,
  person_id TEXT NOT NULL,
  PRIMARY KEY (monitor_id, person_id)
);
CREATE TRIGGER events_person_deleting BEFORE DELETE ON persons BEGIN
  INSERT OR IGNORE INTO mqtt_person_topics_cleared (monitor_id, person_id)
    SELECT DISTINCT monitor_id, OLD.id FROM events
    WHERE collection_id = OLD.collection_id AND person_id = OLD.id AND type IN ('person_enter', 'person_exit');
END;
