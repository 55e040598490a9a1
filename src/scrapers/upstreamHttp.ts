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

/**
 * The rest a credential (Reddit) or egress (Google) takes after a block page: for the cool-down every
 * request fails fast without reaching the upstream. Runs during the rest are told why and until when
 * (the block's own code, `resume_at`, `blocked_at`), not the error of the run that met the block, whose
 * message and path belong to that run.
 */
export class BlockCooldown {
  private until = 0;
  private block: {
    at: string;
    status: unknown;
    make: (message: string, details: Record<string, unknown>) => ApiError;
  } | null = null;

  constructor(
    /** "Reddit blocked this app's credential", "Google flagged this egress (IP or proxy)". */
    private readonly blockedWhat: string,
    private readonly ms: number,
  ) {}

  /** A block page was met: rest for the cool-down. `make` builds the block's catalogue error. */
  trip(e: ApiError, make: (message: string, details: Record<string, unknown>) => ApiError): void {
    this.until = Date.now() + this.ms;
    this.block = { at: new Date().toISOString(), status: e.details.status ?? null, make };
  }

  /** Throws while resting. */
  check(): void {
    if (Date.now() >= this.until || !this.block) return;
    const resumeAt = new Date(this.until).toISOString();
    throw this.block.make(
      `${this.blockedWhat} at ${this.block.at}; it rests until ${resumeAt} ([scrapers] blocked_cooldown_seconds), so no request was sent.`,
      {
        resume_at: resumeAt,
        blocked_at: this.block.at,
        blocked_status: this.block.status,
        cooldown_seconds: this.ms / 1000,
      },
    );
  }
}
