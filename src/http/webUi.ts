import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Koa from 'koa';

/**
 * The browser UI (src/web, bundled by scripts/build-web.ts into dist/web). Only GET/HEAD of the UI's own
 * paths are answered here; everything else (/v1, /workspaces, /mcp, /openapi.json and their 404
 * envelopes) falls through to the API router untouched.
 */
export const UI_PATH =
  /^\/(?:(?:dashboard|collections|search|compare|detect|monitors|events|unknowns|system|settings|users|kiosk)(?:\/[^/]+)*\/?)?$/;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json; charset=utf-8',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

interface Asset {
  body: Buffer;
  type: string;
}

/**
 * dist/web beside dist/http when built; the repository's dist/web when run from source with tsx (src/web
 * holds the sources and the index.html template, without assets/).
 */
export function webBundleDir(): string | null {
  for (const rel of ['../web/', '../../dist/web/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(join(dir, 'index.html')) && existsSync(join(dir, 'assets'))) return dir;
  }
  return null;
}

/** Reads the bundle once: it is small, and a file changing under a running daemon should not half-apply. */
function loadBundle(dir: string): { index: Buffer; assets: Map<string, Asset> } {
  const assets = new Map<string, Asset>();
  const assetDir = join(dir, 'assets');
  if (existsSync(assetDir)) {
    for (const name of readdirSync(assetDir)) {
      const type = TYPES[extname(name)];
      // A stale asset removed by a concurrent rebuild between the listing and the read is simply skipped.
      try {
        if (type) assets.set(name, { body: readFileSync(join(assetDir, name)), type });
      } catch {}
    }
  }
  return { index: readFileSync(join(dir, 'index.html')), assets };
}

const NOT_BUILT = Buffer.from(
  '<!doctype html><meta charset="utf-8"><title>Vigil</title><p>The web UI is not built: run <code>npm run build</code>.</p>',
);

export function webUi(dir: string | null = webBundleDir()): Koa.Middleware {
  const bundle = dir ? loadBundle(dir) : null;
  return async (ctx, next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    const asset = ctx.path.startsWith('/assets/') ? bundle?.assets.get(ctx.path.slice('/assets/'.length)) : undefined;
    if (asset) {
      ctx.type = asset.type;
      // Asset names carry a content hash (index.html names them), so they never change under one URL.
      ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
      ctx.body = asset.body;
      return;
    }
    if (!UI_PATH.test(ctx.path)) return next();
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-cache');
    if (!bundle) ctx.status = 503;
    ctx.body = bundle ? bundle.index : NOT_BUILT;
  };
}
