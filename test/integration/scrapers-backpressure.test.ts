import test from 'ava';
import { call, startTestDaemon } from '../helpers/daemon.js';
import { FakeReddit, fixture, HEADERS } from '../helpers/fakeReddit.js';

test('4. a long retry-after is visible: the next run says waiting_for_rate_limit with resume_at (run, sync answer, metrics view), then resumes', async (t) => {
  const reddit = await FakeReddit.start();
  // A synchronous call holds at most 6 s; the 429 asks for 14 s, more than a source may wait (1 s) and more
  // than a call may hold even when the first call took its whole 6 s (the worker runs at nice 19; CI is busy).
  const d = await startTestDaemon({
    toml: `[scrapers]\nsync_wait_seconds = 6\n${reddit.toml('max_retry_wait_seconds = 1')}`,
  });
  try {
    await d.runtime.workspaces.create({ id: 'acme', name: 'acme' });
    const h = { Authorization: `Bearer ${(await d.runtime.workspaces.createKey('acme')).token}` };
    reddit.fault(/^\/comments\/1q2w3e5$/, {
      kind: 'status',
      status: 429,
      body: fixture('error_429.json'),
      headers: { ...HEADERS.exhausted_429, 'retry-after': '14', 'x-ratelimit-reset': '14' },
    });
    const first = (
      await call(d, 'POST', '/workspaces/acme/scrapers/forum/scrape', { urls: ['https://redd.it/1q2w3e5'] }, h)
    ).json;
    // On a starved machine the nice-19 worker may not reach the 429 within the sync wait: then wait for the run
    // (the retry-after counts from the 429, which comes just before the run fails).
    const limited =
      first.status === 'failed'
        ? first
        : (
            await call(
              d,
              'GET',
              `/workspaces/acme/runs/${(await d.runtime.scrapes.wait(first.run_id, 60_000))!.id}`,
              undefined,
              h,
            )
          ).json;
    t.is(limited.status, 'failed');
    t.is(limited.error.code, 'upstream_rate_limited');
    // Before: this call stalled for the whole sync wait and answered 202 "running" with no reason.
    const started = Date.now();
    const next = await call(
      d,
      'POST',
      '/workspaces/acme/scrapers/forum/scrape',
      { urls: ['https://redd.it/1q2w3e6'] },
      h,
    );
    t.is(next.status, 202);
    t.true(Date.now() - started < 4500, 'answered as soon as the wait was known to outlast the call');
    t.is(next.json.status, 'waiting_for_rate_limit');
    const resumeAt = Date.parse(next.json.resume_at);
    t.true(resumeAt > Date.now() + 3000 && resumeAt < Date.now() + 15_000, next.json.resume_at);
    const polled = (await call(d, 'GET', `/workspaces/acme/runs/${next.json.run_id}`, undefined, h)).json;
    t.like(polled, { status: 'waiting_for_rate_limit', resume_at: next.json.resume_at });
    t.like(await d.runtime.scrapes.store.activeSummary(), {
      waiting_for_rate_limit: 1,
      next_resume_at: next.json.resume_at,
    });
    const done = await d.runtime.scrapes.wait(next.json.run_id, 25_000);
    t.is(done!.status, 'succeeded');
    t.true(Date.now() >= resumeAt - 50, 'it went on once the upstream allowed it');
    t.is(done!.resume_at, null);
    t.like(await d.runtime.scrapes.store.activeSummary(), { waiting_for_rate_limit: 0, next_resume_at: null });
  } finally {
    await d.close();
    await reddit.close();
  }
});
