import test from 'ava';
import { request } from 'node:http';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startDaemonProcess } from '../helpers/daemonProcess.js';
import { eventually } from '../helpers/shared.js';

/**
 * Issue 36.1, the single requests that hurt the box besides images (those are in image-limits.test.ts):
 * huge or deeply nested `metadata`, a JSON body parsed whole on the event loop, a flood of refused keys in
 * the log, and client disconnects counted as server errors.
 */
let d: TestDaemon;
test.before(async () => {
  d = await startTestDaemon();
  const c = await call(d, 'POST', '/v1/collections', { id: 'meta', name: 'meta' });
  if (c.status !== 201) throw new Error(JSON.stringify(c.json));
  const p = await post(d, '/v1/collections/meta/persons', form({ id: 'p1', images: face('identities/obama/1.jpg') }));
  if (p.res.status !== 201) throw new Error(JSON.stringify(p.json));
});
test.after.always(async () => {
  await d?.close();
});

/** `{"a":{"a":…{"a":1}}}` with `levels` objects, written as text: JSON.stringify overflows the stack on 5,000 levels. */
const nestedJson = (levels: number) => `${'{"a":'.repeat(levels - 1)}{"a":1}${'}'.repeat(levels - 1)}`;
const nested = (levels: number) => JSON.parse(nestedJson(levels)) as Record<string, unknown>;

/** A JSON request whose body is already text. */
async function send(method: string, path: string, body: string) {
  const res = await fetch(d.url + path, { method, headers: { ...d.auth, 'content-type': 'application/json' }, body });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
}

/** The four routes that take metadata (given as JSON text): collection create and patch, person create (multipart) and patch. */
async function withMetadata(metadata: string, i: number) {
  return [
    await send('POST', '/v1/collections', `{"id":"m${i}","name":"m","metadata":${metadata}}`),
    await send('PATCH', '/v1/collections/meta', `{"metadata":${metadata}}`),
    await post(
      d,
      '/v1/collections/meta/persons',
      form({ id: `q${i}`, metadata, images: face('identities/obama/1.jpg') }),
    ).then(({ res, json }) => ({ status: res.status, json })),
    await send('PATCH', '/v1/collections/meta/persons/p1', `{"metadata":${metadata}}`),
  ];
}

test.serial(
  'metadata of 5,000 nested levels or over 64 KiB is 400 invalid_metadata on every route that takes it; at the bounds it is stored',
  async (t) => {
    const cases: [string, Record<string, unknown>][] = [
      [nestedJson(5000), { reason: 'too_deep', max_metadata_depth: 16 }],
      [nestedJson(17), { reason: 'too_deep', max_metadata_depth: 16 }],
      [JSON.stringify({ note: 'x'.repeat(70_000) }), { reason: 'too_large', max_metadata_bytes: 65536, bytes: 70_011 }],
    ];
    for (const [i, [metadata, details]] of cases.entries()) {
      for (const r of await withMetadata(metadata, i)) {
        t.is(r.status, 400, JSON.stringify(r.json).slice(0, 200));
        t.is(r.json.error.code, 'invalid_metadata');
        t.deepEqual(r.json.error.details, details);
      }
    }
    const atBounds = JSON.stringify({ ...nested(16), note: 'x'.repeat(60_000) });
    for (const r of await withMetadata(atBounds, 9)) t.true(r.status < 300, JSON.stringify(r.json).slice(0, 200));
    t.deepEqual(
      (await call(d, 'GET', '/v1/collections/meta/persons/p1')).json.person.metadata.a.a.a.a.a.a.a,
      nested(9),
    );
  },
);

test.serial(
  'a 15 MB JSON body is 413 request_too_large (1 MiB for JSON) without being parsed, and the daemon answers meanwhile',
  async (t) => {
    const body = JSON.stringify({ metadata: { blob: 'y'.repeat(15 * 1024 * 1024) } });
    const [big, health] = await Promise.all([
      call(d, 'PATCH', '/v1/collections/meta', JSON.parse(body)),
      call(d, 'GET', '/v1/health'),
    ]);
    t.is(big.status, 413);
    t.is(big.json.error.code, 'request_too_large');
    t.deepEqual(big.json.error.details, { max_request_bytes: 1024 * 1024 });
    t.is(health.status, 200);
    t.is((await call(d, 'GET', '/v1/collections/meta')).json.collection.metadata.blob, undefined);
  },
);

/** The value of one series in a /metrics exposition, or 0. */
async function counter(series: string): Promise<number> {
  const text = await (await fetch(`${d.url}/metrics`, { headers: d.auth })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

/** Sends the start of a body that declares more, then drops the connection. */
function cutOff(method: string, path: string, contentType: string, head: string): Promise<void> {
  const u = new URL(d.url + path);
  return new Promise<void>((resolve) => {
    const req = request({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      method,
      headers: { ...d.auth, 'content-type': contentType, 'content-length': String(4 * 1024 * 1024) },
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.write(head);
    req.write(Buffer.alloc(512 * 1024, 0x41), () => setTimeout(() => req.destroy(), 200));
  });
}

test.serial(
  'a client that goes away mid-upload (multipart or JSON) is counted as 499 in /metrics, not as a 400 or 500',
  async (t) => {
    const boundary = 'vigil36disconnect';
    for (const [method, route, path, type, head] of [
      [
        'POST',
        '/v1/detect',
        '/v1/detect',
        `multipart/form-data; boundary=${boundary}`,
        `--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
      ],
      ['PATCH', '/v1/collections/:collection_id', '/v1/collections/meta', 'application/json', '{"metadata":{"a":"'],
    ]) {
      const series = (status: number) =>
        `vigil_http_requests_total{route="${route}",method="${method}",status="${status}"}`;
      const [b499, b400, b500] = [await counter(series(499)), await counter(series(400)), await counter(series(500))];
      await cutOff(method!, path!, type!, head!);
      const after = await eventually(
        () => counter(series(499)),
        (n) => n > b499,
      );
      t.is(after, b499 + 1, `${method} ${path}`);
      t.is(await counter(series(400)), b400, `${method} ${path}: no client error counted`);
      t.is(await counter(series(500)), b500, `${method} ${path}: no server error counted`);
    }
  },
);

test('a flood of refused keys writes one 429 line per address, not one per request', async (t) => {
  const p = await startDaemonProcess({ logLevel: 'info', toml: '[auth]\nmax_failures = 3' });
  t.teardown(() => p.stop());
  const statuses: number[] = [];
  for (let i = 0; i < 300; i++) {
    const res = await fetch(`${p.url}/v1/collections`, { headers: { Authorization: 'Bearer wrong-key-36-1-abcdef' } });
    statuses.push(res.status);
    await res.arrayBuffer();
  }
  t.is(statuses.filter((s) => s === 429).length, 297);
  const lines = p
    .output()
    .split('\n')
    .filter((l) => l.includes('"status":429'));
  t.is(lines.length, 1, lines.slice(0, 3).join('\n'));
});
