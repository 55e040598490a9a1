import test from 'ava';
import { request, Agent, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';

const LIMIT = 64 * 1024;
let d: TestDaemon;
test.before(async () => {
  d = await startTestDaemon({ server: [`max_request_bytes = ${LIMIT}`] });
});
test.after.always(async () => {
  await d?.close();
});

interface Reply {
  status: number;
  headers: IncomingMessage['headers'];
  body: any;
}

/**
 * Sends a chunked body (no Content-Length) of `chunks` pieces and returns the reply. Writes after the
 * reply came are allowed to fail (the server may close its side once it answered).
 */
function chunked(path: string, contentType: string, chunks: Buffer[], agent?: Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const u = new URL(d.url + path);
    let answered = false;
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path,
        method: 'POST',
        agent,
        headers: { ...d.auth, 'content-type': contentType, 'transfer-encoding': 'chunked' },
      },
      (res) => {
        answered = true;
        const parts: Buffer[] = [];
        res.on('data', (b: Buffer) => parts.push(b));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString();
          try {
            resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) });
          } catch {
            reject(new Error(`not JSON: ${res.statusCode} ${text}`));
          }
        });
        res.on('error', reject);
      },
    );
    req.on('error', (e) => {
      if (!answered) reject(e);
    });
    let i = 0;
    const writeNext = () => {
      if (answered || req.destroyed) return;
      if (i === chunks.length) {
        req.end();
        return;
      }
      const ok = req.write(chunks[i++]);
      if (ok) setImmediate(writeNext);
      else req.once('drain', writeNext);
    };
    writeNext();
  });
}

function get(path: string, agent: Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const u = new URL(d.url + path);
    request({ host: u.hostname, port: u.port, path, agent, headers: d.auth }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (b: Buffer) => parts.push(b));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(parts).toString()) }),
      );
    })
      .on('error', reject)
      .end();
  });
}

function multipartFiles(n: number, fileBytes: number): { type: string; chunks: Buffer[] } {
  const boundary = 'vigilboundary7MA4YWxkTrZu0gW';
  const chunks: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="images"; filename="${i}.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
      ),
    );
    for (let left = fileBytes; left > 0; left -= 8192) chunks.push(Buffer.alloc(Math.min(8192, left), 0x41));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { type: `multipart/form-data; boundary=${boundary}`, chunks };
}

test('a chunked multipart body whose parts are each under the limit but together over it answers 413 request_too_large', async (t) => {
  // Three parts of 0.6 x the limit: every part passes the per-file limit, the body does not.
  const { type, chunks } = multipartFiles(3, Math.floor(LIMIT * 0.6));
  const r = await chunked('/v1/collections/nope/persons', type, chunks);
  t.is(r.status, 413);
  t.is(r.body.error.code, 'request_too_large');
  t.deepEqual(r.body.error.details, { max_request_bytes: LIMIT });
  t.is(r.headers.connection, 'close');
  t.regex(r.body.request_id, /^[0-9a-f-]{36}$/);
});

test('a chunked body far over the limit is answered 413 long before the client finishes sending it', async (t) => {
  // 64 MiB offered; the reply must come while most of it is still unsent (the writer stops at the reply).
  const { type } = multipartFiles(1, 0);
  let sent = 0;
  const many = Array.from({ length: 1024 }, () => Buffer.alloc(64 * 1024, 0x42));
  const counted = new Proxy(many, {
    get: (arr, k) => {
      if (typeof k === 'string' && /^\d+$/.test(k)) sent++;
      return Reflect.get(arr, k);
    },
  });
  const r = await chunked('/v1/detect', type, counted);
  t.is(r.status, 413);
  t.is(r.body.error.code, 'request_too_large');
  t.true(sent < many.length, `sent ${sent} of ${many.length} chunks before the reply`);
});

test('an oversized chunked JSON body is 413 request_too_large, not 400 "not valid JSON"', async (t) => {
  const json = Buffer.from(JSON.stringify({ id: 'c1', name: 'x'.repeat(LIMIT * 2) }));
  const chunks = [];
  for (let i = 0; i < json.length; i += 4096) chunks.push(json.subarray(i, i + 4096));
  const r = await chunked('/v1/collections', 'application/json', chunks);
  t.is(r.status, 413);
  t.is(r.body.error.code, 'request_too_large');
});

test('after a 413 on a keep-alive connection the next request works (the 413 closes its connection cleanly)', async (t) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    t.is((await get('/v1/health', agent)).status, 200);
    const json = Buffer.alloc(LIMIT * 3, 0x20);
    const chunks = [];
    for (let i = 0; i < json.length; i += 4096) chunks.push(json.subarray(i, i + 4096));
    const r = await chunked('/v1/webhooks', 'application/json', chunks, agent);
    t.is(r.status, 413);
    t.is(r.headers.connection, 'close');
    for (let i = 0; i < 3; i++) t.is((await get('/v1/health', agent)).status, 200);
  } finally {
    agent.destroy();
  }
});

