import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Errors } from '../contract/errors.js';
import type { Db } from '../store/database.js';

export interface Workspace { id: string; name: string; monthly_item_quota: number | null; monthly_review_quota: number | null; created_at: string }
export interface WorkspaceKey { id: string; workspace_id: string; label: string; prefix: string; created_at: string; last_used_at: string | null; revoked_at: string | null }

/** Visible prefix of every workspace key, so a leaked one is recognisable (secret scanners, logs). */
export const KEY_PREFIX = 'vgl_';
const WORKSPACE_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
const digest = (token: string) => createHash('sha256').update(token).digest();

/**
 * Workspaces and their API keys. Keys are 32 random bytes, so an unsalted sha256 is enough (no
 * dictionary to attack) and lets a request find its key with one indexed lookup instead of scrypt.
 */
export class WorkspaceStore {
  constructor(private readonly db: Db) {}

  create(input: { id?: string; name: string; monthlyItemQuota?: number | null; monthlyReviewQuota?: number | null }): Workspace {
    const id = input.id ?? `ws_${randomBytes(6).toString('hex')}`;
    if (!WORKSPACE_ID.test(id)) throw Errors.invalidRequest({ exact: 'A workspace id is 1-63 characters of a-z, 0-9, "_" or "-", starting with a letter or digit.' });
    for (const [what, q] of [['item', input.monthlyItemQuota], ['review', input.monthlyReviewQuota]] as const) {
      if (q != null && (!Number.isInteger(q) || q < 0)) throw Errors.invalidRequest({ exact: `The monthly ${what} quota must be a non-negative integer.` });
    }
    const ws: Workspace = { id, name: input.name, monthly_item_quota: input.monthlyItemQuota ?? null, monthly_review_quota: input.monthlyReviewQuota ?? null, created_at: new Date().toISOString() };
    try {
      this.db.prepare('INSERT INTO workspaces (id, name, monthly_item_quota, monthly_review_quota, created_at) VALUES (@id, @name, @monthly_item_quota, @monthly_review_quota, @created_at)').run(ws);
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw Errors.workspaceExists(id);
      throw e;
    }
    return ws;
  }

  get(id: string): Workspace | null {
    return (this.db.prepare('SELECT id, name, monthly_item_quota, monthly_review_quota, created_at FROM workspaces WHERE id = ?').get(id) as Workspace | undefined) ?? null;
  }

  require(id: string): Workspace {
    const ws = this.get(id);
    if (!ws) throw Errors.workspaceNotFound(id);
    return ws;
  }

  list(): Workspace[] {
    return this.db.prepare('SELECT id, name, monthly_item_quota, monthly_review_quota, created_at FROM workspaces ORDER BY created_at, id').all() as Workspace[];
  }

  setQuota(id: string, quota: number | null): Workspace {
    this.require(id);
    this.db.prepare('UPDATE workspaces SET monthly_item_quota = ? WHERE id = ?').run(quota, id);
    return this.require(id);
  }

  /** The workspace's monthly review units (places); null = the deployment default. */
  setReviewQuota(id: string, quota: number | null): Workspace {
    this.require(id);
    this.db.prepare('UPDATE workspaces SET monthly_review_quota = ? WHERE id = ?').run(quota, id);
    return this.require(id);
  }

  /** Creates a key; the token is returned only here. */
  createKey(workspaceId: string, label = ''): { key: WorkspaceKey; token: string } {
    this.require(workspaceId);
    const token = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
    const key: WorkspaceKey = {
      id: `key_${randomUUID().replaceAll('-', '').slice(0, 16)}`, workspace_id: workspaceId, label, prefix: token.slice(0, KEY_PREFIX.length + 6),
      created_at: new Date().toISOString(), last_used_at: null, revoked_at: null,
    };
    this.db.prepare('INSERT INTO workspace_keys (id, workspace_id, label, prefix, digest, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(key.id, key.workspace_id, key.label, key.prefix, digest(token), key.created_at);
    return { key, token };
  }

  listKeys(workspaceId?: string): WorkspaceKey[] {
    const cols = 'id, workspace_id, label, prefix, created_at, last_used_at, revoked_at';
    return (workspaceId
      ? this.db.prepare(`SELECT ${cols} FROM workspace_keys WHERE workspace_id = ? ORDER BY created_at, id`).all(workspaceId)
      : this.db.prepare(`SELECT ${cols} FROM workspace_keys ORDER BY workspace_id, created_at, id`).all()) as WorkspaceKey[];
  }

  revokeKey(keyId: string): WorkspaceKey {
    const res = this.db.prepare('UPDATE workspace_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(new Date().toISOString(), keyId);
    const key = this.db.prepare('SELECT id, workspace_id, label, prefix, created_at, last_used_at, revoked_at FROM workspace_keys WHERE id = ?').get(keyId) as WorkspaceKey | undefined;
    if (!key) throw Errors.keyNotFound(keyId);
    if (res.changes === 0) throw Errors.keyAlreadyRevoked(keyId);
    return key;
  }

  /** The workspace a presented token belongs to, or null (unknown or revoked). */
  authenticate(token: string): { workspaceId: string; keyId: string } | null {
    if (!token.startsWith(KEY_PREFIX) || token.length > 256) return null;
    const row = this.db.prepare('SELECT id, workspace_id, last_used_at FROM workspace_keys WHERE digest = ? AND revoked_at IS NULL').get(digest(token)) as
      { id: string; workspace_id: string; last_used_at: string | null } | undefined;
    if (!row) return null;
    // last_used_at at minute granularity: one write per key per minute, not per request.
    const now = new Date().toISOString();
    if (!row.last_used_at || row.last_used_at.slice(0, 16) !== now.slice(0, 16)) this.db.prepare('UPDATE workspace_keys SET last_used_at = ? WHERE id = ?').run(now, row.id);
    return { workspaceId: row.workspace_id, keyId: row.id };
  }
}

