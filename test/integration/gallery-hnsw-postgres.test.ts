/** The gallery-hnsw suite again with the gallery in PostgreSQL (fleet mode, one box; see collections-api-postgres.test.ts). */
process.env.VIGIL_TEST_STORE = 'postgres';
await import('./gallery-hnsw.test.js');