test('a chunked body under the limit is read whole (the counter does not cut legal bodies)', async (t) => {
  const json = Buffer.from(JSON.stringify({ id: 'chunky', name: 'y'.repeat(LIMIT / 2) }));
  const chunks = [];
  for (let i = 0; i < json.length; i += 1000) chunks.push(json.subarray(i, i + 1000));
  const r = await chunked('/v1/collections', 'application/json', chunks);
  // The name is over the schema's length bound: a validation error proves the whole body was parsed.
  t.is(r.status, 400, JSON.stringify(r.body));
  t.is(r.body.error.code, 'invalid_request');
  t.notRegex(r.body.error.message, /not valid JSON/);
});

test('wrong keys: the upstream 401 message, then 429 too_many_auth_failures with Retry-After past [auth] max_failures; the right key still works', async (t) => {
  const agent = new Agent({ keepAlive: false });
  const wrong = (): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const u = new URL(`${d.url}/v1/collections`);
      request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname,
          agent,
          headers: { Authorization: 'Bearer wrong-key-0123456789abcdef' },
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (b: Buffer) => parts.push(b));
          res.on('end', () =>
            resolve({
              status: res.statusCode!,
              headers: res.headers,
              body: JSON.parse(Buffer.concat(parts).toString()),
            }),
          );
        },
      )
        .on('error', reject)
        .end();
    });
  const first = await wrong();
  t.is(first.status, 401);
  t.is(first.body.error.message, 'A valid Bearer API key is required.');
  let r = first;
  for (let i = 0; i < 25 && r.status === 401; i++) r = await wrong();
  t.is(r.status, 429);
  t.is(r.body.error.code, 'too_many_auth_failures');
  t.regex(r.headers['retry-after'] ?? '', /^\d+$/);
  t.is(r.body.error.details.retry_after_seconds, Number(r.headers['retry-after']));
  t.regex(r.body.request_id, /^[0-9a-f-]{36}$/);
  // The configured key was verified at start-up: no wrong key ran scrypt.
  t.is(d.runtime.keys.scryptVerifications, 0);
  t.is((await get('/v1/collections', agent)).status, 200);
  t.is((await wrong()).status, 401, 'the success reset the address');
});

/** Sends raw bytes on a fresh TCP connection and returns everything the server wrote before closing. */
function raw(bytes: Buffer | string): Promise<string> {
  return new Promise((resolve, reject) => {
    const u = new URL(d.url);
    const sock = connect(Number(u.port), u.hostname, () => sock.end(bytes));
    const parts: Buffer[] = [];
    sock.on('data', (b: Buffer) => parts.push(b));
    sock.on('close', () => resolve(Buffer.concat(parts).toString('latin1')));
    sock.on('error', (e) => (parts.length ? resolve(Buffer.concat(parts).toString('latin1')) : reject(e)));
  });
}

function parseRaw(text: string): { status: number; headers: Record<string, string>; body: any } {
  const [head, body = ''] = text.split('\r\n\r\n');
  const lines = head!.split('\r\n');
  const headers = Object.fromEntries(
    lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: Number(lines[0]!.split(' ')[1]), headers, body: JSON.parse(body) };
}

for (const [name, bytes, status, code] of [
  ['an unknown method', 'FROB /v1/health HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'malformed_http_request'],
  ['raw bytes in the path', 'GET /v1/\x01\x7f health HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'malformed_http_request'],
  [
    'a header without a colon',
    'GET /v1/health HTTP/1.1\r\nHost: x\r\nbroken header\r\n\r\n',
    400,
    'malformed_http_request',
  ],
  [
    'a broken chunked encoding',
    'POST /v1/collections HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
    400,
    'malformed_http_request',
  ],
  [
    'huge headers',
    `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Bomb: ${'a'.repeat(40_000)}\r\n\r\n`,
    431,
    'headers_too_large',
  ],
  ['not HTTP at all', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 TLS hello\r\n\r\n', 400, 'malformed_http_request'],
] as const) {
  test(`parser-level refusal in the envelope: ${name} -> ${status} ${code}`, async (t) => {
    const r = parseRaw(await raw(bytes));
    t.is(r.status, status);
    t.is(r.body.error.code, code);
    t.is(typeof r.body.error.message, 'string');
    t.is(typeof r.body.error.details, 'object');
    t.regex(r.body.request_id, /^[0-9a-f-]{36}$/);
    t.is(r.headers['x-request-id'], r.body.request_id);
    t.is(r.headers.connection, 'close');
    t.regex(r.headers['content-type'] ?? '', /^application\/json/);
  });
}
