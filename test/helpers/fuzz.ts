import { connect } from 'node:net';
import { seededRandom } from '../../bench/seededRandom.js';

/**
 * A fuzzer over every operation in /openapi.json: malformed images of every format, bad multipart and
 * JSON, tampered cursors, path tricks, query garbage and header bombs (sent raw, as Node's parser sees
 * them). Every reply must be in the error envelope (or a success), and none may be a 500.
 */
export interface FuzzReport {
  requests: number;
  byStatus: Record<string, number>;
  /** 5xx replies by `status code` (a 500 is always a failure; 503s are allowed only as request_timeout / service_not_ready). */
  serverErrors: Record<string, number>;
  /** Replies that were not in the envelope (a non-2xx without {error:{code,message,details},request_id}). */
  outsideEnvelope: string[];
  /** Requests that got no reply at all (connection reset, hang). */
  noReply: string[];
}

type Op = { method: string; path: string; contentType: string | null };

const MAGIC: Record<string, Buffer> = {
  jpeg: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00]),
  png: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52]),
  webp: Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1'),
  bmp: Buffer.from([
    0x42, 0x4d, 0x36, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x36, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00, 0x00,
  ]),
  gif: Buffer.from('GIF89a', 'latin1'),
  tiff: Buffer.from([0x49, 0x49, 0x2a, 0x00]),
};

export function operations(openapi: {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>>;
}): Op[] {
  const ops: Op[] = [];
  for (const [path, methods] of Object.entries(openapi.paths)) {
    for (const [method, op] of Object.entries(methods))
      ops.push({
        method: method.toUpperCase(),
        path,
        contentType: op.requestBody ? (Object.keys(op.requestBody.content)[0] ?? null) : null,
      });
  }
  return ops;
}

