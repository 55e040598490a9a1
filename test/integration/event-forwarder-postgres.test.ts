import test from 'ava';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import type pg from 'pg';
import { EventForwarder } from '../../src/events/eventForwarder.js';
import { HistoryStore, type NewEvent } from '../../src/events/historyStore.js';
import { PgHistory } from '../../src/events/pgHistory.js';
import { openDatabase, type OpenedDatabase } from '../../src/store/database.js';
import { migratePostgres, openPool } from '../../src/store/postgres.js';
import { startPostgres, type PgCluster } from '../helpers/postgres.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * The forwarder's guarantees on a real PostgreSQL, component by component: a repeated batch (a crash
 * between PostgreSQL's commit and the local cursor update) adds nothing twice; a row waits for its
 * picture; fleet retention runs once per interval whichever box asks; deleting a person in the shared
 * gallery deletes its events fleet-wide.
 */
let cluster: PgCluster;
let pool: pg.Pool;
let dbs = 0;
const log = pino({ level: 'silent' });
test.before(async () => {
  cluster = await startPostgres();
});
test.after.always(() => cluster?.stop());

async function setup() {
  const url = cluster.createDatabase(`fwd_${process.pid}_${++dbs}`);
  pool = openPool({ url, poolSize: 4 });
  await migratePostgres(pool);
  const db: OpenedDatabase = openDatabase(fileTempDir('vigil-fwd-'), undefined, { reserveBytes: 0 });
  const store = new HistoryStore(db.db);
  const pgh = new PgHistory(pool);
  const fwd = new EventForwarder(
    store,
    pgh,
    {
      boxId: 'box-a',
      intervalMs: 60_000,
      pendingWaitMs: 30_000,
      retention: { maxAgeDays: 0, maxEvents: 0, intervalMs: 3_600_000 },
    },
    log,
  );
  return {
    db,
    store,
    pgh,
    fwd,
    close: async () => {
      await fwd.close();
      await pool.end();
      db.close();
    },
  };
}

let n = 0;
const row = (o: Partial<NewEvent> = {}): NewEvent => ({
  id: randomUUID(),
  box_id: 'box-a',
  type: 'person_enter',
  monitor_id: 'door',
  collection_id: 'site',
  person_id: 'obama',
  person_name: 'Barack',
  person_external_id: null,
  similarity: 0.7,
  threshold: 0.41,
  matched_face_id: null,
  track_id: 't',
  stream_epoch: 'e',
  sequence: ++n,
  occurred_at: new Date().toISOString(),
  occurred_ms: Date.now(),
  face_json: null,
  error_json: null,
  reason: null,
  zones_json: null,
  zone: null,
  unknown_id: null,
  identity_json: null,
  snapshot: 'none',
  snapshot_path: null,
  snapshot_bytes: 0,
  snapshot_width: null,
  snapshot_height: null,
  crop_width: null,
  crop_height: null,
  ...o,
});
const count = async (where = 'true') =>
  Number((await pool.query(`SELECT count(*) AS n FROM events WHERE ${where}`)).rows[0].n);

test.serial(
  'a batch repeated after a lost cursor update adds nothing twice; a row waits for its picture',
  async (t) => {
    const s = await setup();
    try {
      const ids = [row(), row(), row()].map((r) => (s.store.insert(r), r.id));
      t.is(await s.fwd.pass(), 3);
      t.is(await count(), 3);
      t.is(s.fwd.snapshot().backlog, 0);
      // The process died after PostgreSQL committed but before the local cursor moved: the batch goes again.
      s.store.setForwardedSeq(0);
      t.is(await s.fwd.pass(), 0, 'nothing inserted twice');
      t.is(await count(), 3);
      t.deepEqual(
        (await pool.query('SELECT id FROM events ORDER BY box_seq')).rows.map((r: { id: string }) => r.id),
        ids,
      );

      // A row whose picture is being written holds back itself and the rows after it (order is kept).
      const pending = row({ snapshot: 'pending' });
      s.store.insert(pending);
      const after = row();
      s.store.insert(after);
      t.is(await s.fwd.pass(), 0);
      t.is(s.fwd.snapshot().backlog, 2);
      s.store.setSnapshot(pending.id, {
        snapshot: 'failed',
        snapshot_path: null,
        snapshot_bytes: 0,
        snapshot_width: null,
        snapshot_height: null,
        crop_width: null,
        crop_height: null,
      });
      t.is(await s.fwd.pass(), 2);
      t.is((await s.pgh.get(pending.id))!.snapshot, 'failed');

      // Past the wait, a pending row is copied as it is and updated once its picture settles.
      const stale = row({ snapshot: 'pending', occurred_ms: Date.now() - 60_000 });
      s.store.insert(stale);
      t.is(await s.fwd.pass(), 1);
      t.is((await s.pgh.get(stale.id))!.snapshot, 'pending');
      s.store.setSnapshot(stale.id, {
        snapshot: 'failed',
        snapshot_path: null,
        snapshot_bytes: 0,
        snapshot_width: null,
        snapshot_height: null,
        crop_width: null,
        crop_height: null,
      });
      await s.fwd.pass();
      t.is((await s.pgh.get(stale.id))!.snapshot, 'failed');

      // The box restarts (a new forwarder, nothing in memory) before the picture of a row it copied as
      // pending settled: the new forwarder finds the row in the fleet history and settles it there too.
      const crashed = row({ snapshot: 'pending', occurred_ms: Date.now() - 60_000 });
      const gone = row({ snapshot: 'pending', occurred_ms: Date.now() - 60_000 });
      s.store.insert(crashed);
      s.store.insert(gone);
      t.is(await s.fwd.pass(), 2);
      t.is((await s.pgh.get(crashed.id))!.snapshot, 'pending');
      await s.fwd.close();
      s.store.setSnapshot(crashed.id, {
        snapshot: 'failed',
        snapshot_path: null,
        snapshot_bytes: 0,
        snapshot_width: null,
        snapshot_height: null,
        crop_width: null,
        crop_height: null,
      });
      s.db.db.prepare('DELETE FROM events WHERE id = ?').run(gone.id);
      const again = new EventForwarder(
        s.store,
        s.pgh,
        {
          boxId: 'box-a',
          intervalMs: 60_000,
          pendingWaitMs: 30_000,
          retention: { maxAgeDays: 0, maxEvents: 0, intervalMs: 3_600_000 },
        },
        log,
      );
      t.teardown(() => again.close());
      await again.pass();
      t.is((await s.pgh.get(crashed.id))!.snapshot, 'failed', 'settled after the restart');
      t.is((await s.pgh.get(gone.id))!.snapshot, 'expired', 'a row no longer on the box has no picture to serve');
    } finally {
      await s.close();
    }
  },
);

test.serial('fleet retention runs once per interval whichever box asks; age and count', async (t) => {
  const s = await setup();
  try {
    const now = Date.now();
    const old = [row({ occurred_ms: now - 10 * 86_400_000 }), row({ occurred_ms: now - 9 * 86_400_000 })];
    const recent = Array.from({ length: 5 }, (_, i) =>
      row({ box_id: i % 2 ? 'box-b' : 'box-a', occurred_ms: now - (5 - i) * 1000 }),
    );
    await s.pgh.insert([...old, ...recent].map((r, i) => ({ ...r, seq: i + 1 })));
    const o = { maxAgeDays: 7, maxEvents: 3, intervalMs: 60_000 };
    t.deepEqual(await s.pgh.retention('box-a', o, now), { byAge: 2, byCount: 2 });
    t.is(await count(), 3);
    t.is(await s.pgh.retention('box-b', o, now + 1000), null, 'another box within the interval does not run it again');
    t.not(await s.pgh.retention('box-b', o, now + 61_000), null, 'after the interval, any box runs it');
    t.is(Number((await pool.query('SELECT deleted FROM event_retention')).rows[0].deleted), 4);
  } finally {
    await s.close();
  }
});

test.serial(
  'deleting a person (or its collection) in the shared gallery deletes its events in the fleet history',
  async (t) => {
    const s = await setup();
    try {
      const at = new Date().toISOString();
      await pool.query(
        `INSERT INTO collections (id, name, default_threshold, model_id, model_digest, embedding_dimension, preprocessing_version, embedding_contract_id,
      search_profile, capacity_rows, max_faces_per_person, load_policy, detector_input_sizes_json, detector_threshold, detector_nms_threshold, single_face_selection,
      created_at, updated_at, index_epoch) VALUES ('site', 'Site', 0.4, 'm', 'd', 512, 'p', 'c', 'fp32_v1', 100, 10, 'lazy', '[]', 0.5, 0.4, 'largest', $1, $1, 'ep')`,
        [at],
      );
      await pool.query(
        `INSERT INTO persons (collection_id, id, created_at, updated_at) VALUES ('site', 'obama', $1, $1), ('site', 'biden', $1, $1)`,
        [at],
      );
      await s.pgh.insert(
        [row(), row(), row({ person_id: 'biden' }), row({ person_id: null, type: 'unknown_enter' })].map((r, i) => ({
          ...r,
          seq: i + 1,
        })),
      );
      await pool.query(`DELETE FROM persons WHERE collection_id = 'site' AND id = 'obama'`);
      t.is(await count("person_id = 'obama'"), 0);
      t.is(await count(), 2);
      await pool.query(`DELETE FROM collections WHERE id = 'site'`);
      t.is(
        await count("person_id = 'biden'"),
        0,
        'a collection delete cascades to its persons, and so to their events',
      );
      t.is(await count(), 1, 'events of no person stay');
    } finally {
      await s.close();
    }
  },
);
