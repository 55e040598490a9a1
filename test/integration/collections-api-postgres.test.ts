/**
 * The collections/search API suite again, with the gallery in PostgreSQL (fleet mode, one box): the same
 * tests must pass on both backends. A throw-away cluster per test process (test/helpers/daemon.ts).
 */
process.env.VIGIL_TEST_STORE = 'postgres';
await import('./collections-api.test.js');
