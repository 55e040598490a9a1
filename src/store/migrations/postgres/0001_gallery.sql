-- Fleet mode (issue 16): the gallery in PostgreSQL. The same tables and columns as the SQLite migrations
-- (0002 collections, 0008 search index), so one row mapper reads both engines; timestamps stay ISO-8601
-- text and booleans 0/1, exactly as the API shows them. Two additions:
--   collections.change_revision: +1 on every committed gallery write of that collection (search_revision
--     only moves on index-affecting writes, as the upstream contract says);
--   gallery_changes: one row per committed write, keyed (collection, change_revision), naming the persons
--     and faces it touched. Followers (every box) catch up by revision; NOTIFY vigil_gallery wakes them.
CREATE TABLE collections (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  default_threshold DOUBLE PRECISION NOT NULL CHECK (default_threshold BETWEEN 0 AND 1),
  model_id TEXT NOT NULL,
  model_digest TEXT NOT NULL,
  embedding_dimension INTEGER NOT NULL CHECK (embedding_dimension > 0),
  preprocessing_version TEXT NOT NULL,
  embedding_contract_id TEXT NOT NULL,
  search_profile TEXT NOT NULL CHECK (search_profile IN ('fp32_v1', 'fp16_v1', 'bf16_v1', 'int8_x736_v1', 'int8_x1000_v1')),
  capacity_rows BIGINT NOT NULL CHECK (capacity_rows >= 1),
  max_faces_per_person INTEGER NOT NULL CHECK (max_faces_per_person BETWEEN 1 AND 1000000),
  load_policy TEXT NOT NULL CHECK (load_policy IN ('eager', 'lazy')),
  search_revision BIGINT NOT NULL DEFAULT 0,
  save_face_crops INTEGER NOT NULL DEFAULT 0 CHECK (save_face_crops IN (0, 1)),
  metadata_json TEXT NOT NULL DEFAULT '{}',
  detector_input_sizes_json TEXT NOT NULL,
  detector_threshold DOUBLE PRECISION NOT NULL CHECK (detector_threshold BETWEEN 0 AND 1),
  detector_nms_threshold DOUBLE PRECISION NOT NULL CHECK (detector_nms_threshold BETWEEN 0 AND 1),
  single_face_selection TEXT NOT NULL CHECK (single_face_selection IN ('largest', 'center_largest')),
  detection_revision INTEGER NOT NULL DEFAULT 1,
  person_count BIGINT NOT NULL DEFAULT 0,
  face_count BIGINT NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  search_index TEXT NOT NULL DEFAULT 'exact' CHECK (search_index IN ('exact', 'hnsw')),
  hnsw_connectivity INTEGER NOT NULL DEFAULT 16 CHECK (hnsw_connectivity BETWEEN 4 AND 64),
  hnsw_expansion_add INTEGER NOT NULL DEFAULT 128 CHECK (hnsw_expansion_add BETWEEN 16 AND 1024),
  hnsw_expansion_search INTEGER NOT NULL DEFAULT 64 CHECK (hnsw_expansion_search BETWEEN 16 AND 4096),
  index_epoch TEXT NOT NULL,
  change_revision BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE persons (
  seq BIGSERIAL PRIMARY KEY,
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
  seq BIGSERIAL PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  person_seq BIGINT NOT NULL REFERENCES persons(seq) ON DELETE CASCADE,
  embedding BYTEA NOT NULL,
  embedding_dimension INTEGER NOT NULL,
  bounding_box_json TEXT NOT NULL,
  landmarks_json TEXT,
  detection_score DOUBLE PRECISION NOT NULL CHECK (detection_score BETWEEN 0 AND 1),
  quality_json TEXT NOT NULL,
  model_id TEXT NOT NULL,
  model_digest TEXT NOT NULL,
  preprocessing_version TEXT NOT NULL,
  embedding_source TEXT NOT NULL DEFAULT 'server' CHECK (embedding_source IN ('server', 'external_trusted')),
  embedding_contract_id TEXT,
  crop_image BYTEA,
  crop_media_type TEXT,
  liveness_json TEXT,
  created_at TEXT NOT NULL
);
CREATE INDEX face_samples_person ON face_samples(person_seq, id);
CREATE INDEX face_samples_collection ON face_samples(collection_id, seq);

CREATE TABLE gallery_changes (
  collection_id TEXT NOT NULL REFERENCES collections(id) ON DELETE CASCADE,
  revision BIGINT NOT NULL,
  box_id TEXT NOT NULL,
  person_seqs BIGINT[] NOT NULL DEFAULT '{}',
  face_seqs BIGINT[] NOT NULL DEFAULT '{}',
  committed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (collection_id, revision)
);

-- The counters and the capacity backstop, as SQLite's triggers but per statement (transition tables): a
-- row trigger that updates the same collection row once per inserted face makes a bulk import quadratic
-- (every update walks the row's version chain); one aggregated update per statement does not.
CREATE FUNCTION vigil_persons_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE collections c SET person_count = c.person_count + d.n FROM (SELECT collection_id, count(*) AS n FROM new_rows GROUP BY collection_id) d WHERE c.id = d.collection_id;
  RETURN NULL;
END $$;
CREATE FUNCTION vigil_persons_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE collections c SET person_count = c.person_count - d.n FROM (SELECT collection_id, count(*) AS n FROM old_rows GROUP BY collection_id) d WHERE c.id = d.collection_id;
  RETURN NULL;
END $$;
CREATE TRIGGER persons_added AFTER INSERT ON persons REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION vigil_persons_added();
CREATE TRIGGER persons_removed AFTER DELETE ON persons REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION vigil_persons_removed();

-- capacity_rows is a hard limit: the service checks it first (on the locked collection row) for a clear
-- error; this is the backstop, checked once the statement's faces are counted.
CREATE FUNCTION vigil_faces_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE collections c SET face_count = c.face_count + d.n FROM (SELECT collection_id, count(*) AS n FROM new_rows GROUP BY collection_id) d WHERE c.id = d.collection_id;
  UPDATE persons p SET face_count = p.face_count + d.n FROM (SELECT person_seq, count(*) AS n FROM new_rows GROUP BY person_seq) d WHERE p.seq = d.person_seq;
  IF EXISTS (SELECT 1 FROM collections c WHERE c.id IN (SELECT collection_id FROM new_rows) AND c.face_count > c.capacity_rows) THEN
    RAISE EXCEPTION 'collection_capacity_exceeded';
  END IF;
  RETURN NULL;
END $$;
CREATE FUNCTION vigil_faces_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE collections c SET face_count = c.face_count - d.n FROM (SELECT collection_id, count(*) AS n FROM old_rows GROUP BY collection_id) d WHERE c.id = d.collection_id;
  UPDATE persons p SET face_count = p.face_count - d.n FROM (SELECT person_seq, count(*) AS n FROM old_rows GROUP BY person_seq) d WHERE p.seq = d.person_seq;
  RETURN NULL;
END $$;
CREATE TRIGGER face_samples_added AFTER INSERT ON face_samples REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION vigil_faces_added();
CREATE TRIGGER face_samples_removed AFTER DELETE ON face_samples REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION vigil_faces_removed();
