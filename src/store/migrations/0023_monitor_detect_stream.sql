-- Two streams per camera (issue 41 item 5): a monitor's detect sub-stream, encrypted as source_url_encrypted is
-- (AES-GCM under the box's credential key, bound to "monitor:<id>:detect"); NULL when detection reads the main
-- stream. No PostgreSQL counterpart: camera URLs never leave the box (fleet_monitors has none).
ALTER TABLE monitors ADD COLUMN detect_url_encrypted TEXT;
