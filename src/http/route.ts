import type Koa from 'koa';
import type { z } from 'zod';
import type { ApiError } from '../contract/errors.js';
import type { RoleT } from '../contract/users.js';

/**
 * What admitted a request (set by the auth guard), so a long-lived response can check it again
 * (AuthorizedStreams) and the audit log can name who acted. `session`: a user signed in with a password.
 */
export type Credential =
  | { kind: 'api_key'; keyId: number | null }
  | { kind: 'kiosk'; token: string }
  | { kind: 'session'; sessionId: string; userId: string; username: string; role: RoleT; csrfToken: string };

export type Method = 'get' | 'post' | 'patch' | 'delete' | 'put';

export interface AppState {
  requestId: string;
  /** Aborts at the request deadline or when the client goes away. */
  signal: AbortSignal;
  /** Set by the workspace-key guard on /workspaces/{workspace_id}/… routes. */
  workspaceId?: string;
  /** Set when the request body passed `[server] max_request_bytes` while streaming (it was cut there). */
  bodyTooLarge?: ApiError;
  /** Set by the auth guards: what admitted the request (absent on public routes and with [auth] enabled = false). */
  credential?: Credential;
  /** The client came over HTTPS (TLS here, or X-Forwarded-Proto from a trusted proxy). */
  https?: boolean;
  /** What an audited operation adds to its audit entry beyond its path (e.g. the username a sign-in tried). */
  auditDetail?: Record<string, unknown>;
}
export type AppContext = Koa.ParameterizedContext<AppState> & { params: Record<string, string> };

/**
 * One API operation: the router, the auth middleware and /openapi.json are all built from this list,
 * so documentation, validation and protection cannot disagree.
 */
export interface RouteSpec {
  method: Method;
  /** OpenAPI-style path, e.g. /v1/collections/{collection_id}. */
  path: string;
  operationId: string;
  summary: string;
  tags: string[];
  description?: string;
  /** No Bearer auth (only GET /v1/health). */
  public?: boolean;
  /** 'workspace': a workspace key (vgl_…) for the {workspace_id} in the path instead of the admin key. */
  auth?: 'admin' | 'workspace';
  /**
   * The least role a signed-in user needs (default admin, so an operation nobody classified is admin-only).
   * The API key is admin; kiosk tokens open only `kiosk` operations. Enforced by the guard, shown in
   * /openapi.json (x-vigil-role) and in docs/operations/users.md (npm run docs:roles).
   */
  role?: RoleT;
  /** Recorded in the audit log: by default every operation but GET; true for a read worth recording (an export). */
  audit?: boolean;
  /** A monitor's preview or state: a kiosk token issued for the {monitor_id} in the path opens it too. */
  kiosk?: boolean;
  body?: { contentType: 'multipart/form-data' | 'application/json'; schema: z.ZodType };
  query?: z.ZodObject;
  /** Success status -> schema (null for an empty body or a non-JSON media type given in `media`). */
  success: { status: number; schema: z.ZodType | null; media?: string; description?: string };
  /** Extra documented responses beyond the common error set (e.g. health's 503 body). */
  extraResponses?: Record<string, { schema: z.ZodType; description: string }>;
  handler: (ctx: AppContext) => Promise<void>;
}

/** The role an operation needs, and whether it is audited (RouteSpec defaults applied). */
export const requiredRole = (r: Pick<RouteSpec, 'role'>): RoleT => r.role ?? 'admin';
export const isAudited = (r: Pick<RouteSpec, 'audit' | 'method' | 'public' | 'auth'>): boolean =>
  r.auth !== 'workspace' && (r.audit ?? r.method !== 'get');

export const koaPath = (openApiPath: string): string => openApiPath.replace(/\{([a-z_]+)\}/g, ':$1');
