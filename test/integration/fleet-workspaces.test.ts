import test from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runStoreCommand } from '../../src/cli/store.js';
import { runWorkspacesCommand } from '../../src/cli/workspaces.js';
import { call, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { FakeReddit } from '../helpers/fakeReddit.js';
import { fleetStoreToml, pgStoreToml, startPostgres, type PgCluster } from '../helpers/postgres.js';
import { Sink } from '../helpers/shared.js';
import { startReceiver } from '../helpers/webhookReceiver.js';
import pgDriver from 'pg';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Fleet mode for workspaces, keys, usage and scrape runs: two real daemons (each its own data dir) on one
 * real PostgreSQL cluster and one replay fake of the forum upstream. No mocks. Serial: one test stops the
 * shared cluster.
 */
let pg: PgCluster;
let reddit: FakeReddit;
let dbs = 0;
test.before(async () => {
  pg = await startPostgres();
  reddit = await FakeReddit.start();
});
test.after.always(async () => {
  pg?.stop();
  await reddit?.close();
});

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

async function fleet(
  scrapers = 'free_items_per_month = 500',
): Promise<{ a: TestDaemon; b: TestDaemon; url: string; close: () => Promise<void> }> {
  const url = pg.createDatabase(`fleetws_${process.pid}_${++dbs}`);
  const toml = `${fleetStoreToml(url)}[scrapers]\nmax_concurrent_runs = 2\n${scrapers}\n${reddit.toml()}\n`;
  const a = await startTestDaemon({ server: ['box_id = "box-a"'], toml });
  const b = await startTestDaemon({ server: ['box_id = "box-b"'], toml });
  return {
    a,
    b,
    url,
    close: async () => {
      await Promise.all([a.close(), b.close()]);
    },
  };
}

async function final(d: TestDaemon, location: string, token: string): Promise<Record<string, any>> {
  for (;;) {
    const r = await call(d, 'GET', location, undefined, bearer(token));
    if (!['queued', 'running', 'waiting_for_rate_limit'].includes(r.json.status)) return r.json;
    await new Promise((res) => setTimeout(res, 50));
  }
}

test.serial(
  'a workspace and key made on A work on B; a run started on A is read, paged and exported on B; usage is one; a key revoked on A (or by the CLI) is refused on B',
  async (t) => {
    const { a, b, url, close } = await fleet();
    try {
      await a.runtime.workspaces.create({ id: 'acme', name: 'Acme' });
      const { key, token } = await a.runtime.workspaces.createKey('acme', 'ci');
      t.is(
        (await call(b, 'GET', '/workspaces/acme/usage', undefined, bearer(token))).status,
        200,
        'the key made on A opens B',
      );

      const run = await call(
        a,
        'POST',
        '/workspaces/acme/scrapers/forum/scrape',
        { community: 'typescript', max_items: 3 },
        bearer(token),
      );
      t.is(run.status, 200, JSON.stringify(run.json));
      t.is(run.json.items.length, 3);
      const onB = await call(b, 'GET', `/workspaces/acme/runs/${run.json.run_id}`, undefined, bearer(token));
      t.is(onB.status, 200);
      t.deepEqual(onB.json.items, run.json.items, 'the dataset is in PostgreSQL: B serves the items A scraped');
      t.like(onB.json.billing, { billed_units: 3, used: 3 });
      const page = await call(
        b,
        'GET',
        `/workspaces/acme/runs/${run.json.run_id}/items?limit=2`,
        undefined,
        bearer(token),
      );
      t.is(page.json.items.length, 2);
      const rest = await call(
        b,
        'GET',
        `/workspaces/acme/runs/${run.json.run_id}/items?limit=2&cursor=${encodeURIComponent(page.json.next_cursor)}`,
        undefined,
        bearer(token),
      );
      t.deepEqual([...page.json.items, ...rest.json.items], run.json.items, 'B pages the run A made');
      const csv = await fetch(`${b.url}/workspaces/acme/runs/${run.json.run_id}/export?format=jsonl`, {
        headers: bearer(token),
      });
      t.is((await csv.text()).trimEnd().split('\n').length, 3);
      t.deepEqual(
        (await call(b, 'GET', '/workspaces/acme/runs', undefined, bearer(token))).json.runs.map(
          (r: { run_id: string }) => r.run_id,
        ),
        [run.json.run_id],
      );
      // One usage, read from either box; a run on B adds to it.
      const r2 = await call(
        b,
        'POST',
        '/workspaces/acme/scrapers/forum/scrape',
        { community: 'typescript', max_items: 2 },
        bearer(token),
      );
      t.is(r2.status, 200);
      for (const d of [a, b])
        t.like((await call(d, 'GET', '/workspaces/acme/usage', undefined, bearer(token))).json, {
          used: 5,
          reserved: 0,
          by_kind: { forum: { units: 5, runs: 2 } },
        });

      // Revoked on A: refused on B (NOTIFY drops it from B's cache; B checked it moments ago, so it was cached).
      await a.runtime.workspaces.revokeKey(key.id);
      let status = 0;
      for (let i = 0; i < 100 && status !== 401; i++) {
        status = (await call(b, 'GET', '/workspaces/acme/usage', undefined, bearer(token))).status;
        if (status !== 401) await new Promise((r) => setTimeout(r, 20));
      }
      t.is(status, 401);

      // The CLI in fleet mode writes to PostgreSQL: a key it makes opens both boxes, and its revoke closes both.
      const dir = tempDir(t, 'vigil-fleetws-cli-');
      const config = join(dir, 'server.toml');
      writeFileSync(config, `[server]\ndata_dir = ${JSON.stringify(join(dir, 'data'))}\n${pgStoreToml(url)}`);
      const out = new Sink();
      t.is(
        await runWorkspacesCommand('keys', ['create', '--workspace', 'acme', '--config', config, '--json'], {
          stdout: out,
          stderr: new Sink(),
        }),
        0,
      );
      const made = JSON.parse(out.text) as { id: string; token: string };
      for (const d of [a, b])
        t.is((await call(d, 'GET', '/workspaces/acme/usage', undefined, bearer(made.token))).status, 200);
      t.is(
        await runWorkspacesCommand('keys', ['revoke', made.id, '--config', config], {
          stdout: new Sink(),
          stderr: new Sink(),
        }),
        0,
      );
      for (const d of [a, b]) {
        let s = 0;
        for (let i = 0; i < 100 && s !== 401; i++) {
          s = (await call(d, 'GET', '/workspaces/acme/usage', undefined, bearer(made.token))).status;
          if (s !== 401) await new Promise((r) => setTimeout(r, 20));
        }
        t.is(s, 401);
      }
      // Retention runs on any box and applies to all: the items are gone, counts and billing stay.
      t.is(await a.runtime.scrapes.store.purgeResults(new Date(Date.now() + 60_000)), 2);
      const made2 = await a.runtime.workspaces.createKey('acme');
      const purged = await call(
        b,
        'GET',
        `/workspaces/acme/runs/${run.json.run_id}/items`,
        undefined,
        bearer(made2.token),
      );
      t.is(purged.status, 410);
      t.is(purged.json.error.code, 'run_items_purged');
      const list = new Sink();
      await runWorkspacesCommand('workspaces', ['list', '--config', config, '--json'], {
        stdout: list,
        stderr: new Sink(),
      });
      t.like(JSON.parse(list.text)[0], { id: 'acme', usage: { used: 5 } });
    } finally {
      await close();
    }
  },
);

test.serial('two boxes racing at the edge of the free tier never reserve or bill past it', async (t) => {
  const { a, b, close } = await fleet('free_items_per_month = 12');
  try {
    await a.runtime.workspaces.create({ id: 'race', name: 'race' });
    const token = (await a.runtime.workspaces.createKey('race')).token;
    // 10 runs of 5 items each, on both boxes at once: 12 items allow 5 + 5 + 2.
    const posts = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call(
          i % 2 ? b : a,
          'POST',
          '/workspaces/race/scrapers/forum/runs',
          { community: 'typescript', max_items: 5 },
          bearer(token),
        ),
      ),
    );
    const accepted = posts.filter((p) => p.status === 202);
    t.is(accepted.length, 3, posts.map((p) => `${p.status} ${p.json.error?.code ?? ''}`).join(', '));
    t.true(posts.filter((p) => p.status !== 202).every((p) => p.json.error.code === 'quota_exceeded'));
    const finals = await Promise.all(accepted.map((p) => final(a, p.res.headers.get('location')!, token)));
    const billed = finals.reduce((s, f) => s + (f.billing.billed_units as number), 0);
    t.true(billed <= 12);
    for (const d of [a, b]) {
      const u = (await call(d, 'GET', '/workspaces/race/usage', undefined, bearer(token))).json;
      t.like(u, { quota: 12, used: billed, reserved: 0 });
    }
    // Whatever the runs returned, what is left is what the next run may reserve, on either box.
    const more = await call(
      b,
      'POST',
      '/workspaces/race/scrapers/forum/runs',
      { community: 'typescript', max_items: 5 },
      bearer(token),
    );
    t.is(more.status, billed < 12 ? 202 : 429);
  } finally {
    await close();
  }
});

