import test from 'ava';
import { hasCredentials, redactRtspUrl } from '../../src/monitors/rtspUrl.js';
import { rtspUrlProblem } from '../../src/contract/monitors.js';

test('redaction keeps scheme, host, port and path; drops user info and query', (t) => {
  t.is(
    redactRtspUrl('rtsp://admin:pw@cam.lan:554/Streaming/Channels/101?transport=tcp'),
    'rtsp://cam.lan:554/Streaming/Channels/101',
  );
  t.is(redactRtspUrl('RTSPS://user@Cam.LAN/live'), 'rtsps://cam.lan/live');
  t.is(redactRtspUrl('rtsp://u:p@[fe80::1]:8554/a'), 'rtsp://[fe80::1]:8554/a');
  t.is(redactRtspUrl('rtsp://10.0.0.5'), 'rtsp://10.0.0.5');
  t.is(redactRtspUrl('rtsp://u:p%40ss@cam/a%20b'), 'rtsp://cam/a%20b');
});

test('only rtsp:// and rtsps:// with a host, a valid port and no fragment are accepted', (t) => {
  for (const ok of [
    'rtsp://cam.lan/live',
    'rtsps://cam:322/x',
    'RTSP://10.0.0.1',
    'rtsp://[::1]:554/a',
    'rtsp://u:p@cam/a?b=c',
  ])
    t.is(rtspUrlProblem(ok), null, ok);
  for (const bad of [
    'http://cam/x',
    'rtmp://cam/x',
    'rtsp:/cam',
    'rtsp:///x',
    'rtsp://cam:99999/x',
    'rtsp://cam/x#frag',
    'rtsp://cam/a b',
    ' rtsp://cam/x',
    'file:///etc/passwd',
  ]) {
    t.not(rtspUrlProblem(bad), null, bad);
  }
});

test('hasCredentials tells without revealing', (t) => {
  t.true(hasCredentials('rtsp://a:b@cam/x'));
  t.true(hasCredentials('rtsp://a@cam/x'));
  t.false(hasCredentials('rtsp://cam/x'));
});
