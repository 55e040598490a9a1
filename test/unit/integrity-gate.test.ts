import test from 'ava';
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { errorEnvelope, RecentErrors } from '../../src/http/errors.js';
import { integrityGate } from '../../src/http/integrityGate.js';
import { openDatabase, type OpenedDatabase } from '../../src/store/database.js';
import { fileTempDir } from '../helpers/tempDir.js';

const root = fileTempDir('vigil-gate-');

/** The gate in front of a handler that answers 200, over a real database whose integrity state the test sets. */
async function serve(db: OpenedDatabase) {
  const app = new Koa();
  app.silent = true;
  app.use(errorEnvelope(pino({ level: 'silent' }), new RecentErrors()) as Koa.Middleware);
  app.use(integrityGate(db));
  app.use((ctx) => {
    ctx.body = { ok: true };
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const status = async (method: string, path: string) => (await fetch(url + path, { method })).status;
  return { status, close: () => new Promise((r) => server.close(r)) };
}

test('while quick_check runs after a crash everything is served; after a failure only health and system answer', async (t) => {
  const db = openDatabase(join(root, 'd1'));
  const s = await serve(db);
  try {
    db.integrity = 'pending';
    for (const [m, p] of [
      ['GET', '/v1/collections'],
      ['POST', '/v1/detect'],
      ['POST', '/v1/collections/c1/search'],
      ['GET', '/v1/health'],
      ['GET', '/'],
      ['POST', '/v1/collections'],
      ['POST', '/v1/collections/c1/persons'],
      ['DELETE', '/v1/collections/c1'],
      ['PATCH', '/v1/collections/c1'],
      ['POST', '/v1/collections/c1/import'],
      ['POST', '/workspaces/w/scrapers/forum/runs'],
      ['POST', '/mcp'],
    ]) {
      t.is(await s.status(m!, p!), 200, `${m} ${p} is served while the check runs`);
    }
    db.integrity = '*** in database main ***\nPage 7: btreeInitPage() returns error code 11';
    for (const [m, p] of [
      ['GET', '/v1/collections'],
      ['POST', '/v1/collections/c1/search'],
      ['GET', '/workspaces/w/runs'],
    ])
      t.is(await s.status(m!, p!), 503, `${m} ${p} after a failed check`);
    for (const p of ['/v1/health', '/v1/system']) t.is(await s.status('GET', p), 200, `${p} still answers`);
    db.integrity = 'ok';
    t.is(await s.status('POST', '/v1/collections'), 200);
  } finally {
    await s.close();
    db.close();
  }
});
