import { setTimeout as sleep } from 'node:timers/promises';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ApiError, Errors } from '../contract/errors.js';
import { createMcpServer, type ScrapeBackend, type ToolNameStyle } from './mcpServer.js';

/**
 * Tool calls forwarded to a running daemon's REST API with a workspace key, so scrapes still go
 * through its queue, its low-priority worker, its rate limiter and its metering. A run that outlives
 * the synchronous call (202) is polled until it is final.
 */
export function restBackend(baseUrl: string, workspaceId: string, key: string): ScrapeBackend {
  const base = `${baseUrl.replace(/\/+$/, '')}/workspaces/${encodeURIComponent(workspaceId)}`;
  const call = async (method: string, path: string, signal: AbortSignal, body?: unknown) => {
    let res: Response;
    try {
      res = await fetch(base + path, {
        method,
        signal,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      if (signal.aborted) throw e;
      throw Errors.daemonUnreachable(baseUrl, (e as Error).message);
    }
    const json = (await res.json().catch(() => ({}))) as Record<string, any>;
    if (res.status >= 400) throw ApiError.fromEnvelope(res.status, json);
    const { request_id: _id, ...run } = json;
    return { status: res.status, run };
  };
  const untilFinal = async (run: Record<string, unknown>, signal: AbortSignal) => {
    while (run.status === 'queued' || run.status === 'running' || run.status === 'waiting_for_rate_limit') {
      await sleep(1000, undefined, { signal });
      run = (await call('GET', `/runs/${run.run_id as string}`, signal)).run;
    }
    return run;
  };
  return {
    async scrape(kind, request, signal) {
      const { run } = await call('POST', `/scrapers/${kind}/scrape`, signal, request);
      return untilFinal(run, signal);
    },
    async getRun(runId, signal) {
      return (await call('GET', `/runs/${encodeURIComponent(runId)}`, signal)).run;
    },
    async runItems(runId, cursor, limit, signal) {
      const q = new URLSearchParams({ limit: String(limit), ...(cursor ? { cursor } : {}) });
      return (await call('GET', `/runs/${encodeURIComponent(runId)}/items?${q.toString()}`, signal)).run;
    },
    async cancelRun(runId, signal) {
      return (await call('POST', `/runs/${encodeURIComponent(runId)}/cancel`, signal)).run;
    },
  };
}

export async function runMcpStdio(opts: {
  url: string;
  workspaceId: string;
  key: string;
  style: ToolNameStyle;
}): Promise<number> {
  const server = createMcpServer(restBackend(opts.url, opts.workspaceId, opts.key), opts.style);
  const transport = new StdioServerTransport();
  await server.connect(transport);
  // Never write to stdout here: it carries JSON-RPC.
  return new Promise<number>((resolve) => {
    transport.onclose = () => resolve(0);
    process.stdin.once('end', () => resolve(0));
  });
}
