import test from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runWorkspacesCommand } from '../../src/cli/workspaces.js';
import { RunStore } from '../../src/scrapers/runStore.js';
import { openDatabase } from '../../src/store/database.js';
import { billingPeriod, periodEnd, UsageMeter } from '../../src/workspaces/usageMeter.js';
import { WorkspaceStore } from '../../src/workspaces/workspaceStore.js';
import { Sink } from '../helpers/shared.js';
import { fileTempDir } from '../helpers/tempDir.js';

const fresh = () => fileTempDir('vigil-ws-');

test('keys are stored as sha256 only, shown once, scoped, revocable', async (t) => {
  const db = openDatabase(fresh());
  try {
    const store = new WorkspaceStore(db.db);
    await store.create({ id: 'acme', name: 'Acme' });
    await t.throwsAsync(async () => store.create({ id: 'acme', name: 'again' }), { message: /already exists/ });
    await t.throwsAsync(async () => store.create({ id: 'Bad Id', name: 'x' }), { message: /workspace id/ });
    const { key, token } = await store.createKey('acme', 'ci');
    t.regex(token, /^vgl_[A-Za-z0-9_-]{43}$/);
    t.true(token.startsWith(key.prefix));
    const raw = db.db.prepare('SELECT * FROM workspace_keys').all() as Record<string, unknown>[];
    t.false(
      JSON.stringify(raw.map((r) => ({ ...r, digest: (r.digest as Buffer).toString('hex') }))).includes(token.slice(4)),
      'the token itself is not stored',
    );
    t.like(await store.authenticate(token), { workspaceId: 'acme', keyId: key.id });
    t.is(await store.authenticate(`${token}x`), null);
    t.is(await store.authenticate('not-a-key'), null);
    t.truthy((await store.listKeys('acme'))[0]!.last_used_at);
    await store.revokeKey(key.id);
    t.is(await store.authenticate(token), null);
    await t.throwsAsync(async () => store.revokeKey(key.id), { message: /already revoked/ });
    await t.throwsAsync(async () => store.createKey('nope'), { message: /does not exist/ });
  } finally {
    db.close();
  }
});

const items = (n: number) => Array.from({ length: n }, (_, i) => ({ key: `k${i}`, item: { i } }));

test('quota reservations hold across connections: two writers never reserve past the quota; finishing bills once', async (t) => {
  const dir = fresh();
  const a = openDatabase(dir, undefined, { lock: false });
  const b = openDatabase(dir, undefined, { lock: false });
  try {
    await new WorkspaceStore(a.db).create({ id: 'acme', name: 'Acme', monthlyItemQuota: 30 });
    const ra = new RunStore(a.db, new UsageMeter(a.db, 1000));
    const rb = new RunStore(b.db, new UsageMeter(b.db, 1000));
    const runs: (Awaited<ReturnType<RunStore['create']>> | Error)[] = [];
    for (const s of [ra, rb, ra, rb])
      runs.push(
        await s
          .create({ workspaceId: 'acme', kind: 'forum', request: {}, wanted: 10, maxActive: 100 })
          .catch((e: Error) => e),
      );
    t.deepEqual(
      runs.map((r) => ('reserved_units' in r ? r.reserved_units : (r as { code?: string }).code)),
      [10, 10, 10, 'quota_exceeded'],
    );
    const [r1, r2, r3] = runs as { id: string }[];
    await rb.finish(r1!.id, { status: 'succeeded', items: items(7), result: {}, error: null });
    await ra.finish(r1!.id, { status: 'succeeded', items: items(7), result: {}, error: null }); // a second finish is a no-op
    await ra.finish(r2!.id, {
      status: 'failed',
      items: items(5),
      result: null,
      error: { code: 'x', message: 'x', details: {} },
    });
    const period = billingPeriod(new Date());
    t.like(await ra.meter.snapshot('acme', period), { quota: 30, used: 7, reserved: 10, remaining: 13 });
    await ra.finish(r3!.id, { status: 'partial', items: items(99), result: null, error: null });
    t.like(await rb.meter.snapshot('acme', period), {
      used: 17,
      reserved: 0,
      remaining: 13,
      by_kind: { forum: { units: 17, runs: 2 } },
    });
    t.is((await ra.byId(r3!.id))!.billed_units, 10, 'never more than the reservation');
    t.is((await ra.byId(r2!.id))!.billed_units, 0, 'failed runs bill nothing');
    t.deepEqual(
      [
        (await ra.items(r1!.id, -1, 100)).length,
        (await ra.items(r2!.id, -1, 100)).length,
        (await ra.items(r3!.id, -1, 100)).length,
      ],
      [7, 0, 10],
      'stored items = billed units',
    );
    t.is(await ra.purgeResults(new Date(Date.now() + 1000)), 2, 'the runs with items');
    t.truthy((await ra.byId(r1!.id))!.result_purged_at);
    t.is((await ra.items(r1!.id, -1, 100)).length, 0);
    t.is(periodEnd('2026-12'), '2027-01-01T00:00:00.000Z');
  } finally {
    a.close();
    b.close();
  }
});

