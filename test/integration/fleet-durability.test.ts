import test from 'ava';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import pg from 'pg';
import { seededRandom } from '../../bench/seededRandom.js';
import { PgGallery } from '../../src/collections/pgGallery.js';
import { migratePostgres } from '../../src/store/postgres.js';
import { call, face, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemonProcess.js';
import { fleetStoreToml, startPostgres, type PgCluster } from '../helpers/postgres.js';
import { eventually } from '../helpers/shared.js';
import { unitVectors } from '../helpers/vectors.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * Fleet mode under failure and over time: a box SIGKILLed while a client writes to it (no acknowledged
 * write lost; the other box has every one; the killed box catches up by revision), change-log pruning
 * (what a box seen within the retention window needs is kept; a box away longer copies afresh) and the
 * fleet's Prometheus series. Real daemons (one as its own process, for SIGKILL) on a real PostgreSQL.
 */
let cluster: PgCluster;
let dbs = 0;
test.before(async () => {
  cluster = await startPostgres();
});
test.after.always(() => {
  cluster?.stop();
});

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(sql, params)).rows;
  } finally {
    await c.end();
  }
}

const b64 = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');

async function importOne(
  box: { url: string; auth: Record<string, string> },
  collection: string,
  contract: string,
  id: string,
  v: Float32Array,
): Promise<boolean> {
  const res = await fetch(
    `${box.url}/v1/collections/${collection}/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=1`,
    {
      method: 'POST',
      headers: { ...box.auth, 'content-type': 'application/x-ndjson' },
      body: JSON.stringify({ id, embeddings: [b64(v)] }),
    },
  );
  const text = await res.text();
  return res.status === 200 && text.includes('"done"');
}

