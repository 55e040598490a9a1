import { z } from 'zod';
import { API_CONTRACT_VERSION, VERSION } from '../contract/version.js';
import { isAudited, requiredRole, type RouteSpec } from './route.js';
import '../contract/common.js'; // registers ErrorEnvelope

/** Every /v1 operation documents the same error statuses, all as ErrorEnvelope (as upstream). */
const ERROR_STATUSES = ['400', '401', '404', '409', '413', '422', '500', '503'];
const REF = (id: string) => `#/components/schemas/${id}`;

type Json = Record<string, unknown>;

/** Removes JSON-Schema noise that zod adds and OpenAPI components do not want. */
function clean(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(clean);
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (k === '$schema' || k === '$id') continue;
    if ((k === 'minimum' || k === 'maximum') && Math.abs(v as number) === Number.MAX_SAFE_INTEGER) continue;
    out[k] = clean(v);
  }
  return out;
}

function schemaRef(schema: z.ZodType): Json {
  const meta = z.globalRegistry.get(schema) as { id?: string } | undefined;
  if (meta?.id) return { $ref: REF(meta.id) };
  return clean(z.toJSONSchema(schema, { unrepresentable: 'any', io: 'output' })) as Json;
}

/** A message the service sends (OpenAPI 3.1 `webhooks`): its type is the key, its schema the POSTed body. */
export interface WebhookEventSpec {
  name: string;
  summary: string;
  schema: z.ZodType;
}

export function buildOpenApi(routes: RouteSpec[], webhooks: WebhookEventSpec[] = []): Json {
  const paths: Record<string, Json> = {};
  for (const r of routes) {
    const responses: Json = {};
    const success: Json = { description: r.success.description ?? 'Successful Response' };
    if (r.success.schema)
      success.content = { [r.success.media ?? 'application/json']: { schema: schemaRef(r.success.schema) } };
    else if (r.success.media) success.content = { [r.success.media]: { schema: { type: 'string', format: 'binary' } } };
    responses[String(r.success.status)] = success;
    for (const s of ERROR_STATUSES)
      responses[s] = {
        description: 'Error',
        content: { 'application/json': { schema: { $ref: REF('ErrorEnvelope') } } },
      };
    for (const [s, x] of Object.entries(r.extraResponses ?? {}))
      responses[s] = { description: x.description, content: { 'application/json': { schema: schemaRef(x.schema) } } };
    const op: Json = { operationId: r.operationId, summary: r.summary, tags: r.tags, responses };
    if (r.description) op.description = r.description;
    if (!r.public) op.security = [{ bearerAuth: [] }];
    if (!r.public && r.auth !== 'workspace') {
      // Who may call it when signed in with a password (the API key is admin); 403 forbidden_role below it.
      op['x-vigil-role'] = requiredRole(r);
      responses['403'] ??= {
        description:
          "forbidden_role: the signed-in user's role is below x-vigil-role; csrf_failed: a cookie request without its CSRF token.",
        content: { 'application/json': { schema: { $ref: REF('ErrorEnvelope') } } },
      };
    }
    if (isAudited(r)) op['x-vigil-audited'] = true;
    if (r.body)
      op.requestBody = { required: true, content: { [r.body.contentType]: { schema: schemaRef(r.body.schema) } } };
    if (r.query) {
      op.parameters = Object.entries(r.query.shape).map(([name, s]) => ({
        name,
        in: 'query',
        required: !(s as z.ZodType).safeParse(undefined).success,
        schema: clean(z.toJSONSchema(s as z.ZodType, { unrepresentable: 'any', io: 'input' })),
      }));
    }
    const pathParams = [...r.path.matchAll(/\{([a-z_]+)\}/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (pathParams.length) op.parameters = [...pathParams, ...((op.parameters as Json[] | undefined) ?? [])];
    (paths[r.path] ??= {})[r.method] = op;
  }
  // Components: every schema registered with an id (request bodies, responses and what they reference).
  const all = z.toJSONSchema(z.globalRegistry, { uri: REF, unrepresentable: 'any', io: 'output' }) as { schemas: Json };
  // Request bodies are documented as clients send them: a field with a default is optional.
  const inputs = z.toJSONSchema(z.globalRegistry, { uri: REF, unrepresentable: 'any', io: 'input' }) as {
    schemas: Json;
  };
  for (const r of routes) {
    const bodyId = r.body ? (z.globalRegistry.get(r.body.schema) as { id?: string } | undefined)?.id : undefined;
    if (bodyId && inputs.schemas[bodyId]) all.schemas[bodyId] = inputs.schemas[bodyId];
  }
  // So are the request-side parts they reference (e.g. MonitorSource-Input: `type` has a default, so it is optional).
  for (const id of Object.keys(all.schemas))
    if (id.endsWith('-Input') && inputs.schemas[id]) all.schemas[id] = inputs.schemas[id];
  // What the service POSTs to registered receivers (signed with the Standard Webhooks headers).
  const hooks: Record<string, Json> = {};
  for (const w of webhooks) {
    hooks[w.name] = {
      post: {
        operationId: `webhook_${w.name.replaceAll('.', '_')}`,
        summary: w.summary,
        tags: ['webhooks'],
        description:
          'Signed with Standard Webhooks: webhook-id (stable across retries), webhook-timestamp, webhook-signature (v1, HMAC-SHA256 with the endpoint secret). Any 2xx acknowledges; anything else is retried with backoff.',
        parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({
          name,
          in: 'header',
          required: true,
          schema: { type: 'string' },
        })),
        requestBody: { required: true, content: { 'application/json': { schema: schemaRef(w.schema) } } },
        responses: { '2XX': { description: 'Delivered.' } },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Vigil',
      version: API_CONTRACT_VERSION,
      'x-vigil-version': VERSION,
      description:
        'Self-hosted face service. Wire-compatible with InsightFace Server 0.3.x for the routes it implements. ' +
        'API clients use the Bearer API key (admin). The web UI signs people in with a password instead (POST /v1/auth/login): ' +
        'a session cookie, an X-CSRF-Token header on changes, and a role; x-vigil-role names the least role of each operation.',
    },
    paths,
    ...(webhooks.length ? { webhooks: hooks } : {}),
    components: { schemas: clean(all.schemas), securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer' } } },
  };
}
