/**
 * The API client. Two ways in: a user's password sign-in (the server's HttpOnly session cookie, which this
 * code never sees, plus the session's CSRF token, kept here and sent as X-CSRF-Token with every request
 * that changes something), or the API key pasted as an advanced alternative. The key lives only in this
 * module variable: never in storage, cookies or URLs, so it is gone when the tab closes. Images and the
 * MJPEG preview go through the same fetch, so they carry the same credential.
 */
import type { z } from 'zod';
import type { RoleT, Whoami as WhoamiSchema } from '../contract/users.js';

/** A response body as the server's zod schema declares it (types only: nothing of the server is bundled). */
export type Wire<S extends z.ZodType> = z.output<S>;

type Whoami = Wire<typeof WhoamiSchema>;

let apiKey: string | null = null;
/** The signed-in user's session (cookie): who, and the CSRF token of the session. */
let user: { username: string; role: RoleT; csrf: string } | null = null;
let onUnauthorized: (() => void) | null = null;

const ROLE_RANK: Record<RoleT, number> = { viewer: 0, operator: 1, admin: 2 };

export const session = {
  get signedIn(): boolean {
    return apiKey !== null || user !== null;
  },
  /** The API key (replaces a user session in this tab). */
  set(key: string | null): void {
    apiKey = key;
    if (key !== null) user = null;
  },
  /** A user signed in with a password (the answer of login, set-up or GET /v1/auth/session). */
  setUser(w: Whoami): void {
    apiKey = null;
    user = w.user && w.csrf_token ? { username: w.user.username, role: w.role, csrf: w.csrf_token } : null;
  },
  clear(): void {
    apiKey = null;
    user = null;
  },
  /** Signed in with a password (a cookie session), not with the key. */
  get isUser(): boolean {
    return user !== null;
  },
  get username(): string | null {
    return user?.username ?? null;
  },
  /** The key is admin; without any credential (auth off) everything is open. */
  get role(): RoleT {
    return user?.role ?? 'admin';
  },
  /** Whether the signed-in role may use what needs `need` (pages hide what would only answer 403). */
  allows(need: RoleT): boolean {
    return ROLE_RANK[this.role] >= ROLE_RANK[need];
  },
  /** For handing the key to a kiosk window this tab opened (postMessage, same origin only). */
  key(): string | null {
    return apiKey;
  },
  onUnauthorized(fn: () => void): void {
    onUnauthorized = fn;
  },
};

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The credential's headers: the Bearer key, or for a user's session the CSRF token on requests that change something. */
export function authHeaders(method = 'GET'): Record<string, string> {
  if (apiKey) return { Authorization: `Bearer ${apiKey}` };
  if (user && !SAFE.has(method.toUpperCase())) return { 'X-CSRF-Token': user.csrf };
  return {};
}

/** An API error envelope (or a network failure, status 0) as one value the pages can show. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly requestId: string | null = null,
  ) {
    super(message);
  }
}

async function failure(res: Response): Promise<ApiFailure> {
  try {
    const body = (await res.json()) as {
      error?: { code: string; message: string; details?: Record<string, unknown> };
      request_id?: string;
    };
    if (body.error)
      return new ApiFailure(
        res.status,
        body.error.code,
        body.error.message,
        body.error.details ?? {},
        body.request_id ?? null,
      );
  } catch {}
  return new ApiFailure(res.status, 'http_error', `HTTP ${res.status}`);
}

/** fetch with the key; network errors become ApiFailure(0, 'network_error'). */
export async function send(path: string, init: RequestInit = {}): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, {
      ...init,
      headers: { ...authHeaders(init.method), ...(init.headers as Record<string, string> | undefined) },
      // The session cookie goes along unless the key is used (then nothing but the key should count).
      credentials: apiKey ? 'omit' : 'same-origin',
      cache: 'no-store',
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiFailure(0, 'network_error', 'The daemon could not be reached.');
  }
  if (res.status === 401) onUnauthorized?.();
  return res;
}

/** JSON request; FormData bodies go as multipart. Returns the parsed body (null for 204). */
export async function api<T = unknown>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const init: RequestInit = { method, signal };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json' };
  }
  const res = await send(path, init);
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return null as T;
  return (await res.json()) as T;
}

export async function ensureOk(res: Response): Promise<Response> {
  if (!res.ok) throw await failure(res);
  return res;
}

/** An image fetched with the Bearer header, as an object URL the caller must revoke. */
export async function imageUrl(path: string, signal?: AbortSignal): Promise<string> {
  const res = await ensureOk(await send(path, { signal }));
  return URL.createObjectURL(await res.blob());
}

/** Checks a key before keeping it; a wrong key here is the form's error, not a sign-out. */
export async function checkKey(key: string): Promise<void> {
  let res: Response;
  try {
    res = await fetch('/v1/collections?limit=1', {
      headers: { Authorization: `Bearer ${key}` },
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch {
    throw new ApiFailure(0, 'network_error', 'The daemon could not be reached.');
  }
  if (res.status === 401) throw new ApiFailure(401, 'unauthorized', 'That API key is not valid.');
  await ensureOk(res);
}

/** Who the session cookie signs this browser in as (after a reload), or null when it signs in no one. */
export async function restoreSession(): Promise<Whoami | null> {
  try {
    const res = await fetch('/v1/auth/session', { credentials: 'same-origin', cache: 'no-store' });
    if (!res.ok) return null;
    const w = (await res.json()) as Whoami;
    if (w.credential !== 'session') return null;
    session.setUser(w);
    return w;
  } catch {
    return null;
  }
}

/** Password sign-in (or the first admin's set-up with the code); a refusal is the form's error. */
export async function signInWithPassword(
  body: { username: string; password: string } | { setup_code: string; username: string; password: string },
): Promise<Whoami> {
  const path = 'setup_code' in body ? '/v1/auth/setup' : '/v1/auth/login';
  let res: Response;
  try {
    res = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch {
    throw new ApiFailure(0, 'network_error', 'The daemon could not be reached.');
  }
  const w = (await ensureOk(res).then((r) => r.json())) as Whoami;
  session.setUser(w);
  return w;
}

/** Signs out: the server ends the cookie's session (a key is only forgotten). */
export async function signOut(): Promise<void> {
  if (user) await send('/v1/auth/logout', { method: 'POST' }).catch(() => undefined);
  session.clear();
}

export const enc = encodeURIComponent;
