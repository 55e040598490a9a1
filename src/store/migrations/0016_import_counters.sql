-- Bulk import (issue 22): an import batch keeps the collection and person counters itself, with one UPDATE per
-- batch in its own transaction, instead of the insert triggers' three statements per face row (measured about
-- half of the import's SQLite time). While its transaction runs, the import holds its collection's row in
-- import_counting and the insert triggers below skip that collection; the row is deleted before the
-- transaction commits (a failed batch rolls back with it), so every other writer, connection and commit only
-- ever sees the table empty and the triggers count and check as before. The capacity backstop of those rows is
-- the import's own check on the counters it writes (CollectionStore.insertImportBatch).
CREATE TABLE import_counting (collection_id TEXT PRIMARY KEY) WITHOUT ROWID;

DROP TRIGGER persons_count_insert;
CREATE TRIGGER persons_count_insert AFTER INSERT ON persons
WHEN NOT EXISTS (SELECT 1 FROM import_counting WHERE collection_id = NEW.collection_id) BEGIN
  UPDATE collections SET person_count = person_count + 1 WHERE id = NEW.collection_id;
END;

DROP TRIGGER face_samples_capacity;
CREATE TRIGGER face_samples_capacity BEFORE INSERT ON face_samples
WHEN NOT EXISTS (SELECT 1 FROM import_counting WHERE collection_id = NEW.collection_id)
  AND (SELECT face_count >= capacity_rows FROM collections WHERE id = NEW.collection_id) BEGIN
  SELECT RAISE(ABORT, 'collection_capacity_exceeded');
END;

DROP TRIGGER face_samples_count_insert;
CREATE TRIGGER face_samples_count_insert AFTER INSERT ON face_samples
WHEN NOT EXISTS (SELECT 1 FROM import_counting WHERE collection_id = NEW.collection_id) BEGIN
  UPDATE collections SET face_count = face_count + 1 WHERE id = NEW.collection_id;
  UPDATE persons SET face_count = face_count + 1 WHERE seq = NEW.person_seq;
END;
