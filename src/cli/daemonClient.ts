import { ApiError, Errors } from '../contract/errors.js';

/**
 * The running daemon's REST API for CLI commands that change what the daemon runs (monitors, collections):
 * the daemon validates, encrypts camera URLs with its box key, starts and stops the streams and, in fleet
 * mode, writes the gallery to PostgreSQL, so these commands go through it like `vigil gallery` does. The
 * admin key comes from VIGIL_API_KEY. An error answer is thrown as the daemon's own error (code, message).
 */
export class DaemonClient {
  constructor(
    readonly url: string,
    private readonly key: string | null,
  ) {}

  async call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.url.replace(/\/+$/, '') + path, {
        method,
        headers: {
          ...(this.key ? { authorization: `Bearer ${this.key}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
      throw Errors.daemonUnreachable(this.url, `${cause}; is it running? (systemctl status vigil)`);
    }
    const text = await res.text();
    const json = (text ? JSON.parse(text) : {}) as Record<string, any>;
    if (res.status === 401 && !this.key)
      throw ApiError.revive({
        status: 401,
        code: json.error?.code ?? 'unauthorized',
        message:
          'The daemon wants the admin API key: set VIGIL_API_KEY (a packaged box has it in /etc/vigil/vigil.env).',
      });
    if (res.status >= 400) throw ApiError.fromEnvelope(res.status, json);
    return json as T;
  }

  /** Every item of a paginated list (the `next_cursor` pages). */
  async all<T>(path: string, field: string): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | null = null;
    do {
      const q = new URLSearchParams({ limit: '100', ...(cursor ? { cursor } : {}) });
      const page: Record<string, unknown> = await this.call('GET', `${path}?${q.toString()}`);
      out.push(...((page[field] as T[]) ?? []));
      cursor = (page.next_cursor as string | null) ?? null;
    } while (cursor);
    return out;
  }
}
