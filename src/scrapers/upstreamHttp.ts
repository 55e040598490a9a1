import { setTimeout as sleep } from 'node:timers/promises';
import type { IncomingHttpHeaders } from 'node:http';
import { type ApiError, Errors } from '../contract/errors.js';

/** undici / socket error codes worth another attempt; the timeouts among them are reported as such. */
const RETRY_ERRORS = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
]);
const TIMEOUT_ERRORS = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);

const errorCode = (e: unknown): string => (e as { code?: string }).code ?? '';

export const isRetryableTransportError = (e: unknown): boolean => RETRY_ERRORS.has(errorCode(e));

/**
 * The typed error for a request that got no answer: 504 upstream_timeout or 502 upstream_unreachable,
 * naming the upstream (and the proxy when one is in the way), never its URL or credentials.
 */
export function transportError(
  e: unknown,
  o: { upstream: string; timeoutMs: number; attempts: number; path: string; viaProxy?: boolean },
): ApiError {
  const code = errorCode(e);
  if (TIMEOUT_ERRORS.has(code))
    return Errors.upstreamTimeout(
      `${o.upstream} did not answer within ${o.timeoutMs / 1000} s (${o.attempts} attempts).`,
      { path: o.path },
    );
  return Errors.upstreamUnreachable(
    `${o.upstream} could not be reached${o.viaProxy ? ' through the proxy' : ''}: ${code || (e as Error).message}.`,
    { path: o.path },
  );
}

/** Full jitter, doubling: [0, 2) × base for the first retry, [2, 4) × base for the second (prawcore's schedule). */
export function backoffDelayMs(attempt: number, baseMs: number, random = Math.random()): number {
  return Math.round(baseMs * 2 * attempt + random * baseMs * 2);
}

export const backoff = (attempt: number, baseMs: number, signal?: AbortSignal): Promise<void> =>
  sleep(backoffDelayMs(attempt, baseMs), undefined, { signal });

/** One header's value (the first when it repeats). */
export function headerOf(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}
