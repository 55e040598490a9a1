import test from 'ava';
import { createHmac } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError, OperatorError } from '../../src/contract/errors.js';
import { CursorCodec, toPage } from '../../src/store/cursors.js';
import { fileTempDir } from '../helpers/tempDir.js';

const root = fileTempDir('vigil-cursor-test-');
let n = 0;
function freshDir(): string {
  const dir = join(root, `data-${n++}`);
  mkdirSync(dir);
  return dir;
}

const SECRET = Buffer.alloc(32, 7);
const codec = new CursorCodec(SECRET);
const SCOPE = 'persons:c1:';

/** Asserts that decoding throws 400 invalid_cursor and returns the reason detail. */
function rejected(t: import('ava').ExecutionContext, c: CursorCodec, token: string, scope = SCOPE): unknown {
  const err = t.throws(() => c.decode(token, scope), { instanceOf: ApiError });
  t.is(err?.status, 400);
  t.is(err?.code, 'invalid_cursor');
  return err?.details.reason;
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const sign = (secret: Buffer, payload: Buffer) => createHmac('sha256', secret).update(payload).digest().subarray(0, 16);
/** A correctly signed token for an arbitrary payload text (to reach the checks after the signature). */
const forge = (payload: string, secret = SECRET) => `${b64(payload)}.${b64(sign(secret, Buffer.from(payload)))}`;

test('encode/decode round trip returns the after key', (t) => {
  for (const after of ['p-001', '', 'ünïcödé/\u0000."quoted"', 'x'.repeat(500)]) {
    const token = codec.encode(SCOPE, after);
    t.regex(token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    t.is(codec.decode(token, SCOPE), after);
  }
});

test('token layout: base64url(sorted compact JSON) . base64url(16-byte HMAC-SHA256)', (t) => {
  const token = codec.encode('collections', 'abc');
  const [p, s] = token.split('.');
  t.is(Buffer.from(p!, 'base64url').toString('utf8'), '{"after":"abc","scope":"collections","v":1}');
  const sig = Buffer.from(s!, 'base64url');
  t.is(sig.length, 16);
  t.deepEqual(sig, sign(SECRET, Buffer.from('{"after":"abc","scope":"collections","v":1}')));
  t.is(token, forge('{"after":"abc","scope":"collections","v":1}'));
});

test('a token issued for scope A is rejected in scope B', (t) => {
  const token = codec.encode('persons:c1:', 'p-9');
  t.is(rejected(t, codec, token, 'persons:c2:'), 'scope');
  t.is(rejected(t, codec, token, 'persons:c1:alice'), 'scope');
  t.is(rejected(t, codec, token, 'collections'), 'scope');
  t.is(codec.decode(token, 'persons:c1:'), 'p-9');
});

test('a tampered payload is rejected by the signature check', (t) => {
  const token = codec.encode(SCOPE, 'p-1');
  const [, s] = token.split('.');
  const evil = b64(`{"after":"p-2","scope":"${SCOPE}","v":1}`);
  t.is(rejected(t, codec, `${evil}.${s}`), 'signature');
  // Flip one bit of the payload bytes.
  const bytes = Buffer.from(token.split('.')[0]!, 'base64url');
  bytes[3]! ^= 1;
  t.is(rejected(t, codec, `${b64(bytes)}.${s}`), 'signature');
});

test('a tampered signature is rejected', (t) => {
  const token = codec.encode(SCOPE, 'p-1');
  const [p, s] = token.split('.');
  const sig = Buffer.from(s!, 'base64url');
  sig[0]! ^= 0x80;
  t.is(rejected(t, codec, `${p}.${b64(sig)}`), 'signature');
  // Truncated and extended signatures (still canonical base64url).
  t.is(rejected(t, codec, `${p}.${b64(sig.subarray(0, 15))}`), 'signature');
  t.is(rejected(t, codec, `${p}.${b64(Buffer.concat([Buffer.from(s!, 'base64url'), Buffer.from([0])]))}`), 'signature');
  // A full 32-byte HMAC is not accepted in place of the 16-byte prefix.
  const full = createHmac('sha256', SECRET).update(Buffer.from(p!, 'base64url')).digest();
  t.is(rejected(t, codec, `${p}.${b64(full)}`), 'signature');
});

test('non-canonical base64 spellings of a valid token are rejected', (t) => {
  const token = codec.encode(SCOPE, 'p-1');
  const [p, s] = token.split('.') as [string, string];
  t.is(codec.decode(`${p}.${s}`, SCOPE), 'p-1');
  // 16 bytes -> 22 chars, the last one carries 2 unused low bits.
  t.is(s.length, 22);
  t.is(rejected(t, codec, `${p}.${s}==`), 'malformed', 'padding');
  t.is(rejected(t, codec, `${p}=.${s}`), 'malformed', 'padding on the payload');
  // Change the unused low bits of the last signature char: decodes to the same 16 bytes.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = alphabet.indexOf(s.at(-1)!);
  const sibling = `${s.slice(0, -1)}${alphabet[last ^ 1]}`;
  t.deepEqual(Buffer.from(sibling, 'base64url'), Buffer.from(s, 'base64url'), 'the sibling decodes to the same bytes');
  t.is(rejected(t, codec, `${p}.${sibling}`), 'malformed');
  // Same for the payload when its length leaves spare bits.
  const payloadBytes = Buffer.from(p, 'base64url');
  t.not(payloadBytes.length % 3, 0, 'this payload length leaves spare bits');
  const pl = alphabet.indexOf(p.at(-1)!);
  const pSibling = `${p.slice(0, -1)}${alphabet[pl ^ 1]}`;
  t.deepEqual(Buffer.from(pSibling, 'base64url'), payloadBytes);
  t.is(rejected(t, codec, `${pSibling}.${s}`), 'malformed');
  // Standard base64 alphabet ('+' '/') is not base64url.
  t.is(rejected(t, codec, `${p}.${s.slice(0, -2)}+/`), 'malformed');
  // Whitespace.
  t.is(rejected(t, codec, ` ${p}.${s}`), 'malformed');
  t.is(rejected(t, codec, `${p}.${s}\n`), 'malformed');
});

test('tokens longer than 2048 characters are rejected before anything else', (t) => {
  const atLimit = codec.encode(SCOPE, 'a'.repeat(1400));
  t.true(atLimit.length <= 2048);
  t.is(codec.decode(atLimit, SCOPE), 'a'.repeat(1400));
  const long = codec.encode(SCOPE, 'a'.repeat(1600));
  t.true(long.length > 2048);
  t.is(rejected(t, codec, long), 'too_long');
  t.is(rejected(t, codec, 'x'.repeat(2049)), 'too_long');
});

test('garbage strings are malformed', (t) => {
  for (const g of ['', '.', '..', 'a.b.c', 'abc', 'abc.', '.abc', 'a', '!!!.???', 'eyJ9.AAAA', '%7B%7D.abc']) {
    const reason = rejected(t, codec, g);
    t.true(reason === 'malformed' || reason === 'signature', `${JSON.stringify(g)} -> ${String(reason)}`);
  }
  t.is(rejected(t, codec, ''), 'malformed');
  t.is(rejected(t, codec, '.'), 'malformed');
  t.is(rejected(t, codec, 'a.b.c'), 'malformed');
  t.is(rejected(t, codec, `${codec.encode(SCOPE, 'x')}.extra`), 'malformed');
});

test('correctly signed but invalid payloads are malformed; v must be 1 and after a string', (t) => {
  t.is(rejected(t, codec, forge('not json')), 'malformed');
  t.is(rejected(t, codec, forge(`{"after":"x","scope":"${SCOPE}","v":2}`)), 'malformed');
  t.is(rejected(t, codec, forge(`{"after":5,"scope":"${SCOPE}","v":1}`)), 'malformed');
  t.is(rejected(t, codec, forge(`{"scope":"${SCOPE}","v":1}`)), 'malformed');
  t.is(rejected(t, codec, forge('[]')), 'malformed');
  t.is(rejected(t, codec, forge('"str"')), 'malformed');
  // Sanity: the forge helper produces accepted tokens when the payload is right.
  t.is(codec.decode(forge(`{"after":"x","scope":"${SCOPE}","v":1}`), SCOPE), 'x');
});

test('a token signed with a different key is rejected', (t) => {
  const a = CursorCodec.open(freshDir());
  const b = CursorCodec.open(freshDir());
  const token = a.encode(SCOPE, 'p-1');
  t.is(a.decode(token, SCOPE), 'p-1');
  t.is(rejected(t, b, token), 'signature');
  t.is(rejected(t, codec, token), 'signature');
});

test('open creates cursor.key with 32 bytes, mode 0600, and reuses it', (t) => {
  const dir = freshDir();
  const first = CursorCodec.open(dir);
  const path = join(dir, 'cursor.key');
  t.is(statSync(path).mode & 0o777, 0o600);
  const key = readFileSync(path);
  t.is(key.length, 32);
  t.false(key.equals(Buffer.alloc(32)), 'random, not zero');
  const token = first.encode(SCOPE, 'p-42');
  const second = CursorCodec.open(dir);
  t.deepEqual(readFileSync(path), key, 'the key file is not rewritten');
  t.is(second.decode(token, SCOPE), 'p-42');
  t.is(second.encode(SCOPE, 'p-42'), token, 'same key, same token');
  // And the key file is what signs: a codec built from its bytes agrees.
  t.is(new CursorCodec(key).encode(SCOPE, 'p-42'), token);
});

test('open rejects a key file shorter than 32 bytes with cursor_key_invalid', (t) => {
  const dir = freshDir();
  writeFileSync(join(dir, 'cursor.key'), Buffer.alloc(31, 1), { mode: 0o600 });
  const err = t.throws(() => CursorCodec.open(dir), { instanceOf: OperatorError });
  t.is(err?.code, 'cursor_key_invalid');
});

test('toPage: rows <= limit -> all rows, next_cursor null', (t) => {
  const rows = [{ id: 'a' }, { id: 'b' }];
  t.deepEqual(
    toPage(rows, 2, (r) => r.id, codec, SCOPE),
    { items: rows, next_cursor: null },
  );
  t.deepEqual(
    toPage(rows, 5, (r) => r.id, codec, SCOPE),
    { items: rows, next_cursor: null },
  );
  t.deepEqual(
    toPage([], 3, (r: { id: string }) => r.id, codec, SCOPE),
    { items: [], next_cursor: null },
  );
});

test('toPage: limit + 1 rows -> limit items and a cursor after the last item', (t) => {
  const rows = [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }];
  const page = toPage(rows, 3, (r) => r.id, codec, SCOPE);
  t.deepEqual(page.items, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
  t.is(typeof page.next_cursor, 'string');
  t.is(codec.decode(page.next_cursor!, SCOPE), 'c');
  t.is(rejected(t, codec, page.next_cursor!, 'other'), 'scope');
  const one = toPage(rows.slice(0, 2), 1, (r) => r.id, codec, 'collections');
  t.deepEqual(one.items, [{ id: 'a' }]);
  t.is(codec.decode(one.next_cursor!, 'collections'), 'a');
});
