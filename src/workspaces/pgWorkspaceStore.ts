import pg from 'pg';
import type { Logger } from 'pino';
import { Errors, isApiError } from '../contract/errors.js';
import { withTransaction, type PgOptions } from '../store/postgres.js';
import { PgListener } from '../store/pgListener.js';
import { pgQuery } from '../store/pgQuery.js';
import type { WorkspaceRepository } from './repository.js';
import { keyDigest, looksLikeKey, newKey, newWorkspace, type Workspace, type WorkspaceKey } from './workspaceStore.js';

/** NOTIFY channel of key revocations (payload: the key id), so every box drops the key from its cache at once. */
export const KEYS_CHANNEL = 'vigil_workspace_keys';
const WS_COLS = 'id, name, monthly_item_quota, monthly_review_quota, created_at';
const KEY_COLS = 'id, workspace_id, label, prefix, created_at, last_used_at, revoked_at';

interface Verified {
  workspaceId: string;
  keyId: string;
  at: number;
  touchedMinute: string;
}

export interface KeyCacheOptions {
  /** How long a verified key is trusted without asking PostgreSQL while revocations arrive by NOTIFY. */
  ttlMs: number;
  /** How long a verified key keeps authenticating while PostgreSQL is unreachable (its calls then answer 503 store_unavailable, not 401). */
  outageGraceMs: number;
}

/**
 * Workspaces and keys in PostgreSQL (fleet mode), shared by every box: a workspace or key created on one
 * box works on all of them, a revoked key stops everywhere.
 *
 * Key checks stay off the database on the hot path: a verified key (by its sha256) is cached for
 * `ttlMs`. A revoke commits with NOTIFY vigil_workspace_keys; every box LISTENs and drops that key at
 * once. While the LISTEN connection is down the cache is not trusted (a revoke could be missed): every
 * check reads PostgreSQL, and the cache is cleared when the listener is back. While PostgreSQL itself is
 * unreachable, a key verified within `outageGraceMs` still authenticates (its workspace's calls then
 * answer 503 store_unavailable, which tells the client to retry, instead of a misleading 401), and an
 * unknown key answers 503 store_unavailable: no box can tell a wrong key from a right one then.
 */
export class PgWorkspaceStore implements WorkspaceRepository {
  private readonly cache = new Map<string, Verified>();
  private listener: PgListener | null = null;
  /** Key checks answered from the cache / from PostgreSQL (metrics and tests). */
  readonly stats = { cached: 0, queried: 0, grace: 0 };

  constructor(
    private readonly pool: pg.Pool,
    private readonly pgOptions: PgOptions | null,
    private readonly log: Logger | null,
    private readonly opts: KeyCacheOptions = { ttlMs: 60_000, outageGraceMs: 15 * 60_000 },
  ) {}

  /** Starts the revocation listener (daemons; the CLI does not cache and does not listen). */
  listen(): void {
    if (!this.pgOptions || this.listener) return;
    this.listener = new PgListener(
      { ...this.pgOptions, applicationName: `${this.pgOptions.applicationName ?? 'vigil'}:keys` },
      KEYS_CHANNEL,
      {
        onNotification: (keyId) => this.forget(keyId),
        // Revocations sent while not listening were missed: start over.
        onListening: () => this.cache.clear(),
      },
    );
    void this.listener.start();
  }

  async close(): Promise<void> {
    await this.listener?.close();
  }

  /** Whether the revocation listener is connected (the cache is trusted only then). */
  get listening(): boolean {
    return this.listener?.listening ?? false;
  }

  private forget(keyId: string): void {
    for (const [k, v] of this.cache) if (v.keyId === keyId) this.cache.delete(k);
  }

  async create(input: {
    id?: string;
    name: string;
    monthlyItemQuota?: number | null;
    monthlyReviewQuota?: number | null;
  }): Promise<Workspace> {
    const ws = newWorkspace(input);
    try {
      await pgQuery(this.pool, `INSERT INTO workspaces (${WS_COLS}) VALUES ($1, $2, $3, $4, $5)`, [
        ws.id,
        ws.name,
        ws.monthly_item_quota,
        ws.monthly_review_quota,
        ws.created_at,
      ]);
    } catch (e) {
      if ((e as { code?: string }).code === '23505') throw Errors.workspaceExists(ws.id);
      throw e;
    }
    return ws;
  }

  async get(id: string): Promise<Workspace | null> {
    return (
      (await pgQuery<Workspace & pg.QueryResultRow>(this.pool, `SELECT ${WS_COLS} FROM workspaces WHERE id = $1`, [id]))
        .rows[0] ?? null
    );
  }

  async require(id: string): Promise<Workspace> {
    const ws = await this.get(id);
    if (!ws) throw Errors.workspaceNotFound(id);
    return ws;
  }

  async list(): Promise<Workspace[]> {
    return (
      await pgQuery<Workspace & pg.QueryResultRow>(
        this.pool,
        `SELECT ${WS_COLS} FROM workspaces ORDER BY created_at, id`,
      )
    ).rows;
  }

