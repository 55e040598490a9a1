/**
 * The API client. The key lives only in this module variable: never in storage, cookies or URLs, so it is
 * gone when the tab closes. Images and the MJPEG preview are fetched with the same Bearer header.
 */
import type { z } from 'zod';

/** A response body as the server's zod schema declares it (types only: nothing of the server is bundled). */
export type Wire<S extends z.ZodType> = z.output<S>;

let apiKey: string | null = null;
let onUnauthorized: (() => void) | null = null;

export const session = {
  get signedIn(): boolean {
    return apiKey !== null;
  },
  set(key: string | null): void {
    apiKey = key;
  },
  /** For handing the key to a kiosk window this tab opened (postMessage, same origin only). */
  key(): string | null {
    return apiKey;
  },
  onUnauthorized(fn: () => void): void {
    onUnauthorized = fn;
  },
};

export function authHeaders(): Record<string, string> {
  return apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
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
      headers: { ...authHeaders(), ...(init.headers as Record<string, string> | undefined) },
      credentials: 'omit',
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

export const enc = encodeURIComponent;