test.serial(
  'with the database down, workspace calls answer 503 store_unavailable (a known key is not turned into a 401), and work again after',
  async (t) => {
    const { a, b, close } = await fleet();
    try {
      await a.runtime.workspaces.create({ id: 'down', name: 'down' });
      const token = (await a.runtime.workspaces.createKey('down')).token;
      t.is((await call(b, 'GET', '/workspaces/down/usage', undefined, bearer(token))).status, 200);
      pg.stopServer();
      try {
        const scrape = await call(
          b,
          'POST',
          '/workspaces/down/scrapers/forum/runs',
          { community: 'typescript', max_items: 1 },
          bearer(token),
        );
        t.is(scrape.status, 503);
        t.is(scrape.json.error.code, 'store_unavailable');
        t.is(scrape.json.error.details.write_committed, false);
        const usage = await call(b, 'GET', '/workspaces/down/usage', undefined, bearer(token));
        t.is(usage.status, 503);
        t.is(usage.json.error.code, 'store_unavailable');
        // A key this box never verified cannot be judged: 503, never 401.
        const unknown = await call(a, 'GET', '/workspaces/down/usage', undefined, bearer('vgl_never-seen-before-key'));
        t.is(unknown.status, 503);
        t.is(unknown.json.error.code, 'store_unavailable');
      } finally {
        pg.startServer();
      }
      let ok = 0;
      for (let i = 0; i < 200 && ok !== 202; i++) {
        ok = (
          await call(
            b,
            'POST',
            '/workspaces/down/scrapers/forum/runs',
            { community: 'typescript', max_items: 1 },
            bearer(token),
          )
        ).status;
        if (ok !== 202) await new Promise((r) => setTimeout(r, 50));
      }
      t.is(ok, 202);
    } finally {
      await close();
    }
  },
);

