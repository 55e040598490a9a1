import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type Router from '@koa/router';
import type { AppState } from './route.js';

/**
 * GET /docs: Swagger UI from the swagger-ui-dist package (served from node_modules, nothing fetched from
 * the internet), reading this daemon's /openapi.json. "Authorize" takes the API key as a Bearer token,
 * kept in the page only (persistAuthorization is off, as the web UI never stores the key either).
 */
const INDEX = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Vigil API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  tryItOutEnabled: false,
  persistAuthorization: false,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

/** Swagger UI sets style attributes and loads its icons as data: URLs; the rest of the policy stays. */
const DOCS_CSP =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

function distDir(): string | null {
  try {
    return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  } catch {
    return null;
  }
}

export function mountApiDocs(router: Router<AppState>): void {
  const dir = distDir();
  const files = new Map<string, { type: string; body: Buffer | string }>([
    ['init.js', { type: 'text/javascript; charset=utf-8', body: INIT }],
  ]);
  if (dir) {
    for (const [name, type] of [
      ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
      ['swagger-ui.css', 'text/css; charset=utf-8'],
      ['favicon-32x32.png', 'image/png'],
    ] as const) {
      files.set(name, { type, body: readFileSync(join(dir, name)) });
    }
  }
  // Browsers ask for /favicon.ico on every page; answering it keeps a routine 404 out of "Recent errors" and the log.
  const icon = files.get('favicon-32x32.png');
  router.get('/favicon.ico', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=86400');
    if (!icon) {
      ctx.status = 204;
      return;
    }
    ctx.type = 'image/png';
    ctx.body = icon.body;
  });
  router.get('/docs', (ctx) => {
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    if (!dir) ctx.status = 503;
    ctx.body = dir
      ? INDEX
      : '<!doctype html><title>Vigil API</title><p>swagger-ui-dist is not installed; the API description is at <a href="/openapi.json">/openapi.json</a>.</p>';
  });
  router.get('/docs/:file', (ctx, next) => {
    const f = files.get(ctx.params.file!);
    if (!f) return next();
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.type = f.type;
    ctx.body = f.body;
  });
}