test.serial(
  'SIGKILL of a box mid-write: every acknowledged write is in PostgreSQL and searchable on the other box; the killed box catches up by revision',
  async (t) => {
    const url = cluster.createDatabase(`kill_${process.pid}_${++dbs}`);
    let a: DaemonProcess | null = null;
    let b: TestDaemon | null = null;
    try {
      a = await startDaemonProcess({ logLevel: 'info', toml: `box_id = "box-a"\n${fleetStoreToml(url)}` });
      b = await startTestDaemon({ server: ['box_id = "box-b"'], toml: fleetStoreToml(url) });
      const created = await fetch(`${a.url}/v1/collections`, {
        method: 'POST',
        headers: { ...a.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ id: 'kill', name: 'Kill', search: { load_policy: 'eager' } }),
      });
      t.is(created.status, 201);
      const contract = ((await created.json()) as { collection: { embedding_contract_id: string } }).collection
        .embedding_contract_id;
      await eventually(
        () => call(b!, 'GET', '/v1/collections/kill'),
        (r) => r.status === 200,
      );

      // Writers against box A: three bulk-import clients (one person per request, each its own vector) and
      // one image registration client (real detection and embedding). Then SIGKILL A at a random moment.
      const vectors = unitVectors(3000, 29);
      const acked = new Map<string, Float32Array | null>();
      let next = 0,
        failed = 0;
      let stop = false;
      const box = a;
      const importer = async () => {
        while (!stop && next < vectors.length) {
          const i = next++;
          try {
            if (await importOne(box, 'kill', contract, `v${i}`, vectors[i]!)) acked.set(`v${i}`, vectors[i]!);
            else failed++;
          } catch {
            failed++;
            return;
          }
        }
      };
      const registrar = async () => {
        for (let i = 0; !stop; i++) {
          try {
            const fd = new FormData();
            fd.append('id', `r${i}`);
            fd.append('images', new Blob([face('identities/obama/1.jpg')]), 'a.jpg');
            const res = await fetch(`${box.url}/v1/collections/kill/persons`, {
              method: 'POST',
              headers: box.auth,
              body: fd,
            });
            await res.text();
            if (res.status === 201) acked.set(`r${i}`, null);
            else failed++;
          } catch {
            failed++;
            return;
          }
        }
      };
      const writers = [importer(), importer(), importer(), registrar()];
      await new Promise((r) => setTimeout(r, 3000 + seededRandom(7)() * 2000));
      await a.kill();
      stop = true;
      await Promise.all(writers);
      t.true(acked.size >= 5, `only ${acked.size} writes were acknowledged before the kill`);

      // 1. PostgreSQL has every acknowledged write.
      const inPg = new Set(
        (await query<{ id: string }>(url, "SELECT id FROM persons WHERE collection_id = 'kill'")).map((r) => r.id),
      );
      const missing = [...acked.keys()].filter((id) => !inPg.has(id));
      t.deepEqual(missing, [], 'acknowledged writes missing from PostgreSQL');
      const [pgCounts] = await query<{ person_count: number; face_count: number; change_revision: string }>(
        url,
        "SELECT person_count, face_count, change_revision FROM collections WHERE id = 'kill'",
      );

      // 2. Box B has all of it, and every acknowledged vector finds its person in B's index.
      const onB = await eventually(
        () => call(b!, 'GET', '/v1/collections/kill'),
        (r) => r.json.collection?.face_count === Number(pgCounts!.face_count),
      );
      t.like(onB.json.collection, {
        person_count: Number(pgCounts!.person_count),
        face_count: Number(pgCounts!.face_count),
      });
      const col = b.runtime.collections.get('kill');
      const imported = [...acked].filter(([, v]) => v !== null) as [string, Float32Array][];
      const found = b.runtime.inference!.search.identify(
        col,
        imported.map(([, v]) => v),
        0.99,
      );
      const notFound = imported.filter(([id], i) => found[i]?.person.id !== id).map(([id]) => id);
      t.deepEqual(notFound, [], 'acknowledged imports not searchable on box B');
      for (const id of [...acked.keys()].filter((k) => k.startsWith('r')))
        t.is((await call(b, 'GET', `/v1/collections/kill/persons/${id}`)).status, 200, id);

      // 3. Box A restarts on its data dir and catches up by revision: same counts, no full copy.
      await a.start();
      const sys = await eventually(
        async () => (await fetch(`${a!.url}/v1/system`, { headers: a!.auth })).json() as Promise<Record<string, any>>,
        (s) => s.fleet?.revisions_behind === 0 && s.fleet?.state === 'connected',
      );
      const onA = (
        (await (await fetch(`${a.url}/v1/collections/kill`, { headers: a.auth })).json()) as Record<string, any>
      ).collection;
      t.like(onA, {
        person_count: Number(pgCounts!.person_count),
        face_count: Number(pgCounts!.face_count),
        search_revision: onB.json.collection.search_revision,
      });
      t.is(sys.fleet.full_copies, 0, 'the killed box caught up by revision, not by a copy');
      const idx = (
        sys.search.collections as {
          collection_id: string;
          live_rows: number;
          snapshot: { loaded_from: string } | null;
        }[]
      ).find((c) => c.collection_id === 'kill')!;
      t.is(idx.live_rows, Number(pgCounts!.face_count), "the restarted box's index holds every face");
      // Its replica holds exactly PostgreSQL's rows: the same face ids under the same sequence numbers.
      const pgFaces = (
        await query<{ seq: number; id: string }>(
          url,
          "SELECT seq, id FROM face_samples WHERE collection_id = 'kill' ORDER BY seq",
        )
      ).map((r) => `${r.seq}:${r.id}`);
      const replica = new Database(join(a.dataDir, 'vigil.db'), { readonly: true });
      try {
        const local = (
          replica.prepare("SELECT seq, id FROM face_samples WHERE collection_id = 'kill' ORDER BY seq").all() as {
            seq: number;
            id: string;
          }[]
        ).map((r) => `${r.seq}:${r.id}`);
        t.deepEqual(local, pgFaces);
      } finally {
        replica.close();
      }
      const uncommittedAcks = inPg.size - acked.size;
      t.log(
        JSON.stringify({
          acknowledged: acked.size,
          refused_or_cut: failed,
          committed_not_acknowledged: uncommittedAcks,
          faces: Number(pgCounts!.face_count),
          change_revision: Number(pgCounts!.change_revision),
          restart_caught_up_revisions: sys.fleet.revisions_applied,
          index_loaded_from: idx.snapshot?.loaded_from ?? null,
        }),
      );
    } finally {
      await a?.stop();
      await b?.close();
    }
  },
);

