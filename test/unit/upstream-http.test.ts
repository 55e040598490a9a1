import test from 'ava';
import {
  backoffDelayMs,
  headerOf,
  isRetryableTransportError,
  transportError,
} from '../../src/scrapers/upstreamHttp.js';

test('backoff doubles with full jitter: [0, 2) x base, then [2, 4) x base', (t) => {
  t.is(backoffDelayMs(0, 1000, 0), 0);
  t.is(backoffDelayMs(0, 1000, 0.999), 1998);
  t.is(backoffDelayMs(1, 1000, 0), 2000);
  t.is(backoffDelayMs(1, 1000, 0.5), 3000);
});

test('transport errors: timeouts are 504 upstream_timeout, the rest 502 upstream_unreachable; only transient codes retry', (t) => {
  const timeout = Object.assign(new Error('headers'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
  const refused = Object.assign(new Error('connect'), { code: 'ECONNREFUSED' });
  const tls = Object.assign(new Error('bad certificate'), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
  t.true(isRetryableTransportError(timeout));
  t.true(isRetryableTransportError(refused));
  t.false(isRetryableTransportError(tls));
  const a = transportError(timeout, { upstream: 'Google', timeoutMs: 15000, attempts: 3, path: '/search' });
  t.is(a.status, 504);
  t.is(a.code, 'upstream_timeout');
  t.is(a.message, 'Google did not answer within 15 s (3 attempts).');
  const b = transportError(tls, { upstream: 'Google', timeoutMs: 15000, attempts: 1, path: '/search', viaProxy: true });
  t.is(b.status, 502);
  t.is(b.code, 'upstream_unreachable');
  t.is(b.message, 'Google could not be reached through the proxy: ERR_TLS_CERT_ALTNAME_INVALID.');
  t.deepEqual(b.details, { path: '/search' });
});

test('headerOf takes the first of repeated headers', (t) => {
  t.is(headerOf({ 'set-cookie': ['a=1', 'b=2'] }, 'set-cookie'), 'a=1');
  t.is(headerOf({ 'content-type': 'text/html' }, 'content-type'), 'text/html');
  t.is(headerOf({}, 'location'), undefined);
});