export async function fuzz(
  baseUrl: string,
  openapi: Parameters<typeof operations>[0],
  auth: Record<string, string>,
  opts: { perOperation: number; seed?: number; realImage?: Buffer },
): Promise<FuzzReport> {
  const rnd = seededRandom(opts.seed ?? 17);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
  const report: FuzzReport = { requests: 0, byStatus: {}, serverErrors: {}, outsideEnvelope: [], noReply: [] };

  const image = (): Buffer => {
    const kind = pick(Object.keys(MAGIC));
    const real = opts.realImage;
    switch (Math.floor(rnd() * 5)) {
      case 0:
        return Buffer.concat([MAGIC[kind]!, bytes(Math.floor(rnd() * 2048))]);
      case 1:
        return real ? real.subarray(0, Math.floor(rnd() * real.length)) : MAGIC[kind]!; // truncated
      case 2: {
        if (!real) return bytes(64);
        const b = Buffer.from(real); // bit flips in a real image
        for (let i = 0; i < 32; i++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256);
        return b;
      }
      case 3:
        return Buffer.alloc(0);
      default:
        return bytes(Math.floor(rnd() * 512));
    }
  };
  const segment = () =>
    pick([
      'x',
      '..',
      '%2e%2e%2f%2e%2e',
      '%00',
      'a'.repeat(300),
      '%ff%fe',
      '😀',
      '_default',
      'nope',
      '%252f',
      ';rm',
      "'",
      '"',
    ]);
  const resolvePath = (p: string) => p.replace(/\{[a-z_]+\}/g, () => (rnd() < 0.7 ? segment() : '_default'));
  const query = () =>
    pick([
      '',
      '?limit=-1',
      '?limit=abc',
      '?limit=99999999999999999999',
      `?cursor=${Buffer.from(bytes(40)).toString('base64url')}`,
      '?cursor=eyJ2IjoxfQ.AAAA',
      '?force=maybe',
      '?limit=1&limit=2&cursor=',
      '?%zz=1',
      `?q=${'x'.repeat(5000)}`,
    ]);
  const multipart = (): { body: Buffer; type: string } => {
    const b = `----vigilfuzz${Math.floor(rnd() * 1e9)}`;
    const fields = [
      'image',
      'images',
      'source',
      'target',
      'limit',
      'threshold',
      'max_faces',
      'review_mode',
      'embedding_mode',
      'external_embeddings',
      'metadata',
      'name',
      'id',
    ];
    const parts: Buffer[] = [];
    const n = 1 + Math.floor(rnd() * 4);
    for (let i = 0; i < n; i++) {
      const f = pick(fields);
      const isFile = ['image', 'images', 'source', 'target'].includes(f);
      parts.push(
        Buffer.from(
          `--${b}\r\nContent-Disposition: form-data; name="${f}"${isFile ? '; filename="f.bin"' : ''}\r\n\r\n`,
        ),
      );
      parts.push(
        isFile
          ? image()
          : Buffer.from(pick(['-1', 'NaN', '1e309', 'null', '{', '[[1,2]]', 'strict', '', 'x'.repeat(3000)])),
      );
      parts.push(Buffer.from('\r\n'));
    }
    const mode = Math.floor(rnd() * 4);
    if (mode === 0) parts.push(Buffer.from(`--${b}--\r\n`));
    else if (mode === 1)
      parts.push(Buffer.from(`--${b}`)); // unterminated
    else if (mode === 2) parts.unshift(Buffer.from('garbage before the first boundary\r\n'));
    return {
      body: Buffer.concat(parts),
      type: mode === 3 ? 'multipart/form-data' : `multipart/form-data; boundary=${b}`,
    };
  };
  const json = (): Buffer =>
    Buffer.from(
      pick([
        '{',
        '[]',
        'null',
        '{"id":1}',
        '{"name":"' + 'x'.repeat(300) + '"}',
        '{"id":"a","name":"b","metadata":[]}',
        '{"__proto__":{"x":1}}',
        '{"a":' + '['.repeat(5000) + ']'.repeat(5000) + '}',
        '\u0000',
        '{"source":{"url":"rtsp://x"}}',
      ]),
    );

  const record = (label: string, status: number, text: string) => {
    report.requests++;
    report.byStatus[status] = (report.byStatus[status] ?? 0) + 1;
    let body: { error?: { code?: unknown; message?: unknown; details?: unknown }; request_id?: unknown } | null = null;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    if (status >= 500) {
      const code = typeof body?.error?.code === 'string' ? body.error.code : 'no_envelope';
      report.serverErrors[`${status} ${code}`] = (report.serverErrors[`${status} ${code}`] ?? 0) + 1;
    }
    const enveloped =
      body &&
      body.error &&
      typeof body.error.code === 'string' &&
      typeof body.error.message === 'string' &&
      typeof body.error.details === 'object' &&
      typeof body.request_id === 'string';
    if (status >= 400 && !enveloped) report.outsideEnvelope.push(`${label} -> ${status} ${text.slice(0, 120)}`);
  };

  for (const op of operations(openapi)) {
    for (let i = 0; i < opts.perOperation; i++) {
      const path = resolvePath(op.path) + query();
      const headers: Record<string, string> = {
        ...(rnd() < 0.9 ? auth : { Authorization: pick(['Bearer', 'Bearer x', `Basic ${'a'.repeat(100)}`]) }),
      };
      let body: Buffer | undefined;
      if (op.method !== 'GET' && op.method !== 'DELETE') {
        const kind = rnd();
        if (op.contentType === 'multipart/form-data' ? kind < 0.8 : kind < 0.2) {
          const m = multipart();
          body = m.body;
          headers['content-type'] = m.type;
        } else {
          body = json();
          headers['content-type'] =
            rnd() < 0.9
              ? 'application/json'
              : pick(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin-7']);
        }
      }
      const label = `${op.method} ${path.slice(0, 100)}`;
      try {
        const res = await fetch(baseUrl + path, {
          method: op.method,
          headers,
          body,
          signal: AbortSignal.timeout(60_000),
        });
        record(label, res.status, await res.text());
      } catch (e) {
        // fetch refuses some URLs itself (invalid characters): those never reached the daemon.
        if (e instanceof TypeError && /Invalid URL|invalid/i.test(String(e.message)) && !/fetch failed/.test(e.message))
          continue;
        report.noReply.push(`${label}: ${(e as Error).message}`);
      }
    }
  }
  // Header bombs and raw request lines, as Node's HTTP parser sees them.
  const u = new URL(baseUrl);
  for (let i = 0; i < opts.perOperation * 4; i++) {
    const raw = pick([
      `GET /v1/health HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 3000 }, (_, k) => `X-H${k}: v`).join('\r\n')}\r\n\r\n`,
      `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000 + Math.floor(rnd() * 40_000))}\r\n\r\n`,
      `GET /v1/\u0000\u00ff HTTP/1.1\r\nHost: x\r\n\r\n`,
      `BREW /v1/health HTTP/1.1\r\nHost: x\r\n\r\n`,
      `POST /v1/collections HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      `GET /v1/health HTTP/9.9\r\n\r\n`,
      bytes(200).toString('latin1'),
    ]);
    const reply = await new Promise<string>((resolve) => {
      const s = connect(Number(u.port), u.hostname, () => s.end(Buffer.from(raw, 'latin1')));
      const parts: Buffer[] = [];
      s.on('data', (b: Buffer) => parts.push(b));
      s.on('close', () => resolve(Buffer.concat(parts).toString('latin1')));
      s.on('error', () => undefined);
      s.setTimeout(30_000, () => s.destroy());
    });
    const label = `raw ${JSON.stringify(raw.slice(0, 40))}`;
    const m = /^HTTP\/1\.1 (\d{3})/.exec(reply);
    if (!m) {
      report.noReply.push(`${label}: no reply`);
      continue;
    }
    record(label, Number(m[1]), reply.slice(reply.indexOf('\r\n\r\n') + 4));
  }
  return report;
}