test.serial(
  'vigil store migrate --to postgres copies workspaces, keys, usage and runs (counts and checksums match); the key then works on every box',
  async (t) => {
    const dir = tempDir(t, 'vigil-migrate-ws-');
    const scrapers = `[scrapers]\nfree_items_per_month = 500\n${reddit.toml()}\n`;
    let d = await startTestDaemon({ dir, toml: scrapers });
    let token: string;
    let runId: string;
    try {
      await d.runtime.workspaces.create({ id: 'moved', name: 'Moved', monthlyItemQuota: 40 });
      token = (await d.runtime.workspaces.createKey('moved')).token;
      const r = await call(
        d,
        'POST',
        '/workspaces/moved/scrapers/forum/scrape',
        { community: 'typescript', max_items: 3 },
        bearer(token),
      );
      t.is(r.status, 200);
      runId = r.json.run_id;
    } finally {
      await d.close();
    }
    const url = pg.createDatabase(`migratews_${process.pid}`);
    const out = new Sink();
    t.is(
      await runStoreCommand(
        ['migrate', '--to', 'postgres', '--config', join(dir, 'server.toml'), '--url', url, '--json'],
        { stdout: out, stderr: new Sink() },
      ),
      0,
      out.text,
    );
    const report = JSON.parse(out.text) as {
      ok: boolean;
      sqlite: Record<string, { rows: number }>;
      postgres: Record<string, { rows: number }>;
    };
    t.true(report.ok);
    t.like(report.sqlite, {
      workspaces: { rows: 1 },
      workspace_keys: { rows: 1 },
      usage_monthly: { rows: 1 },
      scrape_runs: { rows: 1 },
      scrape_items: { rows: 3 },
      scrape_seen_items: { rows: 3 },
    });
    t.deepEqual(report.postgres, report.sqlite);
    await t.throwsAsync(
      runStoreCommand(['migrate', '--to', 'postgres', '--config', join(dir, 'server.toml'), '--url', url], {
        stdout: new Sink(),
        stderr: new Sink(),
      }),
      { message: /already has (collection|workspace)/ },
    );

    const toml = `${pgStoreToml(url)}${scrapers}`;
    d = await startTestDaemon({ dir, toml, server: ['box_id = "old"'] });
    const fresh = await startTestDaemon({ toml, server: ['box_id = "new"'] });
    try {
      for (const box of [d, fresh]) {
        t.like((await call(box, 'GET', '/workspaces/moved/usage', undefined, bearer(token))).json, {
          quota: 40,
          used: 3,
        });
        t.is(
          (await call(box, 'GET', `/workspaces/moved/runs/${runId}`, undefined, bearer(token))).json.items.length,
          3,
        );
      }
    } finally {
      await Promise.all([d.close(), fresh.close()]);
    }
  },
);

