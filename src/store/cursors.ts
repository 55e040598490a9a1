import { createHmac, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { readOrCreateSecretKey } from './secretKeyFile.js';
import { Errors } from '../contract/errors.js';

const MAX_TOKEN = 2048;
const b64 = (b: Buffer) => b.toString('base64url');

/** Decodes unpadded base64url and rejects any non-canonical spelling, so one payload has one token. */
function strictB64(s: string): Buffer | null {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) return null;
  const buf = Buffer.from(s, 'base64url');
  return b64(buf) === s ? buf : null;
}

/** Sorted-key compact JSON of the payload (the upstream token layout). */
const payloadJson = (after: string, scope: string) => JSON.stringify({ after, scope, v: 1 });

/**
 * Opaque keyset cursors: base64url(payload) "." base64url(first 16 bytes of HMAC-SHA256). The scope
 * (e.g. `persons:<collection>:<search>`) is inside the signed payload, so a cursor cannot be replayed
 * against another list or filter.
 */
export class CursorCodec {
  constructor(private readonly secret: Buffer) {}

  /** Reads <dataDir>/cursor.key, creating it (0600, O_EXCL) with 32 random bytes on first start. */
  static open(dataDir: string): CursorCodec {
    const path = join(dataDir, 'cursor.key');
    const secret = readOrCreateSecretKey(path);
    if (secret.length < 32) throw Errors.cursorKeyInvalid(path);
    return new CursorCodec(secret);
  }

  private sign(payload: Buffer): Buffer {
    return createHmac('sha256', this.secret).update(payload).digest().subarray(0, 16);
  }

  encode(scope: string, after: string): string {
    const payload = Buffer.from(payloadJson(after, scope));
    return `${b64(payload)}.${b64(this.sign(payload))}`;
  }

  /** The `after` key of a token issued for `scope`; 400 invalid_cursor otherwise. */
  decode(token: string, scope: string): string {
    const bad = (why: string) => Errors.invalidCursor(why);
    if (token.length > MAX_TOKEN) throw bad('too_long');
    const [p, s, extra] = token.split('.');
    if (p === undefined || s === undefined || extra !== undefined) throw bad('malformed');
    const payload = strictB64(p),
      sig = strictB64(s);
    if (!payload || !sig || payload.length === 0) throw bad('malformed');
    const expected = this.sign(payload);
    if (sig.length !== expected.length || !timingSafeEqual(sig, expected)) throw bad('signature');
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload.toString('utf8'));
    } catch {
      throw bad('malformed');
    }
    if (typeof parsed !== 'object' || parsed === null) throw bad('malformed');
    const obj = parsed as { after?: unknown; scope?: unknown; v?: unknown };
    if (obj.v !== 1 || typeof obj.after !== 'string') throw bad('malformed');
    if (obj.scope !== scope) throw bad('scope');
    return obj.after;
  }
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** Turns `limit + 1` keyset rows into a page and the cursor for the next one. */
export function toPage<T>(
  rows: T[],
  limit: number,
  key: (row: T) => string,
  codec: CursorCodec,
  scope: string,
): Page<T> {
  if (rows.length <= limit) return { items: rows, next_cursor: null };
  const items = rows.slice(0, limit);
  return { items, next_cursor: codec.encode(scope, key(items[items.length - 1]!)) };
}
