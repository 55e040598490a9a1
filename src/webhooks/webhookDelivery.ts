import { request } from 'undici';
import { VERSION } from '../contract/version.js';

/** What one attempt gave. */
export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  latencyMs: number;
  gone: boolean;
}

const REDIRECTS = new Set([307, 308]);

/**
 * One POST of a webhook body: a per-attempt timeout (connect to response end), 2xx = delivered. Only
 * 307/308 redirects to the same origin are followed (the body must be re-sent as is); a redirect to
 * another host, or a 301/302/303, is a failed attempt that says where it pointed.
 */
export async function postWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  o: { timeoutMs: number; maxRedirects: number },
): Promise<AttemptResult> {
  const started = performance.now();
  const done = (r: Omit<AttemptResult, 'latencyMs'>): AttemptResult => ({
    ...r,
    latencyMs: Math.round((performance.now() - started) * 10) / 10,
  });
  const signal = AbortSignal.timeout(o.timeoutMs);
  let target = new URL(url);
  try {
    for (let hop = 0; ; hop++) {
      const res = await request(target, {
        method: 'POST',
        body,
        signal,
        headersTimeout: o.timeoutMs,
        bodyTimeout: o.timeoutMs,
        headers: { 'content-type': 'application/json', 'user-agent': `Vigil-Webhooks/${VERSION}`, ...headers },
      });
      await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
      const status = res.statusCode;
      if (status >= 200 && status < 300) return done({ ok: true, status, error: null, gone: false });
      const location = res.headers.location;
      if (status >= 300 && status < 400 && typeof location === 'string') {
        const next = new URL(location, target);
        if (next.origin !== target.origin)
          return done({
            ok: false,
            status,
            error: `redirect to another host (${next.host}) not followed`,
            gone: false,
          });
        if (!REDIRECTS.has(status))
          return done({
            ok: false,
            status,
            error: `HTTP ${status} redirect not followed (only 307/308 keep the POST body)`,
            gone: false,
          });
        if (hop >= o.maxRedirects)
          return done({ ok: false, status, error: `more than ${o.maxRedirects} redirects`, gone: false });
        target = next;
        continue;
      }
      return done({ ok: false, status, error: `HTTP ${status}`, gone: status === 410 });
    }
  } catch (e) {
    const err = e as Error & { code?: string; cause?: { code?: string } };
    const timedOut =
      signal.aborted ||
      err.name === 'TimeoutError' ||
      err.code === 'UND_ERR_HEADERS_TIMEOUT' ||
      err.code === 'UND_ERR_BODY_TIMEOUT';
    const why = timedOut ? `timed out after ${o.timeoutMs / 1000} s` : (err.cause?.code ?? err.code ?? err.message);
    return done({ ok: false, status: null, error: why, gone: false });
  }
}
