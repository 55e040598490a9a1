import type { UsageSnapshot } from './usageMeter.js';
import type { Workspace, WorkspaceKey } from './workspaceStore.js';

/**
 * Workspaces and their API keys, whatever engine holds them: SQLite (WorkspaceStore, one box) or
 * PostgreSQL (PgWorkspaceStore, fleet mode, shared by every box). Services, routes and the CLI only know
 * this interface. Every write is committed before its promise resolves (the commit comes before the
 * acknowledgement); in fleet mode an unreachable database rejects with 503 store_unavailable.
 */
export interface WorkspaceRepository {
  create(input: {
    id?: string;
    name: string;
    monthlyItemQuota?: number | null;
    monthlyReviewQuota?: number | null;
  }): Promise<Workspace>;
  get(id: string): Promise<Workspace | null>;
  require(id: string): Promise<Workspace>;
  list(): Promise<Workspace[]>;
  setQuota(id: string, quota: number | null): Promise<Workspace>;
  setReviewQuota(id: string, quota: number | null): Promise<Workspace>;
  /** Creates a key; the token is returned only here. */
  createKey(workspaceId: string, label?: string): Promise<{ key: WorkspaceKey; token: string }>;
  listKeys(workspaceId?: string): Promise<WorkspaceKey[]>;
  revokeKey(keyId: string): Promise<WorkspaceKey>;
  /** The workspace a presented token belongs to, or null (unknown or revoked). */
  authenticate(token: string): Promise<{ workspaceId: string; keyId: string } | null>;
}

/** Reading a workspace's metered usage (the reserving and billing happen inside the run store's transactions). */
export interface UsageReader {
  quotas(workspaceId: string): Promise<{ items: number; reviews: number }>;
  snapshot(workspaceId: string, period: string): Promise<UsageSnapshot>;
}