test('reviews are metered apart: reserved beside items, capped at their own quota, billed to what was delivered', async (t) => {
  const db = openDatabase(fresh());
  try {
    await new WorkspaceStore(db.db).create({ id: 'acme', name: 'Acme' });
    const runs = new RunStore(db.db, new UsageMeter(db.db, 1000, 50));
    const period = billingPeriod(new Date());
    const a = await runs.create({
      workspaceId: 'acme',
      kind: 'places',
      request: {},
      wanted: 5,
      wantedReviews: 40,
      maxActive: 100,
    });
    const b = await runs.create({
      workspaceId: 'acme',
      kind: 'places',
      request: {},
      wanted: 5,
      wantedReviews: 40,
      maxActive: 100,
    });
    t.deepEqual(
      [a.reserved_reviews, b.reserved_reviews],
      [40, 10],
      'the second run gets what is left, and is not refused for it',
    );
    t.like((await runs.meter.snapshot('acme', period)).reviews, { quota: 50, used: 0, reserved: 50, remaining: 0 });
    await runs.finish(a.id, { status: 'succeeded', items: items(5), reviewCount: 12, result: null, error: null });
    await runs.finish(b.id, { status: 'partial', items: items(2), reviewCount: 99, result: null, error: null });
    t.deepEqual(
      [(await runs.byId(a.id))!.billed_reviews, (await runs.byId(b.id))!.billed_reviews],
      [12, 10],
      'delivered reviews, never past the reservation',
    );
    const forum = await runs.create({ workspaceId: 'acme', kind: 'forum', request: {}, wanted: 3, maxActive: 100 });
    await runs.finish(forum.id, { status: 'succeeded', items: items(3), result: null, error: null });
    const u = await runs.meter.snapshot('acme', period);
    t.like(u, { used: 10, reserved: 0, reviews: { quota: 50, used: 22, reserved: 0, remaining: 28 } });
    t.deepEqual(u.by_kind, { forum: { units: 3, runs: 1, reviews: 0 }, places: { units: 7, runs: 2, reviews: 22 } });
  } finally {
    db.close();
  }
});

test('the queue bound refuses runs with 503 scrape_queue_full', async (t) => {
  const db = openDatabase(fresh());
  try {
    await new WorkspaceStore(db.db).create({ id: 'acme', name: 'Acme' });
    const runs = new RunStore(db.db, new UsageMeter(db.db, 1000));
    await runs.create({ workspaceId: 'acme', kind: 'forum', request: {}, wanted: 1, maxActive: 1 });
    await t.throwsAsync(
      async () => runs.create({ workspaceId: 'acme', kind: 'forum', request: {}, wanted: 1, maxActive: 1 }),
      { message: /queue is full/ },
    );
  } finally {
    db.close();
  }
});

test('CLI: workspaces create/list/set-quota, keys create/list/revoke', async (t) => {
  const dir = fresh();
  const config = join(dir, 'server.toml');
  writeFileSync(
    config,
    `[server]\ndata_dir = ${JSON.stringify(join(dir, 'data'))}\n[scrapers]\nfree_items_per_month = 77\n`,
  );
  const run = async (group: 'workspaces' | 'keys', ...args: string[]) => {
    const io = { stdout: new Sink(), stderr: new Sink() };
    const code = await runWorkspacesCommand(group, [...args, '--config', config], io);
    return { code, out: io.stdout.text, err: io.stderr.text };
  };
  t.regex(
    (await run('workspaces', 'create', '--name', 'Acme', '--id', 'acme')).out,
    /created workspace acme .*quota 77 \(default\)/,
  );
  await t.throwsAsync(run('workspaces', 'create', '--id', 'x'), { message: /--name is required/ });
  t.regex((await run('workspaces', 'list')).out, /^acme\tAcme\tused 0\/77 in \d{4}-\d{2}\n$/);
  t.regex((await run('workspaces', 'set-quota', 'acme', '500')).out, /quota 500/);
  t.regex((await run('workspaces', 'set-review-quota', 'acme', '25')).out, /review quota 25/);
  const listed = JSON.parse((await run('workspaces', 'list', '--json')).out);
  t.like(listed[0], {
    monthly_item_quota: 500,
    monthly_review_quota: 25,
    usage: { quota: 500, reviews: { quota: 25 } },
  });
  t.regex((await run('workspaces', 'set-review-quota', 'acme', 'default')).out, /review quota default/);
  t.like(
    JSON.parse((await run('workspaces', 'create', '--name', 'B', '--id', 'b', '--review-quota', '3', '--json')).out),
    { monthly_review_quota: 3 },
  );
  await t.throwsAsync(run('workspaces', 'set-review-quota', 'acme', '2.5'), { message: /non-negative/ });
  const created = await run('keys', 'create', '--workspace', 'acme', '--label', 'ci', '--json');
  const key = JSON.parse(created.out);
  t.regex(key.token, /^vgl_/);
  const list = await run('keys', 'list', '--workspace', 'acme');
  t.false(list.out.includes(key.token), 'lists never show the token');
  t.regex(list.out, new RegExp(`${key.id}\\tacme\\t${key.prefix}…\\tactive\\tci`));
  t.regex((await run('keys', 'revoke', key.id)).out, /revoked/);
  t.regex((await run('keys', 'list')).out, /revoked /);
});
