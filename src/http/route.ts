import type Koa from 'koa';
import type { z } from 'zod';
import type { ApiError } from '../contract/errors.js';

export type Method = 'get' | 'post' | 'patch' | 'delete' | 'put';

export interface AppState {
  requestId: string;
  /** Aborts at the request deadline or when the client goes away. */
  signal: AbortSignal;
  /** Set by the workspace-key guard on /workspaces/{workspace_id}/… routes. */
  workspaceId?: string;
  /** Set when the request body passed `[server] max_request_bytes` while streaming (it was cut there). */
  bodyTooLarge?: ApiError;
  /** Set by the auth guards: what admitted the request, so a long-lived response can check it again (AuthorizedStreams). */
  credential?: { kind: 'api_key' } | { kind: 'kiosk'; token: string };
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

export const koaPath = (openApiPath: string): string => openApiPath.replace(/\{([a-z_]+)\}/g, ':$1');
