import test from 'ava';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { FakeReddit } from '../helpers/fakeReddit.js';
import { tempDir } from '../helpers/tempDir.js';

const until = async (f: () => boolean | Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
};

test.serial('an acknowledged async run survives a daemon restart: re-queued, finished and billed once', async (t) => {
  const fake = await FakeReddit.start();
  const dir = tempDir(t, 'vigil-restart-');
  let d: TestDaemon | null = await startTestDaemon({ dir, toml: fake.toml() });
  try {
    await d.runtime.workspaces.create({ id: 'acme', name: 'Acme' });
    const token = (await d.runtime.workspaces.createKey('acme')).token;
    fake.latencyMs = 400;
    const r = await call(
      d,
      'POST',
      '/workspaces/acme/scrapers/forum/runs',
      { community: 'typescript', max_items: 10 },
      { Authorization: `Bearer ${token}` },
    );
    t.is(r.status, 202);
    const runId = r.json.run_id as string;
    const first = d;
    await until(async () => (await first.runtime.scrapes.store.byId(runId))!.status === 'running');
    await d.close();
    d = null;
    fake.latencyMs = 0;
    d = await startTestDaemon({ dir, toml: fake.toml() });
    const done = await d.runtime.scrapes.wait(runId, 20_000);
    t.is(done!.status, 'succeeded');
    t.is(done!.attempts, 2);
    const got = await call(d, 'GET', `/workspaces/acme/runs/${runId}`, undefined, { Authorization: `Bearer ${token}` });
    t.is(got.json.items.length, 10);
    t.like(got.json.billing, { billed_units: 10, used: 10 });
    const usage = await call(d, 'GET', '/workspaces/acme/usage', undefined, { Authorization: `Bearer ${token}` });
    t.like(usage.json, { used: 10, reserved: 0 });
    t.is(usage.json.by_kind.forum.runs, 1);
  } finally {
    await d?.close();
    await fake.close();
  }
});

test.serial('a worker that dies mid-run fails that run without billing; the next run gets a new worker', async (t) => {
  const fake = await FakeReddit.start();
  const d = await startTestDaemon({ toml: fake.toml() });
  try {
    await d.runtime.workspaces.create({ id: 'acme', name: 'Acme' });
    const auth = { Authorization: `Bearer ${(await d.runtime.workspaces.createKey('acme')).token}` };
    fake.latencyMs = 1000;
    const r = await call(d, 'POST', '/workspaces/acme/scrapers/forum/runs', { community: 'typescript' }, auth);
    await until(
      async () =>
        d.runtime.scrapes.worker.pid !== null &&
        (await d.runtime.scrapes.store.byId(r.json.run_id))!.status === 'running',
    );
    const pid = d.runtime.scrapes.worker.pid!;
    process.kill(pid, 'SIGKILL');
    const failed = await d.runtime.scrapes.wait(r.json.run_id, 10_000);
    t.is(failed!.status, 'failed');
    t.is(JSON.parse(failed!.error_json!).code, 'worker_crashed');
    t.is(failed!.billed_units, 0);
    fake.latencyMs = 0;
    const again = await call(
      d,
      'POST',
      '/workspaces/acme/scrapers/forum/scrape',
      { urls: ['https://redd.it/1q2w3e5'] },
      auth,
    );
    t.is(again.json.status, 'succeeded');
    t.not(d.runtime.scrapes.worker.pid, pid);
    t.is((await call(d, 'GET', '/workspaces/acme/usage', undefined, auth)).json.used, 1);
  } finally {
    await d.close();
    await fake.close();
  }
});
