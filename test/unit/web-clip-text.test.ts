import test from 'ava';
import { clipLength, clipSize, clipText } from '../../src/web/clipText.js';

const clip = (o: Partial<Parameters<typeof clipText>[0]>): Parameters<typeof clipText>[0] => ({
  id: 'c1',
  status: 'ready',
  url: '/v1/events/e1/clip.mp4',
  started_at: '2026-11-27T10:00:00.000Z',
  duration_ms: 11_500,
  bytes: 475_000,
  end_reason: 'completed',
  ...o,
});

test('clip length counts whole seconds down as the player does; hours from an hour on', (t) => {
  t.is(clipLength(0), '0:00');
  t.is(clipLength(11_999), '0:11');
  t.is(clipLength(61_000), '1:01');
  t.is(clipLength(3_599_999), '59:59');
  t.is(clipLength(3_600_000 + 62_000), '1:01:02');
});

test('clip size: kB below a megabyte (never 0), MB with a decimal, whole MB from 100', (t) => {
  t.is(clipSize(10), '1 kB');
  t.is(clipSize(475_000), '475 kB');
  t.is(clipSize(15_300_000), '15.3 MB');
  t.is(clipSize(250_400_000), '250 MB');
});

test('the line for each state: ready with how it ended unless it simply completed, recording, expired, failed', (t) => {
  t.is(clipText(clip({})), 'Clip 0:11 · 475 kB');
  t.is(clipText(clip({ end_reason: 'capped' })), 'Clip 0:11 · 475 kB · cut at its longest length (max_seconds)');
  t.is(clipText(clip({ end_reason: 'something_new' })), 'Clip 0:11 · 475 kB · something new');
  t.is(clipText(clip({ status: 'recording', url: null, duration_ms: 0, end_reason: null })), 'Recording clip…');
  t.regex(clipText(clip({ status: 'expired', url: null })), /^Clip expired: .*max_snapshot_bytes/);
  t.is(
    clipText(clip({ status: 'failed', url: null, end_reason: 'disk_full' })),
    'No clip: the recording failed (stopped: the data disk was full).',
  );
  t.is(clipText(clip({ status: 'failed', url: null, end_reason: null })), 'No clip: the recording failed.');
});
