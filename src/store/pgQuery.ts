import type pg from 'pg';
import { Errors } from '../contract/errors.js';
import { isConnectionError } from './postgres.js';

/**
 * Runs PostgreSQL work where a lost or refused connection is a 503 store_unavailable with the driver's
 * reason; any other error (a constraint, a bug) is rethrown as is.
 */
export async function storeCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isConnectionError(e)) throw Errors.storeUnavailable(e instanceof Error ? e.message : String(e));
    throw e;
  }
}

/** One statement on the pool (its own implicit transaction), as a storeCall. */
export function pgQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(
  pool: pg.Pool,
  sql: string,
  params: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  return storeCall(() => pool.query<R>(sql, params));
}
