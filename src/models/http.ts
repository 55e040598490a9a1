/**
 * HTTP downloads for the installer: Node's fetch with timeouts, a byte cap, progress, and retries
 * with exponential backoff for the failures that are worth retrying (network, 429, 5xx).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { streamToFile, TooLargeError, type Digest } from './fsutil.js';
import { silentProgress, type ProgressFactory } from './progress.js';
import { SourceError } from './source-error.js';

export interface HttpOptions {
  /** Tries per URL, first one included. */
  maxAttempts?: number;
  /** First backoff delay; doubles on each retry. */
  baseDelayMs?: number;
  /** Upper bound for any single wait, Retry-After included. */
  maxDelayMs?: number;
  /** Time allowed until response headers arrive. */
  connectTimeoutMs?: number;
  /** Time allowed between two body chunks. */
  readTimeoutMs?: number;
  /** Time allowed for one whole attempt. */
  totalTimeoutMs?: number;
}

const DEFAULTS: Required<HttpOptions> = {
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  connectTimeoutMs: 15_000,
  readTimeoutMs: 15_000,
  totalTimeoutMs: 300_000,
};

export interface DownloadRequest {
  url: string;
  dest: string;
  /** Byte cap, enforced on Content-Length and while streaming. */
  limit: number;
  label: string;
  progress?: ProgressFactory;
  http?: HttpOptions;
}

/** A failed attempt, with what the retry loop needs to decide. */
class AttemptError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

class StatusError extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterMs: number | undefined,
  ) {
    super(`HTTP ${status}`);
  }
}

export async function downloadToFile(req: DownloadRequest): Promise<Digest> {
  const opts = { ...DEFAULTS, ...req.http };
  for (let attempt = 1; ; attempt++) {
    try {
      return await attemptDownload(req, opts);
    } catch (err) {
      if (err instanceof TooLargeError) throw new SourceError('too_large', `download ${err.message}`);
      const failure = classify(err);
      if (!failure.retryable || attempt >= opts.maxAttempts) {
        const tries = attempt > 1 ? ` (after ${attempt} attempts)` : '';
        throw new SourceError('unavailable', `${failure.message}${tries}`);
      }
      await sleep(retryDelay(attempt, failure.retryAfterMs, opts));
    }
  }
}

async function attemptDownload(req: DownloadRequest, opts: Required<HttpOptions>): Promise<Digest> {
  const watchdog = new Watchdog();
  const signal = AbortSignal.any([AbortSignal.timeout(opts.totalTimeoutMs), watchdog.signal]);
  watchdog.arm(opts.connectTimeoutMs, 'no response');
  try {
    const { url, authorization } = splitCredentials(req.url);
    const res = await fetch(url, {
      signal,
      redirect: 'follow',
      // identity: Content-Length must be the real size for the cap and the progress bar.
      headers: { 'accept-encoding': 'identity', 'user-agent': 'vigil-model-installer', ...authorization },
    });
    if (!res.ok || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      throw new StatusError(res.status, parseRetryAfter(res.headers.get('retry-after')));
    }
    const length = contentLength(res.headers);
    if (length !== undefined && length > req.limit) throw new TooLargeError(req.limit);
    const task = (req.progress ?? silentProgress)(req.label, length);
    watchdog.arm(opts.readTimeoutMs, 'stalled');
    try {
      const digest = await streamToFile(res.body, req.dest, req.limit, (n) => {
        watchdog.arm(opts.readTimeoutMs, 'stalled');
        task.update(n);
      });
      task.finish(true);
      return digest;
    } catch (err) {
      task.finish(false);
      throw err;
    }
  } catch (err) {
    // The abort surfaces as a generic error; report the timeout that caused it instead.
    if (signal.aborted && !(err instanceof TooLargeError)) throw timeoutError(signal.reason, opts);
    throw err;
  } finally {
    watchdog.disarm();
  }
}

/**
 * fetch refuses URLs with `user:pass@`; a private mirror given that way gets Basic auth instead
 * (fetch drops the header on cross-origin redirects).
 */
function splitCredentials(raw: string): { url: string; authorization: Record<string, string> } {
  const u = new URL(raw);
  if (!u.username && !u.password) return { url: raw, authorization: {} };
  const token = Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64');
  u.username = '';
  u.password = '';
  return { url: u.toString(), authorization: { authorization: `Basic ${token}` } };
}

/** Aborts when no progress happens in time; re-armed on every chunk. */
class Watchdog {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  readonly signal = this.controller.signal;

  arm(ms: number, what: string): void {
    this.disarm();
    this.timer = setTimeout(() => this.controller.abort(new AttemptError(`${what} within ${ms / 1000} s`, true)), ms);
  }

  disarm(): void {
    if (this.timer) clearTimeout(this.timer);
  }
}

function timeoutError(reason: unknown, opts: Required<HttpOptions>): AttemptError {
  if (reason instanceof AttemptError) return reason;
  return new AttemptError(`timed out after ${opts.totalTimeoutMs / 1000} s`, true);
}

function classify(err: unknown): AttemptError {
  if (err instanceof AttemptError) return err;
  if (err instanceof StatusError) {
    const retryable = err.status === 429 || err.status >= 500;
    return new AttemptError(err.message, retryable, err.retryAfterMs);
  }
  // fetch reports connection problems as TypeError with the socket error as its cause.
  if (err instanceof TypeError) return new AttemptError(`network error (${causeText(err)})`, true);
  const code = (err as NodeJS.ErrnoException).code;
  return new AttemptError(`local error (${code ?? (err as Error).message})`, false);
}

/** The socket error code when there is one; messages may echo proxy settings, codes never do. */
function causeText(err: TypeError): string {
  const cause = err.cause as { code?: string; message?: string } | undefined;
  return cause?.code ?? cause?.message ?? err.message;
}

export function retryDelay(attempt: number, retryAfterMs: number | undefined, opts: Required<HttpOptions>): number {
  const backoff = opts.baseDelayMs * 2 ** (attempt - 1);
  return Math.min(retryAfterMs ?? backoff, opts.maxDelayMs);
}

/** Retry-After is either delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function contentLength(headers: Headers): number | undefined {
  const value = headers.get('content-length');
  if (value === null || !/^\d+$/.test(value)) return undefined;
  return Number(value);
}
