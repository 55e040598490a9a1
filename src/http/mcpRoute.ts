import type Router from '@koa/router';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { createMcpServer, type ScrapeBackend } from '../mcp/mcpServer.js';
import type { ScrapeRunService } from '../scrapers/runService.js';
import { readJson } from './input.js';
import type { AppContext, AppState } from './route.js';
import type { Runtime } from './runtime.js';
import { workspaceOf } from './workspaceAuth.js';

/** Tool calls of one workspace, straight into the daemon's run queue (the same submit-and-wait as REST). */
export function inProcessBackend(scrapes: ScrapeRunService, workspaceId: string): ScrapeBackend {
  return {
    async scrape(kind, request, signal) {
      return (await scrapes.submitAndWait(workspaceId, kind, request, signal)).run;
    },
    async getRun(runId) {
      return scrapes.view(workspaceId, runId);
    },
    async runItems(runId, cursor, limit) {
      return { ...(await scrapes.items(workspaceId, runId, cursor, limit)) };
    },
    async cancelRun(runId) {
      return scrapes.cancel(workspaceId, runId);
    },
  };
}

/**
 * MCP over Streamable HTTP at /mcp, stateless (a server and transport per POST), JSON responses. The
 * Bearer workspace key chooses the workspace; GET/DELETE (sessions, server-sent streams) are 405.
 */
export function mountMcp(router: Router<AppState>, rt: Runtime): void {
  const maxBytes = rt.loaded.config.server.max_request_bytes;
  router.post('/mcp', async (koaCtx) => {
    const ctx = koaCtx as unknown as AppContext;
    const workspaceId = await workspaceOf(rt.workspaces, ctx.get('Authorization') || undefined);
    const body = await readJson(ctx, z.unknown(), maxBytes);
    const server = createMcpServer(inProcessBackend(rt.scrapes, workspaceId), rt.loaded.config.scrapers.mcp_tool_names);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    ctx.res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    ctx.respond = false;
    await transport.handleRequest(ctx.req, ctx.res, body);
  });
  const notAllowed = (koaCtx: { status: number; body: unknown; set(k: string, v: string): void }) => {
    koaCtx.status = 405;
    koaCtx.set('Allow', 'POST');
    koaCtx.body = {
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless (POST only).' },
      id: null,
    };
  };
  router.get('/mcp', notAllowed);
  router.delete('/mcp', notAllowed);
}
