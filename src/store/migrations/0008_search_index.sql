-- Per-collection search index (issue 22): exact (every row scanned, the default) or an approximate HNSW
-- graph whose candidates are re-ranked exactly. index_epoch names one incarnation of a collection id:
-- index files under data_dir carry it, so a file of a deleted collection never serves a re-created one.
ALTER TABLE collections ADD COLUMN search_index TEXT NOT NULL DEFAULT 'exact' CHECK (search_index IN ('exact', 'hnsw'));
ALTER TABLE collections ADD COLUMN hnsw_connectivity INTEGER NOT NULL DEFAULT 16 CHECK (hnsw_connectivity BETWEEN 4 AND 64);
ALTER TABLE collections ADD COLUMN hnsw_expansion_add INTEGER NOT NULL DEFAULT 128 CHECK (hnsw_expansion_add BETWEEN 16 AND 1024);
ALTER TABLE collections ADD COLUMN hnsw_expansion_search INTEGER NOT NULL DEFAULT 64 CHECK (hnsw_expansion_search BETWEEN 16 AND 4096);
ALTER TABLE collections ADD COLUMN index_epoch TEXT NOT NULL DEFAULT '';
UPDATE collections SET index_epoch = lower(hex(randomblob(16)));