test.serial(
  'pruning keeps what a box seen within the retention window needs, and deletes the rest once per interval',
  async (t) => {
    const url = cluster.createDatabase(`prune_${process.pid}_${++dbs}`);
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      await migratePostgres(pool);
      const g = new PgGallery(pool, 'box-x', async () => undefined);
      const at = new Date().toISOString();
      t.true(
        await g.createCollection({
          id: 'p',
          name: 'P',
          description: '',
          default_threshold: 0.5,
          model_id: 'm',
          model_digest: 'd',
          embedding_dimension: 4,
          preprocessing_version: 'v',
          embedding_contract_id: 'c',
          search_profile: 'fp32_v1',
          capacity_rows: 100,
          max_faces_per_person: 5,
          load_policy: 'lazy',
          save_face_crops: false,
          metadata: {},
          detection: {
            input_sizes: [[640, 640]],
            threshold: 0.5,
            nms_threshold: 0.4,
            single_face_selection: 'largest',
          },
          created_at: at,
          updated_at: at,
        }),
      );
      let n = 0;
      const newId = () => `f${n++}`;
      for (let i = 0; i < 5; i++)
        await g.importBatch(
          'p',
          [{ id: `p${i}`, name: null, external_id: null, metadata: {}, embeddings: [new Float32Array([1, 0, 0, 0])] }],
          () => undefined,
          newId,
        );
      const revisions = async () =>
        (
          await query<{ revision: string }>(
            url,
            "SELECT revision FROM gallery_changes WHERE collection_id = 'p' ORDER BY revision",
          )
        ).map((r) => Number(r.revision));
      t.deepEqual(await revisions(), [1, 2, 3, 4, 5, 6]);
      const [{ index_epoch: epoch }] = (await query<{ index_epoch: string }>(
        url,
        "SELECT index_epoch FROM collections WHERE id = 'p'",
      )) as [{ index_epoch: string }];

      // box-x has applied 6, box-y only 3, box-z (seen long ago) 1; box-w has 2 of an older incarnation.
      const x = new PgGallery(pool, 'box-x', async () => undefined),
        y = new PgGallery(pool, 'box-y', async () => undefined);
      const z = new PgGallery(pool, 'box-z', async () => undefined),
        w = new PgGallery(pool, 'box-w', async () => undefined);
      await x.recordProgress([{ id: 'p', index_epoch: epoch, change_revision: 6 }]);
      await y.recordProgress([{ id: 'p', index_epoch: epoch, change_revision: 3 }]);
      await z.recordProgress([{ id: 'p', index_epoch: epoch, change_revision: 1 }]);
      await w.recordProgress([{ id: 'p', index_epoch: 'older-incarnation', change_revision: 2 }]);
      await query(url, "UPDATE gallery_box_progress SET seen_at = now() - interval '2 hours' WHERE box_id = 'box-z'");

      // The first call only starts the clock; a second within the interval does nothing.
      t.is(await x.pruneChanges(3600, 60), null);
      t.is(await y.pruneChanges(3600, 60), null);
      t.deepEqual(await revisions(), [1, 2, 3, 4, 5, 6]);
      // Due: box-z is outside the window and box-w's incarnation is gone, so box-y's 3 is the floor.
      await query(url, "UPDATE gallery_maintenance SET last_run_at = now() - interval '2 minutes'");
      t.is(await y.pruneChanges(3600, 60), 3);
      t.deepEqual(await revisions(), [4, 5, 6]);
      t.is(await x.pruneChanges(3600, 60), null, 'once per interval for the whole fleet');
      t.deepEqual(
        (await query<{ box_id: string }>(url, 'SELECT box_id FROM gallery_box_progress ORDER BY box_id')).map(
          (r) => r.box_id,
        ),
        ['box-w', 'box-x', 'box-y'],
        'rows outside the window go',
      );
      const [m] = await query<{ last_box_id: string; last_deleted: string }>(
        url,
        'SELECT last_box_id, last_deleted FROM gallery_maintenance',
      );
      t.like({ ...m, last_deleted: Number(m!.last_deleted) }, { last_box_id: 'box-y', last_deleted: 3 });

      // box-y catches up: everything box-x and box-y have applied goes.
      await y.recordProgress([{ id: 'p', index_epoch: epoch, change_revision: 6 }]);
      await query(url, "UPDATE gallery_maintenance SET last_run_at = now() - interval '2 minutes'");
      t.is(await x.pruneChanges(3600, 60), 3);
      t.deepEqual(await revisions(), []);
    } finally {
      await pool.end();
    }
  },
);

const PROMTOOL = process.env.VIGIL_PROMTOOL ?? '/usr/bin/promtool';
function metricValue(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    if (line.slice(0, i) === series) return Number(line.slice(i + 1));
  }
  return undefined;
}