  async setQuota(id: string, quota: number | null): Promise<Workspace> {
    const r = await pgQuery<Workspace & pg.QueryResultRow>(
      this.pool,
      `UPDATE workspaces SET monthly_item_quota = $1 WHERE id = $2 RETURNING ${WS_COLS}`,
      [quota, id],
    );
    if (!r.rows[0]) throw Errors.workspaceNotFound(id);
    return r.rows[0];
  }

  async setReviewQuota(id: string, quota: number | null): Promise<Workspace> {
    const r = await pgQuery<Workspace & pg.QueryResultRow>(
      this.pool,
      `UPDATE workspaces SET monthly_review_quota = $1 WHERE id = $2 RETURNING ${WS_COLS}`,
      [quota, id],
    );
    if (!r.rows[0]) throw Errors.workspaceNotFound(id);
    return r.rows[0];
  }

  async createKey(workspaceId: string, label = ''): Promise<{ key: WorkspaceKey; token: string }> {
    await this.require(workspaceId);
    const { key, token, digest } = newKey(workspaceId, label);
    try {
      await pgQuery(
        this.pool,
        'INSERT INTO workspace_keys (id, workspace_id, label, prefix, digest, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [key.id, key.workspace_id, key.label, key.prefix, digest, key.created_at],
      );
    } catch (e) {
      if ((e as { code?: string }).code === '23503') throw Errors.workspaceNotFound(workspaceId);
      throw e;
    }
    return { key, token };
  }

  async listKeys(workspaceId?: string): Promise<WorkspaceKey[]> {
    return (
      workspaceId
        ? await pgQuery<WorkspaceKey & pg.QueryResultRow>(
            this.pool,
            `SELECT ${KEY_COLS} FROM workspace_keys WHERE workspace_id = $1 ORDER BY created_at, id`,
            [workspaceId],
          )
        : await pgQuery<WorkspaceKey & pg.QueryResultRow>(
            this.pool,
            `SELECT ${KEY_COLS} FROM workspace_keys ORDER BY workspace_id, created_at, id`,
          )
    ).rows;
  }

  /** Revokes in one transaction with its NOTIFY: once this resolves, every listening box has been told. */
  async revokeKey(keyId: string): Promise<WorkspaceKey> {
    const key = await withTransaction(this.pool, async (c) => {
      const upd = await c.query('UPDATE workspace_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [
        new Date().toISOString(),
        keyId,
      ]);
      const row = (
        await c.query<WorkspaceKey & pg.QueryResultRow>(`SELECT ${KEY_COLS} FROM workspace_keys WHERE id = $1`, [keyId])
      ).rows[0];
      if (!row) throw Errors.keyNotFound(keyId);
      if (upd.rowCount === 0) throw Errors.keyAlreadyRevoked(keyId);
      await c.query('SELECT pg_notify($1, $2)', [KEYS_CHANNEL, keyId]);
      return row;
    });
    this.forget(keyId);
    return key;
  }

  async authenticate(token: string): Promise<{ workspaceId: string; keyId: string } | null> {
    if (!looksLikeKey(token)) return null;
    const digest = keyDigest(token);
    const tag = digest.toString('base64');
    const hit = this.cache.get(tag);
    const now = Date.now();
    if (hit && this.listener && now - hit.at < this.opts.ttlMs) {
      this.stats.cached++;
      this.touch(hit);
      return { workspaceId: hit.workspaceId, keyId: hit.keyId };
    }
    let row: { id: string; workspace_id: string } | undefined;
    try {
      row = (
        await pgQuery<{ id: string; workspace_id: string }>(
          this.pool,
          'SELECT id, workspace_id FROM workspace_keys WHERE digest = $1 AND revoked_at IS NULL',
          [digest],
        )
      ).rows[0];
    } catch (e) {
      // PostgreSQL unreachable: a key verified shortly before still authenticates (its calls then answer
      // 503 store_unavailable); an unknown one cannot be judged, so it is 503 too, never 401.
      if (isApiError(e) && e.code === 'store_unavailable' && hit && now - hit.at < this.opts.outageGraceMs) {
        this.stats.grace++;
        return { workspaceId: hit.workspaceId, keyId: hit.keyId };
      }
      throw e;
    }
    this.stats.queried++;
    if (!row) {
      this.cache.delete(tag);
      return null;
    }
    const v: Verified = {
      workspaceId: row.workspace_id,
      keyId: row.id,
      at: now,
      touchedMinute: hit?.touchedMinute ?? '',
    };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(tag, v);
    this.touch(v);
    return { workspaceId: v.workspaceId, keyId: v.keyId };
  }

  /** last_used_at at minute granularity, off the request path: one write per key per minute per box. */
  private touch(v: Verified): void {
    const now = new Date().toISOString();
    if (v.touchedMinute === now.slice(0, 16)) return;
    v.touchedMinute = now.slice(0, 16);
    void this.pool
      .query(
        'UPDATE workspace_keys SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)',
        [now, v.keyId],
      )
      .catch((e: unknown) => this.log?.debug({ err: e }, 'last_used_at not updated'));
  }
}
