-- Every enter gets its exit (issue 37): why an exit happened, as SQLite's events.reason (0017).
ALTER TABLE events ADD COLUMN reason TEXT;