test.serial(
  'a box away longer than the retention window copies the collection afresh; boxes that stay are caught up by revision; fleet metrics pass promtool',
  async (t) => {
    const url = cluster.createDatabase(`away_${process.pid}_${++dbs}`);
    const toml = fleetStoreToml(url, 'change_log_retention_seconds = 1.5\nchange_log_prune_interval_seconds = 0.2\n');
    const dirB = tempDir(t, 'vigil-away-');
    const a = await startTestDaemon({ server: ['box_id = "box-a"'], toml });
    let b = await startTestDaemon({ dir: dirB, server: ['box_id = "box-b"'], toml });
    const changes = async () =>
      Number(
        (await query<{ n: string }>(url, "SELECT count(*) AS n FROM gallery_changes WHERE collection_id = 'away'"))[0]!
          .n,
      );
    try {
      const created = await call(a, 'POST', '/v1/collections', {
        id: 'away',
        name: 'Away',
        search: { load_policy: 'eager' },
      });
      const contract = created.json.collection.embedding_contract_id as string;
      const vs = unitVectors(40, 31);
      for (let i = 0; i < 10; i++) t.true(await importOne(a, 'away', contract, `v${i}`, vs[i]!));
      await eventually(
        () => call(b, 'GET', '/v1/collections/away'),
        (r) => r.json.collection?.face_count === 10,
      );
      const copiesBefore = (await call(b, 'GET', '/v1/system')).json.fleet.full_copies as number;
      t.is(copiesBefore, 1, 'the collection was new to B: copied once');

      // Both boxes are current and seen: the log is pruned to nothing, and a new write still reaches B by revision.
      t.is(await eventually(changes, (c) => c === 0), 0);
      t.true(await importOne(a, 'away', contract, 'v10', vs[10]!));
      await eventually(
        () => call(b, 'GET', '/v1/collections/away'),
        (r) => r.json.collection?.face_count === 11,
      );
      t.is(
        (await call(b, 'GET', '/v1/system')).json.fleet.full_copies,
        copiesBefore,
        'caught up by revision through a pruned log',
      );

      // Fleet metrics on a live box: promtool accepts them, and they move.
      const text = await (await fetch(`${b.url}/metrics`, { headers: b.auth })).text();
      const check = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      t.is(check.status, 0, `${check.stdout}${check.stderr}`);
      t.is(metricValue(text, 'vigil_fleet_database_connected{box="box-b"}'), 1);
      t.is(metricValue(text, 'vigil_fleet_revisions_behind{box="box-b"}'), 0);
      t.true(
        (metricValue(text, 'vigil_fleet_revisions_applied_total{box="box-b"}') ?? 0) >= 12,
        text
          .split('\n')
          .filter((l) => l.includes('fleet'))
          .join('\n'),
      );
      t.true((metricValue(text, 'vigil_fleet_syncs_total{box="box-b"}') ?? 0) >= 2);
      t.is(metricValue(text, 'vigil_fleet_full_copies_total{box="box-b"}'), 1, 'the collection was new to B once');
      t.not(metricValue(text, 'vigil_fleet_seconds_since_last_apply{box="box-b"}'), undefined);
      const pruned = [a, b].map(
        async (d) =>
          metricValue(
            await (await fetch(`${d.url}/metrics`, { headers: d.auth })).text(),
            `vigil_fleet_changes_pruned_total{box="${d === a ? 'box-a' : 'box-b'}"}`,
          ) ?? 0,
      );
      t.true((await Promise.all(pruned)).reduce((s, x) => s + x, 0) >= 11, 'one of the boxes pruned the log');

      // B goes away for longer than the window while A writes; its revisions are pruned.
      await b.close();
      for (let i = 11; i < 20; i++) t.true(await importOne(a, 'away', contract, `v${i}`, vs[i]!));
      await new Promise((r) => setTimeout(r, 2000));
      t.is(await eventually(changes, (c) => c === 0), 0, 'B is no longer seen: its revisions are not kept');
      // Back: the log no longer reaches B's revision, so B copies the collection, and has everything.
      b = await startTestDaemon({ dir: dirB, server: ['box_id = "box-b"'], toml });
      const sys = (await call(b, 'GET', '/v1/system')).json;
      t.is(sys.fleet.full_copies, 1, 'a full copy of the collection whose changes were pruned');
      t.like((await call(b, 'GET', '/v1/collections/away')).json.collection, { person_count: 20, face_count: 20 });
      const col = b.runtime.collections.get('away');
      const hits = b.runtime.inference!.search.identify(col, vs.slice(0, 20), 0.99);
      t.deepEqual(
        hits.map((h) => h?.person.id),
        vs.slice(0, 20).map((_, i) => `v${i}`),
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  },
);
