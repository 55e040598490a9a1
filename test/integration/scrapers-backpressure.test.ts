import test from 'ava';
import { call } from '../helpers/daemon.js';
import { fixture, HEADERS } from '../helpers/fakeReddit.js';
import { startScraperDaemon, type ScraperDaemon } from '../helpers/scraperDaemon.js';
import type { RunRow } from '../../src/scrapers/runStore.js';

/** A 429 in the recorded format asking for `seconds`. */
const limited = (seconds: number) => ({
  kind: 'status' as const,
  status: 429,
  body: fixture('error_429.json'),
  headers: { ...HEADERS.exhausted_429, 'retry-after': String(seconds), 'x-ratelimit-reset': String(seconds) },
});

/**
 * A daemon with workspace "acme". The defaults: a synchronous call holds at most 6 s, and a source waits at most
 * 1 s for a retry-after, so the 14 s the tests ask for fail the source and outlast any call even when the first
 * call took its whole 6 s (the worker runs at nice 19; CI is busy).
 */
async function withDaemon(
  run: (f: ScraperDaemon, h: Record<string, string>) => Promise<void>,
  o: { scrapers?: string; forum?: string } = {},
): Promise<void> {
  const f = await startScraperDaemon({
    workspaces: ['acme'],
    scrapers: o.scrapers ?? 'sync_wait_seconds = 6',
    forum: o.forum ?? 'max_retry_wait_seconds = 1',
  });
  try {
    await run(f, { Authorization: `Bearer ${f.keys.acme!}` });
  } finally {
    await f.close();
  }
}

/** The run's row once it waits for the upstream's rate limit. */
async function untilWaiting(f: ScraperDaemon, runId: string): Promise<RunRow> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const row = (await f.d.runtime.scrapes.store.byId(runId))!;
    if (row.status === 'waiting_for_rate_limit') return row;
    if (Date.now() > deadline) throw new Error(`run ${runId} never waited for the rate limit (${row.status})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test.serial(
  '4. a long retry-after is visible: the next run says waiting_for_rate_limit with resume_at (run, sync answer, metrics view), then resumes',
  (t) =>
    withDaemon(async ({ d, reddit }, h) => {
      reddit.fault(/^\/comments\/1q2w3e5$/, limited(14));
      const first = (
        await call(d, 'POST', '/workspaces/acme/scrapers/forum/scrape', { urls: ['https://redd.it/1q2w3e5'] }, h)
      ).json;
      // On a starved machine the nice-19 worker may not reach the 429 within the sync wait: then wait for the run
      // (the retry-after counts from the 429, which comes just before the run fails).
      const failed =
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
      t.is(failed.status, 'failed');
      t.is(failed.error.code, 'upstream_rate_limited');
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
    }),
);

test.serial(
  '37.7 a run waiting for a rate limit keeps its reservation: a run submitted meanwhile gets only what is left',
  (t) =>
    withDaemon(
      async (f, h) => {
        const body = { community: 'typescript', max_items: 10 };
        // The first request of the run asks for 6 s: it waits (visibly) instead of failing.
        f.reddit.fault(/^\/r\/typescript\/about$/, limited(6));
        const a = (await call(f.d, 'POST', '/workspaces/acme/scrapers/forum/runs', body, h)).json;
        await untilWaiting(f, a.run_id);
        // Before: the waiting run's 10 units were not counted (reserved 0, remaining 12), so this run reserved
        // 10 more and the workspace used 20 of its 12.
        t.like((await call(f.d, 'GET', '/workspaces/acme/usage', undefined, h)).json, { reserved: 10, remaining: 2 });
        const b = (await call(f.d, 'POST', '/workspaces/acme/scrapers/forum/runs', body, h)).json;
        const [doneA, doneB] = await Promise.all(
          [a.run_id, b.run_id].map(async (id: string) => {
            await f.d.runtime.scrapes.wait(id, 40_000);
            return (await call(f.d, 'GET', `/workspaces/acme/runs/${id}`, undefined, h)).json;
          }),
        );
        t.like(doneA, { status: 'succeeded', item_count: 10 });
        t.like(doneB, { status: 'succeeded', item_count: 2, truncated_by_quota: true });
        t.like((await call(f.d, 'GET', '/workspaces/acme/usage', undefined, h)).json, {
          quota: 12,
          used: 12,
          reserved: 0,
          remaining: 0,
        });
      },
      { scrapers: 'free_items_per_month = 12', forum: '' },
    ),
);

test.serial(
  '37.9a a run queued behind another run that waits for a long retry-after says so at once: waiting_for_rate_limit, resume_at, 202',
  (t) =>
    withDaemon(async (f, h) => {
      const { d, reddit } = f;
      // 14 s is more than a source may wait: the first source fails, the second waits for the pause.
      reddit.fault(/^\/comments\/1q2w3e5$/, limited(14));
      const a = (
        await call(
          d,
          'POST',
          '/workspaces/acme/scrapers/forum/runs',
          { urls: ['https://redd.it/1q2w3e5', 'https://redd.it/1q2w3e6'] },
          h,
        )
      ).json;
      const waiting = await untilWaiting(f, a.run_id);
      // Before: this run queued behind the first one's wait in the credential's limiter without a word: the call
      // was held for the whole sync wait and answered 202 "running" with resume_at null.
      const started = Date.now();
      const next = await call(
        d,
        'POST',
        '/workspaces/acme/scrapers/forum/scrape',
        { urls: ['https://redd.it/1q2w3e7'] },
        h,
      );
      t.is(next.status, 202);
      t.true(Date.now() - started < 4500, 'answered as soon as the wait was known to outlast the call');
      t.like(next.json, { status: 'waiting_for_rate_limit', resume_at: waiting.resume_at });
      const done = await d.runtime.scrapes.wait(next.json.run_id, 25_000);
      t.is(done!.status, 'succeeded');
      t.true(Date.now() >= Date.parse(waiting.resume_at!) - 50, 'it went on once the upstream allowed it');
      const first = await d.runtime.scrapes.wait(a.run_id, 10_000);
      t.is(first!.status, 'partial', 'the first source failed with upstream_rate_limited, the second delivered');
    }),
);
