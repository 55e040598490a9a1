import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Errors } from '../contract/errors.js';
import type { Db } from '../store/database.js';
import type { WorkspaceRepository } from './repository.js';

export interface Workspace {
  id: string;
  name: string;
  monthly_item_quota: number | null;
  monthly_review_quota: number | null;
  created_at: string;
}
export interface WorkspaceKey {
  id: string;
  workspace_id: string;
  label: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** Visible prefix of every workspace key, so a leaked one is recognisable (secret scanners, logs). */
export const KEY_PREFIX = 'vgl_';
const WORKSPACE_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;
export const keyDigest = (token: string): Buffer => createHash('sha256').update(token).digest();
const digest = keyDigest;

/** Checks a new workspace's input and fills the defaults (shared by both engines). */
export function newWorkspace(input: {
  id?: string;
  name: string;
  monthlyItemQuota?: number | null;
  monthlyReviewQuota?: number | null;
}): Workspace {
  const id = input.id ?? `ws_${randomBytes(6).toString('hex')}`;
  if (!WORKSPACE_ID.test(id))
    throw Errors.invalidRequest({
      exact: 'A workspace id is 1-63 characters of a-z, 0-9, "_" or "-", starting with a letter or digit.',
    });
  for (const [what, q] of [
    ['item', input.monthlyItemQuota],
    ['review', input.monthlyReviewQuota],
  ] as const) {
    if (q != null && (!Number.isInteger(q) || q < 0))
      throw Errors.invalidRequest({ exact: `The monthly ${what} quota must be a non-negative integer.` });
  }
  return {
    id,
    name: input.name,
    monthly_item_quota: input.monthlyItemQuota ?? null,
    monthly_review_quota: input.monthlyReviewQuota ?? null,
    created_at: new Date().toISOString(),
  };
}

/** A fresh key for a workspace: the token (shown once) and the row to store (its sha256, never the token). */
export function newKey(workspaceId: string, label: string): { key: WorkspaceKey; token: string; digest: Buffer } {
  const token = `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  const key: WorkspaceKey = {
    id: `key_${randomUUID().replaceAll('-', '').slice(0, 16)}`,
    workspace_id: workspaceId,
    label,
    prefix: token.slice(0, KEY_PREFIX.length + 6),
    created_at: new Date().toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  return { key, token, digest: digest(token) };
}

/** Whether a presented string can be a workspace key at all (checked before any lookup). */
export const looksLikeKey = (token: string): boolean => token.startsWith(KEY_PREFIX) && token.length <= 256;

/**
 * Workspaces and their API keys. Keys are 32 random bytes, so an unsalted sha256 is enough (no
 * dictionary to attack) and lets a request find its key with one indexed lookup instead of scrypt.
 */
export class WorkspaceStore implements WorkspaceRepository {
  constructor(private readonly db: Db) {}

  async create(input: {
    id?: string;
    name: string;
    monthlyItemQuota?: number | null;
    monthlyReviewQuota?: number | null;
  }): Promise<Workspace> {
    const ws = newWorkspace(input);
    const id = ws.id;
    try {
      this.db
        .prepare(
          'INSERT INTO workspaces (id, name, monthly_item_quota, monthly_review_quota, created_at) VALUES (@id, @name, @monthly_item_quota, @monthly_review_quota, @created_at)',
        )
        .run(ws);
    } catch (e) {
      if ((e as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw Errors.workspaceExists(id);
      throw e;
    }
    return ws;
  }

  async get(id: string): Promise<Workspace | null> {
    return this.getSync(id);
  }

  private getSync(id: string): Workspace | null {
    return (
      (this.db
        .prepare('SELECT id, name, monthly_item_quota, monthly_review_quota, created_at FROM workspaces WHERE id = ?')
        .get(id) as Workspace | undefined) ?? null
    );
  }

  async require(id: string): Promise<Workspace> {
    return this.requireSync(id);
  }

  private requireSync(id: string): Workspace {
    const ws = this.getSync(id);
    if (!ws) throw Errors.workspaceNotFound(id);
    return ws;
  }

  async list(): Promise<Workspace[]> {
    return this.db
      .prepare(
        'SELECT id, name, monthly_item_quota, monthly_review_quota, created_at FROM workspaces ORDER BY created_at, id',
      )
      .all() as Workspace[];
  }

  async setQuota(id: string, quota: number | null): Promise<Workspace> {
    this.requireSync(id);
    this.db.prepare('UPDATE workspaces SET monthly_item_quota = ? WHERE id = ?').run(quota, id);
    return this.requireSync(id);
  }

  /** The workspace's monthly review units (places); null = the deployment default. */
  async setReviewQuota(id: string, quota: number | null): Promise<Workspace> {
    this.requireSync(id);
    this.db.prepare('UPDATE workspaces SET monthly_review_quota = ? WHERE id = ?').run(quota, id);
    return this.requireSync(id);
  }

  /** Creates a key; the token is returned only here. */
  async createKey(workspaceId: string, label = ''): Promise<{ key: WorkspaceKey; token: string }> {
    this.requireSync(workspaceId);
    const { key, token, digest: d } = newKey(workspaceId, label);
    this.db
      .prepare(
        'INSERT INTO workspace_keys (id, workspace_id, label, prefix, digest, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      )
      .run(key.id, key.workspace_id, key.label, key.prefix, d, key.created_at);
    return { key, token };
  }

  async listKeys(workspaceId?: string): Promise<WorkspaceKey[]> {
    const cols = 'id, workspace_id, label, prefix, created_at, last_used_at, revoked_at';
    return (
      workspaceId
        ? this.db
            .prepare(`SELECT ${cols} FROM workspace_keys WHERE workspace_id = ? ORDER BY created_at, id`)
            .all(workspaceId)
        : this.db.prepare(`SELECT ${cols} FROM workspace_keys ORDER BY workspace_id, created_at, id`).all()
    ) as WorkspaceKey[];
  }

  async revokeKey(keyId: string): Promise<WorkspaceKey> {
    const res = this.db
      .prepare('UPDATE workspace_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL')
      .run(new Date().toISOString(), keyId);
    const key = this.db
      .prepare(
        'SELECT id, workspace_id, label, prefix, created_at, last_used_at, revoked_at FROM workspace_keys WHERE id = ?',
      )
      .get(keyId) as WorkspaceKey | undefined;
    if (!key) throw Errors.keyNotFound(keyId);
    if (res.changes === 0) throw Errors.keyAlreadyRevoked(keyId);
    return key;
  }

  /** The workspace a presented token belongs to, or null (unknown or revoked). */
  async authenticate(token: string): Promise<{ workspaceId: string; keyId: string } | null> {
    if (!looksLikeKey(token)) return null;
    const row = this.db
      .prepare('SELECT id, workspace_id, last_used_at FROM workspace_keys WHERE digest = ? AND revoked_at IS NULL')
      .get(digest(token)) as { id: string; workspace_id: string; last_used_at: string | null } | undefined;
    if (!row) return null;
    // last_used_at at minute granularity: one write per key per minute, not per request.
    const now = new Date().toISOString();
    if (!row.last_used_at || row.last_used_at.slice(0, 16) !== now.slice(0, 16))
      this.db.prepare('UPDATE workspace_keys SET last_used_at = ? WHERE id = ?').run(now, row.id);
    return { workspaceId: row.workspace_id, keyId: row.id };
  }
}
