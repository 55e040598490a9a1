import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KeepAliveClient, parseResponseHead, postRequest } from '../../bench/keepAliveClient.js';

/** A real node:http server: echoes the body's length and a header, on one connection per client. */
async function server(
  handler: http.RequestListener,
): Promise<{ url: URL; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const s = http.createServer(handler);
  s.on('connection', () => connections++);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    url: new URL(`http://127.0.0.1:${(s.address() as AddressInfo).port}`),
    connections: () => connections,
    close: () =>
      new Promise((r) => {
        s.closeAllConnections();
        s.close(() => r());
      }),
  };
}

test('posts the body with its headers, reads whole responses and keeps one connection', async (t) => {
  const srv = await server((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.stringify({
        bytes: Buffer.concat(chunks).length,
        auth: req.headers.authorization,
        path: req.url,
        pad: 'x'.repeat(200_000),
      });
      res.writeHead(req.url === '/missing' ? 404 : 200, {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(body),
      });
      // Two writes: the client must wait for the whole Content-Length.
      res.write(body.slice(0, 10));
      setTimeout(() => res.end(body.slice(10)), 5);
    });
  });
  const client = await KeepAliveClient.connect(srv.url);
  try {
    const upload = Buffer.alloc(300_000, 7);
    for (const path of ['/a', '/b', '/missing']) {
      const r = await client.send(postRequest(srv.url, path, { Authorization: 'Bearer k' }, upload));
      const body = JSON.parse(r.body.toString()) as { bytes: number; auth: string; path: string; pad: string };
      t.is(r.status, path === '/missing' ? 404 : 200);
      t.is(body.bytes, upload.length);
      t.is(body.auth, 'Bearer k');
      t.is(body.path, path);
      t.is(body.pad.length, 200_000);
    }
    t.is(srv.connections(), 1);
    await t.throwsAsync(
      Promise.all([
        client.send(postRequest(srv.url, '/a', {}, upload)),
        client.send(postRequest(srv.url, '/a', {}, upload)),
      ]),
      { message: /one request at a time/ },
    );
  } finally {
    client.close();
    await srv.close();
  }
});

test('a closed connection and a chunked response are errors, not hangs', async (t) => {
  const srv = await server((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/close') req.socket.destroy();
      else {
        res.write('chunk');
        res.end();
      }
    });
  });
  try {
    const a = await KeepAliveClient.connect(srv.url);
    await t.throwsAsync(a.send(postRequest(srv.url, '/close', {}, Buffer.from('x'))), { message: /closed/ });
    const b = await KeepAliveClient.connect(srv.url);
    await t.throwsAsync(b.send(postRequest(srv.url, '/chunked', {}, Buffer.from('x'))), { message: /chunked/ });
    a.close();
    b.close();
  } finally {
    await srv.close();
  }
});

test('parseResponseHead: status and length, case-insensitive headers', (t) => {
  t.deepEqual(parseResponseHead('HTTP/1.1 200 OK\r\nContent-Type: a\r\ncontent-length: 12'), {
    status: 200,
    length: 12,
  });
  t.throws(() => parseResponseHead('HTTP/1.1 200 OK\r\nContent-Type: a'), { message: /Content-Length/ });
  t.throws(() => parseResponseHead('SSH-2.0'), { message: /not an HTTP/ });
});
