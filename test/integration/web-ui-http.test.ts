import test from 'ava';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { ensureWebUi } from '../helpers/browser.js';

/** How the daemon serves the browser UI: content types, caching, CSP, SPA fallback only on UI paths. */
let d: TestDaemon;
let off: TestDaemon;
test.before(async () => {
  await ensureWebUi();
  [d, off] = await Promise.all([
    startTestDaemon({ waitReady: false }),
    startTestDaemon({ waitReady: false, toml: '[web]\ndisabled = true' }),
  ]);
});
test.after.always(async () => {
  await Promise.all([d?.close(), off?.close()]);
});

test('UI paths answer index.html with a strict CSP and no-cache; hashed assets are immutable', async (t) => {
  for (const path of [
    '/',
    '/collections',
    '/collections/staff/persons/p1',
    '/monitors/door',
    '/kiosk/door',
    '/system',
    '/search',
  ]) {
    const res = await fetch(d.url + path);
    t.is(res.status, 200, path);
    t.is(res.headers.get('content-type'), 'text/html; charset=utf-8', path);
    t.is(res.headers.get('cache-control'), 'no-cache', path);
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const directive of [
      "script-src 'self'",
      "connect-src 'self'",
      "img-src 'self' data: blob:",
      "object-src 'none'",
      "frame-ancestors 'none'",
    ])
      t.true(csp.includes(directive), directive);
    t.false(csp.includes('unsafe-inline'));
    const html = await res.text();
    t.false(/<script(?![^>]*\bsrc=)[^>]*>/.test(html), 'no inline scripts');
  }
  const html = await (await fetch(d.url + '/')).text();
  const js = /src="(\/assets\/app-[A-Z0-9]+\.js)"/.exec(html)![1]!;
  const css = /href="(\/assets\/style-[A-Z0-9]+\.css)"/.exec(html)![1]!;
  for (const [path, type] of [
    [js, 'text/javascript; charset=utf-8'],
    [css, 'text/css; charset=utf-8'],
  ] as const) {
    const res = await fetch(d.url + path);
    t.is(res.status, 200);
    t.is(res.headers.get('content-type'), type);
    t.is(res.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    t.is(res.headers.get('x-content-type-options'), 'nosniff');
    t.true((await res.arrayBuffer()).byteLength > 1000);
  }
  // Nothing is fetched from elsewhere: every script and stylesheet is same-origin.
  t.false(/(src|href)="(https?:)?\/\//.test(html));
});

test('API paths and unknown paths keep their JSON envelopes; the UI never shadows them', async (t) => {
  for (const path of [
    '/v1/nope',
    '/v1/collections/x/y/z/w',
    '/workspaces',
    '/assets/missing.js',
    '/collections.json',
  ]) {
    const res = await fetch(d.url + path, { headers: d.auth });
    t.is(res.status, 404, path);
    t.is(((await res.json()) as any).error.code, 'route_not_found', path);
  }
  const openapi = await fetch(d.url + '/openapi.json');
  t.is(openapi.status, 200);
  t.truthy(((await openapi.json()) as any).paths['/v1/collections']);
  const post = await fetch(d.url + '/', { method: 'POST' });
  t.true([404, 405].includes(post.status));
  t.truthy(((await post.json()) as any).error);
  const health = await fetch(d.url + '/v1/health');
  t.is(health.headers.get('content-type'), 'application/json; charset=utf-8');
});

test('[web] disabled = true: no UI at all, the paths are 404 envelopes', async (t) => {
  for (const path of ['/', '/kiosk/door', '/collections']) {
    const res = await fetch(off.url + path);
    t.is(res.status, 404, path);
    t.is(((await res.json()) as any).error.code, 'route_not_found');
  }
  const html = await (await fetch(d.url + '/')).text();
  const js = /src="(\/assets\/[^"]+)"/.exec(html)![1]!;
  t.is((await fetch(off.url + js)).status, 404);
});
