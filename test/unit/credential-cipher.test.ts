import test from 'ava';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OperatorError } from '../../src/contract/errors.js';
import { CredentialCipher } from '../../src/store/credentialCipher.js';
import { tempDir } from '../helpers/tempDir.js';

test('the key file is created once, 32 bytes, mode 0600, and reused', (t) => {
  const dir = tempDir(t, 'vigil-cipher-');
  const a = CredentialCipher.open(dir);
  const key = readFileSync(join(dir, 'monitor-credentials.key'));
  t.is(key.length, 32);
  t.is(statSync(join(dir, 'monitor-credentials.key')).mode & 0o777, 0o600);
  const token = a.encrypt('rtsp://u:p@cam/x', 'monitor:cam');
  t.is(CredentialCipher.open(dir).decrypt(token, 'monitor:cam'), 'rtsp://u:p@cam/x');
  t.deepEqual(readFileSync(join(dir, 'monitor-credentials.key')), key);
});

test('v1 tokens: random nonce, bound to the row (AAD), tamper-evident', (t) => {
  const c = new CredentialCipher(Buffer.alloc(32, 3));
  const a = c.encrypt('rtsp://u:secret@cam/x', 'monitor:m1');
  const b = c.encrypt('rtsp://u:secret@cam/x', 'monitor:m1');
  t.regex(a, /^v1\.[A-Za-z0-9_-]+$/);
  t.not(a, b, 'a fresh nonce per encryption');
  t.false(Buffer.from(a.slice(3), 'base64url').includes('secret'));
  t.is(c.decrypt(a, 'monitor:m1'), 'rtsp://u:secret@cam/x');
  t.throws(() => c.decrypt(a, 'monitor:m2'), undefined, 'AAD binds the row');
  t.throws(() => c.decrypt(a, 'webhook:m1'), undefined, 'and the kind of row');
  t.true(CredentialCipher.isToken(a));
  t.false(CredentialCipher.isToken('whsec_AAAA'));
  const raw = Buffer.from(a.slice(3), 'base64url');
  raw[14]! ^= 1;
  t.throws(() => c.decrypt(`v1.${raw.toString('base64url')}`, 'monitor:m1'));
  t.throws(() => c.decrypt(a.replace('v1.', 'v2.'), 'monitor:m1'));
  t.throws(() => new CredentialCipher(Buffer.alloc(32, 4)).decrypt(a, 'monitor:m1'), undefined, 'another key');
});

test('a key file of the wrong size is refused, never replaced', (t) => {
  const dir = tempDir(t, 'vigil-cipher-');
  writeFileSync(join(dir, 'monitor-credentials.key'), Buffer.alloc(16));
  const err = t.throws(() => CredentialCipher.open(dir), { instanceOf: OperatorError });
  t.is(err?.code, 'monitor_key_invalid');
  t.is(readFileSync(join(dir, 'monitor-credentials.key')).length, 16);
});
