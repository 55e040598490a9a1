import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface Received {
  id: string;
  timestamp: number;
  signature: string;
  body: string;
  json: { type: string; timestamp: string; data: Record<string, any> };
  path: string;
  at: number;
}

/**
 * Standard Webhooks verification written from the specification, independently of src/webhooks: the
 * key is the base64 part of `whsec_…`, the signed content `${id}.${timestamp}.${body}`, the header a
 * space-separated list of `v1,<base64>`; the timestamp must be within `toleranceSeconds` of now.
 */
export function verifyStandardWebhook(
  secret: string,
  headers: Record<string, string | undefined>,
  body: string,
  toleranceSeconds = 300,
  nowSeconds = Date.now() / 1000,
): boolean {
  const id = headers['webhook-id'],
    ts = headers['webhook-timestamp'],
    sig = headers['webhook-signature'];
  if (!id || !ts || !sig || !/^\d+$/.test(ts)) return false;
  if (Math.abs(nowSeconds - Number(ts)) > toleranceSeconds) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest();
  return sig.split(' ').some((part) => {
    const [version, value] = part.split(',');
    if (version !== 'v1' || !value) return false;
    const got = Buffer.from(value, 'base64');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Requests that failed verification. */
  rejected: number;
  secret: string | null;
  /** Status to answer (default 204); a function may decide per request. */
  respond: (r: Received) => number | { status: number; location?: string; delayMs?: number };
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

/** A real HTTP receiver on a loopback port that records and verifies every delivery; `down()`/`up()` close and reopen the same port. */
export async function startReceiver(port = 0): Promise<Receiver> {
  let server: Server | null = null;
  const r: Receiver = {
    url: '',
    port,
    received: [],
    rejected: 0,
    secret: null,
    respond: () => 204,
    async down() {
      const s = server;
      server = null;
      if (!s) return;
      s.closeAllConnections();
      await new Promise<void>((res) => s.close(() => res()));
    },
    async up() {
      const s = createServer((req, res) => void handle(req, res));
      s.keepAliveTimeout = 1000;
      await new Promise<void>((res, rej) => {
        s.once('error', rej);
        s.listen(r.port, '127.0.0.1', () => res());
      });
      r.port = (s.address() as { port: number }).port;
      r.url = `http://127.0.0.1:${r.port}`;
      server = s;
    },
    close() {
      return r.down();
    },
  };
  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const h = req.headers as Record<string, string | undefined>;
    if (r.secret && !verifyStandardWebhook(r.secret, h, body)) {
      r.rejected++;
      res.statusCode = 401;
      res.end();
      return;
    }
    const rec: Received = {
      id: h['webhook-id']!,
      timestamp: Number(h['webhook-timestamp']),
      signature: h['webhook-signature']!,
      body,
      json: JSON.parse(body),
      path: req.url ?? '/',
      at: Date.now(),
    };
    const answer = r.respond(rec);
    const a = typeof answer === 'number' ? { status: answer } : answer;
    if (a.delayMs) await new Promise((x) => setTimeout(x, a.delayMs));
    if (a.status >= 200 && a.status < 300) r.received.push(rec);
    res.statusCode = a.status;
    if (a.location) res.setHeader('location', a.location);
    res.end();
  }
  await r.up();
  return r;
}
