/**
 * Fleet event history (issue 16): the cost of forwarding a box's events to PostgreSQL, measured beside
 * its anchor (the same local SQLite history without forwarding, in the same run). The real components
 * (EventHistory, HistoryStore on an openDatabase() file, EventForwarder, PgHistory) on a throw-away
 * PostgreSQL cluster (test/helpers/postgres.ts, loopback); synthetic person events without pictures
 * (picture encoding is measured by bench/events.ts and is the same in both modes).
 *   - latency: event() → committed in the local history (both), and → committed in PostgreSQL (fleet)
 *   - catch-up: the database stopped while N events are recorded, then started: rows/s until the backlog is 0
 * Prints a table and writes bench/results/fleet-events.json.
 *   npx tsx bench/fleet-events.ts --rate 50 --seconds 10 --outage 5000
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { MonitorEventT } from '../src/contract/monitors.js';
import { EventForwarder } from '../src/events/eventForwarder.js';
import { EventHistory } from '../src/events/eventHistory.js';
import { HistoryStore } from '../src/events/historyStore.js';
import { PgHistory } from '../src/events/pgHistory.js';
import { SnapshotStore } from '../src/events/snapshotStore.js';
import { openDatabase } from '../src/store/database.js';
import { migratePostgres, openPool } from '../src/store/postgres.js';
import { REPO } from '../test/helpers/daemon.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { fileTempDir } from '../test/helpers/tempDir.js';

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '10' },
    outage: { type: 'string', default: '5000' },
  },
});
const RATE = Number(args.rate),
  SECONDS = Number(args.seconds),
  OUTAGE = Number(args.outage);
const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 10) / 10 : null;
};

let seqNo = 0;
const event = (): MonitorEventT =>
  ({
    id: randomUUID(),
    sequence: ++seqNo,
    type: 'person_enter',
    monitor_id: 'bench',
    stream_epoch: 'bench-epoch',
    occurred_at: new Date().toISOString(),
    track_id: 't1',
    person: { id: 'obama', name: 'Barack', external_id: null },
    similarity: 0.71,
    threshold: 0.41,
    matched_face_id: randomUUID(),
    face: null,
  }) as MonitorEventT;

function box(boxId: string) {
  const dir = fileTempDir('vigil-bench-fe-');
  const db = openDatabase(dir, undefined, { reserveBytes: 0 });
  const store = new HistoryStore(db.db);
  const history = new EventHistory(
    store,
    new SnapshotStore(dir, { maxSide: 640, cropMargin: 0.5, cropMaxSide: 320, quality: 80 }),
    {
      flushIntervalMs: 200,
      snapshots: false,
      boxId,
      retention: { maxAgeDays: 0, maxEvents: 0, maxSnapshotBytes: 0, intervalMs: 3_600_000 },
    },
    log,
  );
  history.recover();
  return { db, store, history };
}

async function main() {
  const cluster = await startPostgres();
  const url = cluster.createDatabase('bench_events');
  const pool = openPool({ url, poolSize: 4 });
  await migratePostgres(pool);
  const pg = new PgHistory(pool);
  const anchor = box('anchor');
  const fleet = box('fleet-box');
  const forwarder = new EventForwarder(
    fleet.store,
    pg,
    { boxId: 'fleet-box', intervalMs: 1000, retention: { maxAgeDays: 0, maxEvents: 0, intervalMs: 3_600_000 } },
    log,
  );
  fleet.history.addOutput(forwarder);
  forwarder.start();

  // ---- latency at a steady rate, both histories fed the same events at the same time ----
  const pushedAt = new Map<string, number>();
  const local: Record<'anchor' | 'fleet', number[]> = { anchor: [], fleet: [] };
  const toDb: number[] = [];
  const seqPushed = new Map<number, number>();
  anchor.history.onFlush = (rows) => {
    const now = performance.now();
    for (const r of rows) local.anchor.push(now - pushedAt.get(r.id)!);
  };
  fleet.history.onFlush = (rows) => {
    const now = performance.now();
    for (const r of rows) {
      const at = pushedAt.get(r.id);
      if (at === undefined) continue; // the outage phase measures throughput only
      local.fleet.push(now - at);
      seqPushed.set(r.seq, at);
    }
  };
  forwarder.onForwarded = () => {
    const now = performance.now(),
      upTo = fleet.store.forwardedSeq();
    for (const [seq, at] of seqPushed)
      if (seq <= upTo) {
        toDb.push(now - at);
        seqPushed.delete(seq);
      }
  };
  const total = Math.round(RATE * SECONDS);
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const e = event();
    pushedAt.set(e.id, performance.now());
    anchor.history.event(e, { collectionId: 'site', frame: null });
    fleet.history.event({ ...e }, { collectionId: 'site', frame: null });
  }
  for (let i = 0; i < 200 && (toDb.length < total || local.anchor.length < total); i++) await sleep(50);

  // ---- outage: N events recorded while the database is stopped, then the catch-up ----
  anchor.history.onFlush = fleet.history.onFlush = forwarder.onForwarded = null;
  cluster.stopServer();
  for (let i = 0; i < OUTAGE; i++) fleet.history.event(event(), { collectionId: 'site', frame: null });
  await sleep(600);
  fleet.history.flush(true);
  await forwarder.pass();
  const backlog = forwarder.snapshot().backlog;
  cluster.startServer();
  const c0 = performance.now();
  while (forwarder.snapshot().backlog > 0 && performance.now() - c0 < 120_000)
    await forwarder.run(() => forwarder.pass());
  const catchUpMs = performance.now() - c0;
  const inDb = Number((await pool.query('SELECT count(*) AS n FROM events')).rows[0].n);

  const result = {
    rate_per_s: RATE,
    events: total,
    anchor_local_commit_ms: { p50: pct(local.anchor, 50), p99: pct(local.anchor, 99) },
    fleet_local_commit_ms: { p50: pct(local.fleet, 50), p99: pct(local.fleet, 99) },
    fleet_in_postgres_ms: { p50: pct(toDb, 50), p99: pct(toDb, 99), max: pct(toDb, 100), forwarded: toDb.length },
    outage: {
      events: OUTAGE,
      backlog_when_down: backlog,
      catch_up_ms: Math.round(catchUpMs),
      rows_per_s: Math.round((backlog / catchUpMs) * 1000),
      rows_in_postgres: inDb,
      expected_in_postgres: total + OUTAGE,
    },
  };
  console.table({
    'anchor (sqlite only): event → local commit': result.anchor_local_commit_ms,
    'fleet: event → local commit': result.fleet_local_commit_ms,
    'fleet: event → in PostgreSQL': result.fleet_in_postgres_ms,
  });
  console.log(JSON.stringify(result.outage));
  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(join(REPO, 'bench/results/fleet-events.json'), JSON.stringify(result, null, 2));

  await Promise.all([anchor.history.close(), fleet.history.close()]);
  await forwarder.close();
  await pool.end();
  anchor.db.close();
  fleet.db.close();
  cluster.stop();
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