test.serial(
  "a run finished in PostgreSQL whose webhook did not reach the box's outbox is announced at that box's next start (same webhook-id)",
  async (t) => {
    const url = pg.createDatabase(`announce_${process.pid}`);
    const dir = tempDir(t, 'vigil-announce-');
    const toml = `${pgStoreToml(url)}[scrapers]\nfree_items_per_month = 100\n${reddit.toml()}\n[webhooks]\nfirst_retry_seconds = 0.2\nmax_retry_delay_seconds = 0.5\n`;
    const r = await startReceiver();
    let box: TestDaemon | null = await startTestDaemon({ dir, toml, server: ['box_id = "hooks"'] });
    try {
      await box.runtime.workspaces.create({ id: 'hooks', name: 'hooks' });
      const key = bearer((await box.runtime.workspaces.createKey('hooks')).token);
      const created = await call(box, 'POST', '/workspaces/hooks/webhooks', { url: r.url }, key);
      r.secret = created.json.secret;
      const run = (
        await call(
          box,
          'POST',
          '/workspaces/hooks/scrapers/forum/scrape',
          { community: 'typescript', max_items: 1 },
          key,
        )
      ).json;
      t.is(run.status, 'succeeded');
      const delivered = async (n: number) => {
        for (let i = 0; i < 300 && r.received.filter((m) => m.json.data.run_id === run.run_id).length < n; i++)
          await new Promise((res) => setTimeout(res, 50));
        return r.received.filter((m) => m.json.data.run_id === run.run_id);
      };
      t.is((await delivered(1)).length, 1);
      await box.close();
      box = null;
      // The box stopped after the finishing commit and before its outbox write: announced_at stayed NULL.
      const client = new pgDriver.Client({ connectionString: url });
      await client.connect();
      try {
        t.is(
          (await client.query('SELECT announced_at FROM scrape_runs WHERE id = $1', [run.run_id])).rows[0]
            .announced_at === null,
          false,
          'marked once queued',
        );
        await client.query('UPDATE scrape_runs SET announced_at = NULL WHERE id = $1', [run.run_id]);
      } finally {
        await client.end();
      }
      box = await startTestDaemon({ dir, toml, server: ['box_id = "hooks"'] });
      const msgs = await delivered(2);
      t.is(msgs.length, 2, 'sent again at the next start');
      t.deepEqual(
        msgs.map((m) => m.id),
        [`msg_${run.run_id}`, `msg_${run.run_id}`],
        'with the same webhook-id, so a receiver de-duplicates',
      );
      t.is(r.rejected, 0);
    } finally {
      await box?.close();
      await r.close();
    }
  },
);

test.serial('a cancel asked on box B stops the run box A executes, which bills only what it delivered', async (t) => {
  const { a, b, close } = await fleet();
  reddit.latencyMs = 250;
  try {
    await a.runtime.workspaces.create({ id: 'cancel', name: 'cancel' });
    const token = (await a.runtime.workspaces.createKey('cancel')).token;
    const start = reddit.requests.length;
    const run = await call(
      a,
      'POST',
      '/workspaces/cancel/scrapers/forum/runs',
      { community: 'typescript', max_items: 50 },
      bearer(token),
    );
    t.is(run.status, 202);
    for (let i = 0; i < 400 && !reddit.requests.slice(start).some((r) => r.path.startsWith('/comments/')); i++)
      await new Promise((r) => setTimeout(r, 25));
    const asked = await call(b, 'POST', `/workspaces/cancel/runs/${run.json.run_id}/cancel`, undefined, bearer(token));
    t.is(asked.status, 202);
    t.true(asked.json.cancel_requested, 'recorded in PostgreSQL by B');
    const done = await final(b, `/workspaces/cancel/runs/${run.json.run_id}`, token);
    t.is(done.status, 'cancelled');
    t.true(done.items.length < 50);
    t.is(done.billing.billed_units, done.items.length);
    t.like((await call(b, 'GET', '/workspaces/cancel/usage', undefined, bearer(token))).json, {
      used: done.items.length,
      reserved: 0,
    });
  } finally {
    reddit.latencyMs = 0;
    await close();
  }
});

test.serial(
  'a box started while the database is down applies the migrations once it is back (workspaces then work)',
  async (t) => {
    const url = pg.createDatabase(`latemigrate_${process.pid}`);
    pg.stopServer();
    let box: TestDaemon | null = null;
    try {
      box = await startTestDaemon({ server: ['box_id = "late"'], toml: fleetStoreToml(url) });
    } finally {
      pg.startServer();
    }
    try {
      let made: unknown = null;
      for (let i = 0; i < 150 && !made; i++) {
        made = await box.runtime.workspaces.create({ id: 'late', name: 'late' }).catch(() => null);
        if (!made) await new Promise((r) => setTimeout(r, 100));
      }
      t.like(made, { id: 'late' });
      const token = (await box.runtime.workspaces.createKey('late')).token;
      t.is((await call(box, 'GET', '/workspaces/late/usage', undefined, bearer(token))).status, 200);
    } finally {
      await box?.close();
    }
  },
);
