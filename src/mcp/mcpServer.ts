import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { isApiError } from '../contract/errors.js';
import { validate } from '../contract/validation.js';
import { scraperKinds } from '../scrapers/kinds.js';
import { RunStatus, runResourceSchema } from '../scrapers/scrapeResult.js';
import { VERSION } from '../contract/version.js';

/** Where tool calls go: the daemon's queue in-process (HTTP /mcp) or the daemon's REST API (stdio). */
export interface ScrapeBackend {
  /** Runs a validated request; resolves with the run resource (final, or still running near the deadline). */
  scrape(kind: string, request: unknown, signal: AbortSignal): Promise<Record<string, unknown>>;
  getRun(runId: string, signal: AbortSignal): Promise<Record<string, unknown>>;
  /** A page of a run's items after `cursor` (null: from the start). */
  runItems(
    runId: string,
    cursor: string | undefined,
    limit: number,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>>;
  cancelRun(runId: string, signal: AbortSignal): Promise<Record<string, unknown>>;
}

export type ToolNameStyle = 'underscore' | 'dotted';

interface ToolDef {
  /** Canonical dotted name (forum.scrape); always callable. */
  canonical: string;
  title: string;
  description: string;
  input: z.ZodType;
  output: z.ZodType;
  /** Only runs.cancel changes anything (it stops a run of this workspace). */
  readOnly?: boolean;
  call(args: unknown, backend: ScrapeBackend, signal: AbortSignal): Promise<Record<string, unknown>>;
}

const RunId = z.string().min(1).max(64).describe('run_id returned by a scrape tool.');
const RunGetInput = z.strictObject({ run_id: RunId });
const RunItemsInput = z.strictObject({
  run_id: RunId,
  cursor: z.string().max(2048).optional().describe('next_cursor of the previous page; omit for the first page.'),
  limit: z.int().min(1).max(1000).default(100),
});
const RunItemsOutput = z
  .object({
    run_id: z.string(),
    status: RunStatus,
    items: z.array(z.unknown()),
    next_cursor: z.string().nullable().describe('Null once the run is final and every item was read.'),
  })
  .meta({ id: 'ToolRunItemsPage' });

function toolDefs(): ToolDef[] {
  const scrapes = scraperKinds().map((k): ToolDef => ({
    canonical: k.toolName,
    title: k.title,
    description: `${k.description} If the run is still going when the call would time out, the result has status "running": poll it with runs_get.`,
    input: k.request,
    output: runResourceSchema(k.item, `${k.kind}ToolRun`),
    call: (args, backend, signal) => backend.scrape(k.kind, validate(k.request, args), signal),
  }));
  const anyRun = runResourceSchema(z.unknown(), 'ToolRun');
  return [
    ...scrapes,
    {
      canonical: 'runs.get',
      title: 'Get a scrape run',
      description:
        'The status (queued, running, waiting_for_rate_limit with resume_at, succeeded, partial, failed, cancelled), per-source report, billing and, once finished, the items of a scrape run of this workspace.',
      input: RunGetInput,
      output: anyRun,
      call: (args, backend, signal) => backend.getRun(validate(RunGetInput, args).run_id, signal),
    },
    {
      canonical: 'runs.items',
      title: "Page a scrape run's items",
      description:
        'The items of a finished scrape run in delivery order, a page at a time: pass next_cursor back until it is null.',
      input: RunItemsInput,
      output: RunItemsOutput,
      call: (args, backend, signal) => {
        const a = validate(RunItemsInput, args);
        return backend.runItems(a.run_id, a.cursor, a.limit, signal);
      },
    },
    {
      canonical: 'runs.cancel',
      title: 'Cancel a scrape run',
      description:
        'Stops a queued or running scrape run of this workspace; it keeps (and bills) only the items it delivered before.',
      input: RunGetInput,
      output: anyRun,
      readOnly: false,
      call: (args, backend, signal) => backend.cancelRun(validate(RunGetInput, args).run_id, signal),
    },
  ];
}

const advertised = (canonical: string, style: ToolNameStyle) =>
  style === 'underscore' ? canonical.replaceAll('.', '_') : canonical;

/** JSON Schema for a tool: as clients send it (defaults optional), without the $schema noise. */
function jsonSchema(schema: z.ZodType): { type: 'object'; [k: string]: unknown } {
  const { $schema: _drop, ...doc } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  // A schema with a registered id comes back as {$ref, $defs}; tools need the object itself at the root.
  const ref = typeof doc.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(doc.$ref)?.[1] : undefined;
  if (ref) {
    const defs = { ...(doc.$defs as Record<string, Record<string, unknown>>) };
    const root = defs[ref]!;
    delete defs[ref];
    return { ...root, ...(Object.keys(defs).length ? { $defs: defs } : {}), type: 'object' };
  }
  return { ...doc, type: 'object' };
}

/**
 * One MCP server per connection (stateless HTTP) or process (stdio). Tools are generated from the
 * scraper registry and share the REST schemas. Names are advertised without dots by default (several
 * clients reject `forum.scrape`), and both spellings are accepted on tools/call.
 */
export function createMcpServer(backend: ScrapeBackend, style: ToolNameStyle): Server {
  const server = new Server({ name: 'vigil', version: VERSION }, { capabilities: { tools: {} } });
  const defs = toolDefs();
  const byName = new Map<string, ToolDef>();
  for (const d of defs) {
    byName.set(d.canonical, d);
    byName.set(d.canonical.replaceAll('.', '_'), d);
  }
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: defs.map((d) => ({
      name: advertised(d.canonical, style),
      title: d.title,
      description: d.description,
      inputSchema: jsonSchema(d.input),
      outputSchema: jsonSchema(d.output),
      annotations: {
        title: d.title,
        readOnlyHint: d.readOnly ?? true,
        openWorldHint: true,
        idempotentHint: false,
        destructiveHint: false,
      },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolResult> => {
    const def = byName.get(req.params.name);
    if (!def) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
    try {
      const result = await def.call(req.params.arguments ?? {}, backend, extra.signal);
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
    } catch (e) {
      // User-facing failures (validation, quota, not configured) are tool errors the model can read.
      if (!isApiError(e)) throw e;
      return {
        isError: true,
        content: [
          { type: 'text', text: JSON.stringify({ error: { code: e.code, message: e.message, details: e.details } }) },
        ],
      };
    }
  });
  return server;
}
