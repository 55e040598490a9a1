import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { apiRoutes } from '../../src/http/app.js';
import { koaPath } from '../../src/http/route.js';
import { SHARED, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/tempDir.js';

let d: TestDaemon;
test.before(async () => {
  d = await startTestDaemon({ toml: 'cors_origins = ["http://kiosk.local:8080"]' });
});
test.after.always(async () => {
  await d?.close();
});

let xKey: string | null = null;
async function workspaceKey(): Promise<string> {
  if (!(await d.runtime.workspaces.get('x'))) await d.runtime.workspaces.create({ id: 'x', name: 'x' });
  xKey ??= (await d.runtime.workspaces.createKey('x')).token;
  return xKey;
}

/** A request that would pass validation for each route, so a 401 can only come from the auth guard. */
function sampleRequest(method: string): RequestInit {
  if (method === 'get' || method === 'delete') return { method: method.toUpperCase() };
  return {
    method: method.toUpperCase(),
    body: form({
      image: face('identities/obama/1.jpg'),
      source: face('identities/obama/1.jpg'),
      target: face('identities/obama/2.jpg'),
    }),
  };
}

test('every non-public route requires the Bearer key (enumerated from the router), with WWW-Authenticate', async (t) => {
  const routes = apiRoutes(d.runtime);
  t.true(routes.length >= 6);
  for (const r of routes) {
    const url = d.url + koaPath(r.path).replace(/:([a-z_]+)/g, 'x');
    for (const headers of [
      {} as Record<string, string>,
      { Authorization: 'Bearer wrong-key-wrong-key' },
      { Authorization: `Basic ${d.key}` },
      { Authorization: `Bearer  ${d.key}` },
    ]) {
      const res = await fetch(url, { ...sampleRequest(r.method), headers });
      const body = (await res.json()) as any;
      if (r.public) {
        t.not(res.status, 401, `${r.method} ${r.path} is public`);
        continue;
      }
      t.is(res.status, 401, `${r.method} ${r.path} ${JSON.stringify(headers)}`);
      t.is(body.error.code, 'unauthorized');
      t.is(res.headers.get('www-authenticate'), 'Bearer');
    }
    if (!r.public) {
      // Workspace routes take that workspace's key (the path's {workspace_id} is "x" here), not the admin key.
      const key = r.auth === 'workspace' ? await workspaceKey() : d.key;
      const ok = await fetch(url, { ...sampleRequest(r.method), headers: { Authorization: `bearer ${key}` } });
      t.not(ok.status, 401, `${r.method} ${r.path} accepts the key (scheme is case-insensitive)`);
    }
  }
  t.deepEqual(
    routes.filter((r) => r.public).map((r) => `${r.method} ${r.path}`),
    ['get /v1/health', 'post /v1/auth/login', 'get /v1/auth/setup', 'post /v1/auth/setup'],
  );
});

test('health: ready body, request id header equals body, security headers on every response', async (t) => {
  const res = await fetch(`${d.url}/v1/health`);
  const body = (await res.json()) as any;
  t.is(res.status, 200);
  t.is(body.status, 'ready');
  t.is(body.auth_enabled, true);
  t.is(typeof body.version, 'string');
  t.regex(body.request_id, /^[0-9a-f-]{36}$/);
  t.is(res.headers.get('x-request-id'), body.request_id);
  for (const r of [res, await fetch(`${d.url}/v1/nope`)]) {
    t.is(r.headers.get('x-content-type-options'), 'nosniff');
    t.is(r.headers.get('x-frame-options'), 'DENY');
    t.is(r.headers.get('referrer-policy'), 'no-referrer');
    t.regex(r.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    t.truthy(r.headers.get('permissions-policy'));
  }
});

test('unknown routes are 404 route_not_found and wrong methods 405 method_not_allowed, in the envelope', async (t) => {
  const nf = await fetch(`${d.url}/v1/nothing-here`, { headers: d.auth });
  const nfBody = (await nf.json()) as any;
  t.is(nf.status, 404);
  t.is(nfBody.error.code, 'route_not_found');
  t.deepEqual(nfBody.error.details, {});
  t.is(nf.headers.get('x-request-id'), nfBody.request_id);
  const na = await fetch(`${d.url}/v1/detect`, { method: 'DELETE', headers: d.auth });
  t.is(na.status, 405);
  t.is(((await na.json()) as any).error.code, 'method_not_allowed');
  const root = await fetch(`${d.url}/definitely/not`);
  t.is(root.status, 404);
});

test('system and models describe the running engine', async (t) => {
  const sys = (await (await fetch(`${d.url}/v1/system`, { headers: d.auth })).json()) as any;
  for (const k of [
    'server_version',
    'os',
    'architecture',
    'cpu',
    'runtime',
    'execution_provider',
    'model',
    'database',
    'data',
    'models',
    'stats',
    'search',
    'api_key',
    'safe_config',
    'recent_errors',
  ])
    t.true(k in sys, k);
  t.is(sys.execution_provider, 'cpu');
  t.is(sys.database.quick_check, 'ok');
  t.is(sys.database.wal, true);
  t.true(sys.database.migration_count >= 1);
  t.deepEqual(sys.api_key, { authentication_enabled: true, configured: true });
  t.is(sys.runtime.inference_concurrency.max_concurrency >= 1, true);
  // This test process runs the daemon without the preload the systemd unit sets: glibc's malloc, said so.
  t.is(sys.runtime.memory_allocator, process.env.LD_PRELOAD?.includes('libjemalloc') ? 'jemalloc' : 'glibc');
  t.false(JSON.stringify(sys).includes(d.key), 'the key never appears');
  // The 404 from the previous test (or this one) is in recent_errors with its code and path.
  await fetch(`${d.url}/v1/missing-for-recent`, { headers: d.auth });
  const again = (await (await fetch(`${d.url}/v1/system`, { headers: d.auth })).json()) as any;
  t.true(again.recent_errors.some((e: any) => e.code === 'route_not_found' && e.path === '/v1/missing-for-recent'));
  const models = (await (await fetch(`${d.url}/v1/models`, { headers: d.auth })).json()) as any;
  t.is(models.execution_provider, 'cpu');
  t.is(models.models.length, 2);
  t.truthy(models.license);
});

test('CORS only for configured origins', async (t) => {
  const allowed = await fetch(`${d.url}/v1/health`, { headers: { Origin: 'http://kiosk.local:8080' } });
  t.is(allowed.headers.get('access-control-allow-origin'), 'http://kiosk.local:8080');
  const other = await fetch(`${d.url}/v1/health`, { headers: { Origin: 'http://evil.example' } });
  t.is(other.headers.get('access-control-allow-origin'), null);
  const pre = await fetch(`${d.url}/v1/detect`, {
    method: 'OPTIONS',
    headers: { Origin: 'http://kiosk.local:8080', 'Access-Control-Request-Method': 'POST' },
  });
  t.is(pre.status, 204);
  t.regex(pre.headers.get('access-control-allow-headers') ?? '', /Authorization/);
});

test('limits: request_too_large, image_too_large by bytes and by pixels (before decoding)', async (t) => {
  const small = await startTestDaemon({
    toml: 'max_request_bytes = 300000\nmax_image_bytes = 200000\nmax_image_pixels = 1000000',
  });
  try {
    const big = face('groups/obama_biden_stage.jpg'); // 559 KB
    const r1 = await post(small, '/v1/detect', form({ image: big }));
    t.is(r1.res.status, 413);
    t.is(r1.json.error.code, 'request_too_large');
    const mid = face('groups/obama_biden_office.jpg').subarray(0, 250000); // under the body limit, over the image limit
    const r2 = await post(small, '/v1/detect', form({ image: Buffer.from(mid) }));
    t.is(r2.res.status, 413);
    t.is(r2.json.error.code, 'image_too_large');
    // 2000x1000 = 2 MP of flat colour: a tiny PNG whose pixels exceed the limit.
    const bomb = await sharp({ create: { width: 2000, height: 1000, channels: 3, background: '#808080' } })
      .png()
      .toBuffer();
    t.true(bomb.length < 200000);
    const r3 = await post(small, '/v1/detect', form({ image: bomb }));
    t.is(r3.res.status, 413);
    t.is(r3.json.error.code, 'image_too_large');
    t.is(r3.json.error.details.max_image_pixels, 1000000);
  } finally {
    await small.close();
  }
});

test('a request past the deadline is 503 request_timeout', async (t) => {
  const slow = await startTestDaemon({ toml: 'request_timeout_seconds = 0.05' });
  try {
    // 24 MP of smooth gradient: a small file that takes far longer than 50 ms to decode on any CPU.
    const width = 6000,
      height = 4000;
    const gradient = Buffer.alloc(width * height * 3);
    for (let i = 0; i < gradient.length; i++) gradient[i] = (i / 3) % 251;
    const large = await sharp(gradient, { raw: { width, height, channels: 3 } })
      .jpeg({ quality: 80 })
      .toBuffer();
    t.true(large.length < 10 * 1024 * 1024);
    const { res, json } = await post(slow, '/v1/detect', form({ image: large }));
    t.is(res.status, 503);
    t.is(json.error.code, 'request_timeout');
    // The engine keeps serving afterwards.
    const health = await fetch(`${slow.url}/v1/health`);
    t.is(health.status, 200);
  } finally {
    await slow.close();
  }
});

test('before the models are ready health is 503 not_ready and model routes 503 service_not_ready', async (t) => {
  const empty = tempDir(t, 'vigil-nomodels-');
  const nr = await startTestDaemon({ modelsDir: empty, waitReady: false });
  try {
    const err = await t.throwsAsync(nr.ready);
    t.is((err as any).code, 'model_not_installed');
    t.regex(err!.message, /vigil models install edge_s/);
    const h = await fetch(`${nr.url}/v1/health`);
    const body = (await h.json()) as any;
    t.is(h.status, 503);
    t.is(body.status, 'not_ready');
    const det = await post(nr, '/v1/detect', form({ image: face('identities/obama/1.jpg') }));
    t.is(det.res.status, 503);
    t.is(det.json.error.code, 'service_not_ready');
  } finally {
    await nr.close();
  }
});

// ---- /openapi.json against the upstream snapshot, for every route we implement ----

type Json = Record<string, any>;
const snapshot = JSON.parse(readFileSync(join(SHARED, 'reference/openapi.snapshot.json'), 'utf8')) as Json;
const deref = (doc: Json, s: Json | undefined): Json | undefined =>
  s?.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s;

/** Request fields Vigil adds to upstream bodies: optional, defaulting to the upstream behaviour. */
/** The monitor extensions of issue 41: zones, masks, min_face_size and the motion gate's overrides. */
const MONITOR_EXTENSIONS = [
  'zones',
  'motion_mask',
  'face_mask',
  'min_face_size',
  'motion',
  'faces',
  'clips',
  'detect_url',
];
const BODY_EXTENSIONS: Record<string, string[]> = {
  '/v1/collections/{collection_id}/search': ['faces'],
  '/v1/monitors': MONITOR_EXTENSIONS,
  '/v1/monitors/{monitor_id}': MONITOR_EXTENSIONS,
};
/** Statuses upstream answers but its snapshot leaves out (the enable endpoint's own 403 and 415). */
const RESPONSE_EXTENSIONS: Record<string, string[]> = { '/v1/addons/liveness/enable': ['403', '415'] };

test('/openapi.json is structurally compatible with the upstream snapshot for every implemented route', async (t) => {
  const ours = (await (await fetch(`${d.url}/openapi.json`)).json()) as Json;
  t.is(ours.openapi.slice(0, 3), '3.1');
  t.deepEqual(ours.components.securitySchemes.bearerAuth, { type: 'http', scheme: 'bearer' });
  // The upstream contract covers /v1; the scraper routes (/workspaces/…) are ours and only need to be documented.
  // Vigil extensions under /v1 (additive; upstream clients never call them) are documented, not compared.
  // Whole route families that upstream has no path under (event history, webhooks) count as extensions too.
  const extensions = new Set([
    'post /v1/collections/{collection_id}/import',
    'get /v1/collections/{collection_id}/export',
    'post /v1/monitors/test',
    'post /v1/monitors/{monitor_id}/test',
    'get /v1/collections/{collection_id}/persons/{person_id}/timeline',
  ]);
  const extensionFamilies = [
    '/v1/events',
    '/v1/webhooks',
    '/v1/kiosk-tokens',
    '/v1/fleet',
    '/v1/settings',
    '/v1/monitor-pipelines',
    '/v1/auth',
    '/v1/users',
    '/v1/audit',
    '/v1/unknowns',
  ];
  for (const family of extensionFamilies)
    t.false(
      Object.keys(snapshot.paths).some((p) => p === family || p.startsWith(`${family}/`)),
      `${family} is not an upstream path`,
    );
  const isExtension = (x: { method: string; path: string }) =>
    extensions.has(`${x.method} ${x.path}`) ||
    extensionFamilies.some((f) => x.path === f || x.path.startsWith(`${f}/`));
  for (const r of apiRoutes(d.runtime).filter((x) => !x.path.startsWith('/v1/') || isExtension(x)))
    t.truthy(
      ours.paths[r.path]?.[r.method]?.requestBody ?? ours.paths[r.path]?.[r.method],
      `${r.method} ${r.path} documented`,
    );
  for (const r of apiRoutes(d.runtime).filter((x) => x.path.startsWith('/v1/') && !isExtension(x))) {
    const theirs = snapshot.paths[r.path]?.[r.method];
    t.truthy(theirs, `${r.method} ${r.path} exists upstream`);
    const mine = ours.paths[r.path][r.method];
    t.is(mine.operationId, theirs.operationId);
    t.deepEqual(mine.tags, theirs.tags);
    t.is(Boolean(mine.security), Boolean(theirs.security), `${r.path} security`);
    t.deepEqual(
      Object.keys(mine.responses)
        // 403: role refusals of signed-in users (forbidden_role) and csrf_failed, never sent to a Bearer client.
        .filter((status) => status !== '403' && !(RESPONSE_EXTENSIONS[r.path] ?? []).includes(status))
        .sort(),
      Object.keys(theirs.responses).sort(),
      `${r.path} response statuses`,
    );
    for (const [status, resp] of Object.entries(theirs.responses) as [string, Json][]) {
      const theirSchema = deref(snapshot, resp.content?.['application/json']?.schema);
      const mySchema = deref(ours, mine.responses[status].content?.['application/json']?.schema);
      if (!theirSchema) continue;
      t.truthy(mySchema, `${r.path} ${status} has a schema`);
      for (const req of theirSchema.required ?? [])
        t.true((mySchema!.required ?? []).includes(req), `${r.path} ${status} requires ${req}`);
      for (const prop of Object.keys(theirSchema.properties ?? {}))
        t.true(prop in (mySchema!.properties ?? {}), `${r.path} ${status} has ${prop}`);
    }
    if (theirs.requestBody) {
      const [ct, media] = Object.entries(theirs.requestBody.content)[0] as [string, Json];
      t.truthy(mine.requestBody?.content?.[ct], `${r.path} request ${ct}`);
      const theirBody = deref(snapshot, media.schema)!;
      const myBody = deref(ours, mine.requestBody.content[ct].schema)!;
      t.is(media.schema.$ref, mine.requestBody.content[ct].schema.$ref, `${r.path} body component name`);
      t.deepEqual(
        [...(myBody.required ?? [])].sort(),
        [...(theirBody.required ?? [])].sort(),
        `${r.path} required fields`,
      );
      // Upstream's fields exactly, plus only the documented, optional Vigil extensions listed here.
      const extensions = BODY_EXTENSIONS[r.path] ?? [];
      for (const name of extensions)
        t.false((myBody.required ?? []).includes(name), `${r.path} extension ${name} is optional`);
      t.deepEqual(
        Object.keys(myBody.properties ?? {})
          .filter((k) => !extensions.includes(k))
          .sort(),
        Object.keys(theirBody.properties ?? {}).sort(),
        `${r.path} body fields`,
      );
      for (const [name, p] of Object.entries(theirBody.properties ?? {}) as [string, Json][]) {
        if (p.deprecated) t.true(myBody.properties[name].deprecated, `${r.path} ${name} deprecated`);
        if (p.contentMediaType)
          t.is(myBody.properties[name].contentMediaType, p.contentMediaType, `${r.path} ${name} is a file`);
      }
    }
  }
  // Every schema we reference resolves.
  const refs = JSON.stringify(ours).match(/#\/components\/schemas\/[A-Za-z0-9_-]+/g) ?? [];
  for (const ref of new Set(refs)) t.truthy(ours.components.schemas[ref.split('/').pop()!], ref);
});
