-- Collections, persons and face samples. SQLite is the source of truth: search indexes are rebuilt
-- from face_samples.embedding at startup (or on first use) and never persisted.
CREATE TABLE collections (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  default_threshold REAL NOT NULL CHECK (default_threshold BETWEEN 0 AND 1),
  model_id TEXT NOT NULL,
  model_digest TEXT NOT NULL,
  embedding_dimension INTEGER NOT NULL CHECK (embedding_dimension > 0),
  preprocessing_version TEXT NOT NULL,
  embedding_contract_id TEXT NOT NULL,
  search_profile TEXT NOT NULL CHECK (search_profile IN ('fp32_v1', 'fp16_v1', 'bf16_v1', 'int8_x736_v1', 'int8_x1000_v1')),
  capacity_rows INTEGER NOT NULL CHECK (capacity_rows >= 1),
  max_faces_per_person INTEGER NOT NULL CHECK (max_faces_per_person BETWEEN 1 AND 1000000),
  load_policy TEXT NOT NULL CHECK (load_policy IN ('eager', 'lazy')),
  search_revision INTEGER NOT NULL DEFAULT 0,
  save_face_crops INTEGER NOT NULL DEFAULT 0 CHECK (save_face_crops IN (0, 1)),
  metadata_json TEXT NOT NULL DEFAULT '{}',
  detector_input_sizes_json TEXT NOT NULL,
  detector_threshold REAL NOT NULL CHECK (detector_threshold BETWEEN 0 AND 1),
  detector_nms_threshold REAL NOT NULL CHECK (detector_nms_threshold BETWEEN 0 AND 1),
  single_face_selection TEXT NOT NULL CHECK (single_face_selection IN ('largest', 'center_largest')),
  detection_revision INTEGER NOT NULL DEFAULT 1,
  -- Maintained by the triggers below, so capacity checks read one row inside the write transaction.
  person_count INTEGER NOT NULL DEFAULT 0,
  face_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- seq is the stable numeric id the search index uses; AUTOINCREMENT never reuses one.
CREATE TABLE persons (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  id TEXT NOT NULL,
  name TEXT,
  external_id TEXT,
  metadata_json TEXT NOT NULL DEFAULT '{}',
  face_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (collection_id, id),
  UNIQUE (collection_id, external_id)
);

CREATE TABLE face_samples (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  person_seq INTEGER NOT NULL REFERENCES persons(seq) ON DELETE CASCADE,
  embedding BLOB NOT NULL,
  embedding_dimension INTEGER NOT NULL,
  bounding_box_json TEXT NOT NULL,
  landmarks_json TEXT,
  detection_score REAL NOT NULL CHECK (detection_score BETWEEN 0 AND 1),
  quality_json TEXT NOT NULL,
  model_id TEXT NOT NULL,
  model_digest TEXT NOT NULL,
  preprocessing_version TEXT NOT NULL,
  embedding_source TEXT NOT NULL DEFAULT 'server' CHECK (embedding_source IN ('server', 'external_trusted')),
  embedding_contract_id TEXT,
  crop_image BLOB,
  crop_media_type TEXT,
  liveness_json TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX face_samples_person ON face_samples(person_seq, id);
CREATE INDEX face_samples_collection ON face_samples(collection_id, seq);

CREATE TRIGGER persons_count_insert AFTER INSERT ON persons BEGIN
  UPDATE collections SET person_count = person_count + 1 WHERE id = NEW.collection_id;
END;
CREATE TRIGGER persons_count_delete AFTER DELETE ON persons BEGIN
  UPDATE collections SET person_count = person_count - 1 WHERE id = OLD.collection_id;
END;
-- capacity_rows is a hard limit: the service checks it first for a clear error, this is the backstop.
CREATE TRIGGER face_samples_capacity BEFORE INSERT ON face_samples
WHEN (SELECT face_count >= capacity_rows FROM collections WHERE id = NEW.collection_id) BEGIN
  SELECT RAISE(ABORT, 'collection_capacity_exceeded');
END;
CREATE TRIGGER face_samples_count_insert AFTER INSERT ON face_samples BEGIN
  UPDATE collections SET face_count = face_count + 1 WHERE id = NEW.collection_id;
  UPDATE persons SET face_count = face_count + 1 WHERE seq = NEW.person_seq;
END;
CREATE TRIGGER face_samples_count_delete AFTER DELETE ON face_samples BEGIN
  UPDATE collections SET face_count = face_count - 1 WHERE id = OLD.collection_id;
  UPDATE persons SET face_count = face_count - 1 WHERE seq = OLD.person_seq;
END;
