import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { parseIntoClientConfig } from 'pg-connection-string';
import { Errors, isVigilError, type VigilError } from '../contract/errors.js';
import { errnoReason, migrationFiles, schemaTooNew, schemaVersionOf } from './database.js';

export const PG_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/postgres/', import.meta.url));

/** int8 (sequence numbers, counters, revisions) as JS numbers: every value we store is below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export interface PgOptions {
  url: string;
  password?: string | undefined;
  passwordFile?: string | undefined;
  poolSize: number;
  applicationName?: string;
}

/** The password: VIGIL_STORE_PASSWORD, else the password file (trailing newline dropped), else the URL's own. */
export function storePassword(o: Pick<PgOptions, 'password' | 'passwordFile'>): string | undefined {
  if (o.password) return o.password;
  if (!o.passwordFile) return undefined;
  let text: string;
  try {
    text = readFileSync(o.passwordFile, 'utf8');
  } catch (e) {
    throw Errors.storeMisconfigured(`password_file ${o.passwordFile} cannot be read: ${errnoReason(e)}.`);
  }
  const password = text.replace(/\r?\n$/, '');
  if (!password) throw Errors.storeMisconfigured(`password_file ${o.passwordFile} is empty.`);
  return password;
}

export function clientConfig(o: PgOptions): pg.ClientConfig {
  const password = storePassword(o);
  // The URL is parsed here, not by pg: pg lets every field of a connectionString win over the config's
  // own, so the empty password of a URL without one (the documented form) hid the file's or env's.
  return {
    ...parseIntoClientConfig(o.url),
    ...(password !== undefined ? { password } : {}),
    types,
    application_name: o.applicationName ?? 'vigil',
    connectionTimeoutMillis: 5000,
    keepAlive: true,
  };
}

/** host:port of the URL, for messages (never the password). */
export function storeServer(url: string): string {
  const c = parseIntoClientConfig(url);
  return `${c.host || 'localhost'}:${c.port ?? 5432}`;
}

/** host:port/database of the URL (never the user or password): which database a fleet box's backup belongs to. */
export function storeDatabase(url: string): string {
  return `${storeServer(url)}/${parseIntoClientConfig(url).database ?? ''}`;
}

/**
 * The database's refusals of this box that a retry cannot cure, as store_misconfigured: authentication
 * (SQLSTATE class 28, or no password where the server asks for one), a missing database (3D000), a missing
 * privilege (42501), TLS the server does not offer. Anything else (unreachable, restarting) is null.
 */
export function storeRefusal(e: unknown, url: string): VigilError | null {
  if (isVigilError(e)) return e.code === Errors.storeMisconfigured.code ? e : null;
  const err = e as { code?: string; message?: string } | null;
  const code = err?.code ?? '';
  const message = (err?.message ?? '').replace(/\.$/, '');
  const at = `PostgreSQL at ${storeServer(url)}`;
  if (code.startsWith('28'))
    return Errors.storeMisconfigured(
      `${at} refused the login: ${message}. Check the user in [store] url and the password in [store] password_file or VIGIL_STORE_PASSWORD.`,
      code,
    );
  if (code === '3D000')
    return Errors.storeMisconfigured(
      `${at}: ${message}. Create it (createdb -O <user> <name>) or fix the database name in [store] url.`,
      code,
    );
  if (code === '42501')
    return Errors.storeMisconfigured(
      `${at}: ${message}. The role in [store] url needs to own the database (or CREATE on it and its public schema).`,
      code,
    );
  if (/client password must be a string/.test(message))
    return Errors.storeMisconfigured(
      `${at} asks for a password and there is no password: set [store] password_file or VIGIL_STORE_PASSWORD.`,
    );
  if (/does not support SSL/.test(message))
    return Errors.storeMisconfigured(`${at}: ${message}. Remove sslmode from [store] url or enable TLS on the server.`);
  return null;
}

export function openPool(o: PgOptions): pg.Pool {
  const pool = new pg.Pool({ ...clientConfig(o), max: o.poolSize, idleTimeoutMillis: 30_000 });
  // An idle client's error (the server restarted) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return pool;
}

/** Connection-level failures (server down, restarting, unreachable): the box is degraded, not broken. */
export function isConnectionError(e: unknown): boolean {
  const err = e as { code?: string; message?: string } | null;
  if (!err) return false;
  const code = err.code ?? '';
  if (
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      'ENOTFOUND',
      'EHOSTUNREACH',
      '57P01',
      '57P02',
      '57P03',
      '08000',
      '08003',
      '08006',
      '08001',
      '08004',
    ].includes(code)
  )
    return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    err.message ?? '',
  );
}

/** Runs fn in one transaction on a pooled client; a lost connection is a 503 store_unavailable. */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (c: pg.PoolClient) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (e) {
    throw Errors.storeUnavailable(e instanceof Error ? e.message : String(e));
  }
  let broken = false;
  // A server that goes away between two queries of this transaction emits 'error' on the checked-out
  // client (no query to reject): without a listener that would crash the process. The next query fails.
  const onError = () => {
    broken = true;
  };
  client.on('error', onError);
  try {
    await client.query(begin);
    const out = await fn(client);
    await client.query('COMMIT');
    return out;
  } catch (e) {
    broken = isConnectionError(e);
    if (!broken)
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
    if (broken) throw Errors.storeUnavailable(e instanceof Error ? e.message : String(e));
    throw e;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/**
 * The PostgreSQL side of the one migration runner: the same numbered files (NNNN_name.sql) as SQLite,
 * from migrations/postgres/, each in its own transaction and recorded in schema_migrations. Boxes that
 * start together take an advisory lock, so exactly one applies each migration.
 */
export interface PgMigrationResult {
  /** The migration files this call applied. */
  applied: string[];
  /** The fleet database's schema version afterwards (its highest migration). */
  schemaVersion: number;
}

export async function migratePostgres(pool: pg.Pool, dir = PG_MIGRATIONS_DIR): Promise<PgMigrationResult> {
  const client = await pool.connect();
  const onError = () => undefined;
  client.on('error', onError);
  try {
    await client.query('SELECT pg_advisory_lock(7166001)');
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    );
    const applied = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    // A fleet database a newer box migrated: this build would misread its tables (as for a data dir).
    const refusal = schemaTooNew(
      'The fleet database ([store] url)',
      applied.size ? Math.max(...applied) : null,
      schemaVersionOf(dir),
    );
    if (refusal) throw refusal;
    const done: string[] = [];
    for (const { version, file } of migrationFiles(dir)) {
      if (applied.has(version)) continue;
      const sql = readFileSync(join(dir, file), 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          version,
          file,
          new Date().toISOString(),
        ]);
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK');
        throw e;
      }
      done.push(file);
      applied.add(version);
    }
    return { applied: done, schemaVersion: Math.max(0, ...applied) };
  } finally {
    await client.query('SELECT pg_advisory_unlock(7166001)').catch(() => undefined);
    client.removeListener('error', onError);
    client.release();
  }
}
