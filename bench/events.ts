/**
 * Event outputs benchmark: how many monitor events per second the durable history (SQLite + snapshot
 * files) with MQTT (a real Mosquitto) and one webhook endpoint (a local HTTP receiver) sustains, while
 * four real monitors run on an RTSP stream (decode + inference at 2 fps each, producing their own events).
 *
 * The daemon runs in this process (as in the tests); on top of the monitors' own events, synthetic identity
 * events with a real 960x540 frame (so each gets a snapshot: frame + crop JPEG) are pushed into the same
 * sink the monitors use (EventHistory.event), spread over the four monitors, at fixed offered rates. The
 * receiver and the MQTT subscriber run in a child process (their CPU is not counted as Vigil's).
 * Per rate step:
 *   - sustained rate: events committed to the history / delivered to the broker / to the receiver per second
 *     (a step is sustained when the backlog at its end is small)
 *   - added CPU per event: (process CPU during the step - CPU of the same daemon idle with the four
 *     monitors running) / events
 *   - latency from event() to the subscriber receiving it on <prefix>/<monitor>/events and to the webhook
 *     receiver, p50/p99
 *   - disk bytes per 1,000 events: database growth (after a WAL checkpoint) + snapshot files
 * Usage: npx tsx bench/events.ts [--rates 10,50,200] [--seconds 10] [--monitors 4]
 *   -> prints JSON, writes bench/results/events.json
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import mqtt from 'mqtt';
import sharp from 'sharp';
import type { EventHistory } from '../src/events/eventHistory.js';
import type { MonitorEventT } from '../src/contract/monitors.js';
import { call, face, REPO, startTestDaemon } from '../test/helpers/daemon.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../test/helpers/monitors.js';
import { startMosquitto } from '../test/helpers/mosquitto.js';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';

const now = () => performance.timeOrigin + performance.now();
type Arrival = { kind: 'mqtt' | 'hook'; id: string; at: number };

// ---- the observer child: webhook receiver + MQTT subscriber, reporting arrival times ----
if (process.argv.includes('--observe')) {
  const brokerUrl = process.argv[process.argv.indexOf('--observe') + 1]!;
  let batch: Arrival[] = [];
  setInterval(() => {
    if (batch.length) process.send!(batch);
    batch = [];
  }, 100);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = now();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { data: { id?: string } };
      if (body.data.id) batch.push({ kind: 'hook', id: body.data.id, at });
      res.writeHead(204).end();
    });
  });
  const client = mqtt.connect(brokerUrl, { clientId: 'bench-observer' });
  client.on('message', (_topic, payload) => {
    const at = now();
    batch.push({ kind: 'mqtt', id: (JSON.parse(payload.toString()) as { id: string }).id, at });
  });
  client.on('connect', () => {
    client.subscribe('vigil/+/events', { qos: 1 }, () => {
      server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as { port: number }).port }));
    });
  });
} else {
  await main();
}

async function main() {
  const { values } = parseArgs({
    options: {
      rates: { type: 'string', default: '10,50,200' },
      seconds: { type: 'string', default: '10' },
      monitors: { type: 'string', default: '4' },
    },
  });
  const RATES = values.rates.split(',').map(Number);
  const STEP_S = Number(values.seconds);
  const N = Number(values.monitors);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const pct = (xs: number[], p: number) => {
    if (!xs.length) return null;
    const s = [...xs].sort((a, b) => a - b);
    return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! * 10) / 10;
  };
  const r1 = (v: number) => Math.round(v * 10) / 10;
  const cpuMs = () => {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1000;
  };
  const dirBytes = (dir: string): number => {
    let n = 0;
    for (const e of readdirSync(dir, { withFileTypes: true }))
      n += e.isDirectory() ? dirBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size;
    return n;
  };

  const [frames, broker] = await Promise.all([
    renderScenario(
      [
        { image: face('identities/obama/1.jpg'), seconds: 4 },
        { image: null, seconds: 4 },
      ],
      { width: 960, height: 540, fps: 10 },
    ),
    startMosquitto(),
  ]);
  const rtsp = await startRtspServer({ frames, fps: 10 });
  const observer: ChildProcess = fork(fileURLToPath(import.meta.url), ['--observe', broker.url], {
    execArgv: ['--import', 'tsx'],
  });
  const arrivals = new Map<string, { mqtt?: number; hook?: number }>();
  const receiverPort = await new Promise<number>((resolve) => {
    observer.on('message', (m: Arrival[] | { port: number }) => {
      if (!Array.isArray(m)) return resolve(m.port);
      for (const a of m) {
        const x = arrivals.get(a.id) ?? {};
        x[a.kind] = a.at;
        arrivals.set(a.id, x);
      }
    });
  });

  const d = await startTestDaemon({ toml: `${FAST_MONITORS_TOML}\n[mqtt]\nenabled = true\nurl = "${broker.url}"\n` });
  const dataDir = d.runtime.loaded.config.server.data_dir;
  // The sink the monitors push into (the bench reaches past the service's private field on purpose).
  const history = (d.runtime.events as unknown as { history: EventHistory }).history;
  try {
    await enrollObamaBiden(d, 'staff');
    const hook = await call(d, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${receiverPort}/bench` });
    if (hook.status !== 201) throw new Error(JSON.stringify(hook.json));
    const ids = Array.from({ length: N }, (_, i) => `cam${i + 1}`);
    for (const id of ids) {
      const r = await call(d, 'POST', '/v1/monitors', {
        id,
        name: id,
        source: { url: rtsp.url() },
        collection_id: 'staff',
        inference_fps: 2,
        event_policy: { confirm_frames: 1, absence_timeout_seconds: 1, cooldown_seconds: 0 },
      });
      if (r.status !== 201) throw new Error(JSON.stringify(r.json));
    }
    await waitFor(
      'monitors running',
      async () => {
        const s = await Promise.all(
          ids.map(async (id) => (await call(d, 'GET', `/v1/monitors/${id}/state`)).json.state),
        );
        return s.every((x) => x.status === 'running' && x.inference.processed_frames > 2) ? true : undefined;
      },
      60_000,
      500,
    );

    // One real frame for every synthetic event: the face photo on a 960x540 canvas, as raw RGB.
    const W = 960,
      H = 540;
    const photo = await sharp(face('identities/biden/1.jpg')).resize(300, 300, { fit: 'cover' }).toBuffer();
    const rgb = await sharp({ create: { width: W, height: H, channels: 3, background: { r: 40, g: 40, b: 40 } } })
      .composite([{ input: photo, left: 330, top: 120 }])
      .raw()
      .toBuffer();
    const frame = { data: new Uint8Array(rgb.buffer, rgb.byteOffset, rgb.length), width: W, height: H };
    const box = { x: 400, y: 170, width: 160, height: 200 };
    const faceObs = {
      bbox: {
        pixels: box,
        normalized: { left: box.x / W, top: box.y / H, width: box.width / W, height: box.height / H },
      },
      landmarks: [
        [440, 240],
        [520, 240],
        [480, 280],
        [450, 320],
        [510, 320],
      ],
      detection_score: 0.9,
      quality: { score: 0.8, sharpness: 0.7, brightness: 0.5, pose: 0.9 },
    };
    const epoch = randomUUID();
    const seq = new Map<string, number>();
    const pushed = new Map<string, number>();
    const push = (monitorId: string, i: number) => {
      const id = randomUUID();
      const s = (seq.get(monitorId) ?? 1_000_000) + 1;
      seq.set(monitorId, s);
      const enter = i % 2 === 0;
      const e: MonitorEventT = {
        id,
        sequence: s,
        type: enter ? 'person_enter' : 'person_exit',
        monitor_id: monitorId,
        stream_epoch: epoch,
        occurred_at: new Date().toISOString(),
        track_id: `bench-${Math.floor(i / 2)}`,
        person: { id: 'biden', name: 'Joe Biden', external_id: null },
        similarity: 0.62,
        threshold: 0.41,
        matched_face_id: null,
        face: faceObs,
      };
      pushed.set(id, now());
      history.event(e, { collectionId: 'staff', frame });
      return id;
    };

    const settle = async (maxMs: number) => {
      const t0 = Date.now();
      while (Date.now() - t0 < maxMs) {
        const s = d.runtime.events.status();
        if (s.history.pending_writes === 0 && s.mqtt.queued === 0 && s.webhooks.pending_messages === 0) return true;
        await sleep(200);
      }
      return false;
    };
    const diskNow = () => {
      d.runtime.db.db.pragma('wal_checkpoint(TRUNCATE)');
      return {
        db: dirBytes(dataDir) - dirBytes(join(dataDir, 'events')),
        snapshots: dirBytes(join(dataDir, 'events')),
      };
    };
    await settle(20_000);

    // Idle baseline: the four monitors running, no synthetic events.
    const idleT0 = performance.now(),
      idleC0 = cpuMs();
    await sleep(5000);
    const idleCpu = (cpuMs() - idleC0) / (performance.now() - idleT0); // CPU ms per wall ms

    const steps = [];
    for (const rate of RATES) {
      const before = diskNow();
      const written0 = history.counters.written,
        failed0 = history.counters.snapshotsFailed;
      const stepIds = new Set<string>();
      const t0 = performance.now(),
        c0 = cpuMs();
      let i = 0;
      while (performance.now() - t0 < STEP_S * 1000) {
        const due = Math.floor(((performance.now() - t0) / 1000) * rate);
        while (i < due) {
          stepIds.add(push(ids[i % N]!, Math.floor(i / N)));
          i++;
        }
        await sleep(5);
      }
      const wall = performance.now() - t0;
      const backlogAtEnd = d.runtime.events.status();
      const settled = await settle(60_000);
      const drainMs = performance.now() - t0 - wall;
      const cpu = cpuMs() - c0 - idleCpu * (performance.now() - t0);
      await sleep(500);
      const after = diskNow();
      const lat = (k: 'mqtt' | 'hook') =>
        [...stepIds].map((id) => (arrivals.get(id)?.[k] ?? NaN) - pushed.get(id)!).filter(Number.isFinite);
      const mq = lat('mqtt'),
        hk = lat('hook');
      const written = history.counters.written - written0;
      steps.push({
        offered_per_s: rate,
        pushed: i,
        seconds: r1(wall / 1000),
        written,
        snapshots_failed_or_skipped: history.counters.snapshotsFailed - failed0,
        backlog_at_end: {
          history: backlogAtEnd.history.pending_writes,
          mqtt: backlogAtEnd.mqtt.queued,
          webhooks: backlogAtEnd.webhooks.pending_messages,
        },
        drained_within_60s: settled,
        drain_s: r1(drainMs / 1000),
        sustained_per_s: r1(written / ((wall + (settled ? drainMs : 0)) / 1000)),
        delivered: { mqtt: mq.length, webhook: hk.length },
        added_cpu_ms_per_event: i ? Math.round((cpu / i) * 100) / 100 : null,
        latency_ms: {
          broker_p50: pct(mq, 50),
          broker_p99: pct(mq, 99),
          receiver_p50: pct(hk, 50),
          receiver_p99: pct(hk, 99),
        },
        disk_bytes_per_1000_events: {
          database: Math.round(((after.db - before.db) / i) * 1000),
          snapshots: Math.round(((after.snapshots - before.snapshots) / i) * 1000),
        },
      });
      console.error(JSON.stringify(steps.at(-1)));
    }
    const status = d.runtime.events.status();
    const result = {
      bench: 'events',
      at: new Date().toISOString(),
      monitors: N,
      monitor_inference_fps: 2,
      step_seconds: STEP_S,
      frame: `${W}x${H}`,
      config: {
        flush_interval_ms: d.runtime.loaded.config.events.flush_interval_ms,
        snapshot_max_side: d.runtime.loaded.config.events.snapshot_max_side,
        jpeg_quality: d.runtime.loaded.config.events.jpeg_quality,
      },
      idle_cpu_percent_with_monitors: r1(idleCpu * 100),
      steps,
      totals: {
        events: status.history.events,
        mqtt_published: status.mqtt.published,
        mqtt_dropped: status.mqtt.dropped,
      },
    };
    console.log(JSON.stringify(result, null, 2));
    mkdirSync(join(REPO, 'bench/results'), { recursive: true });
    writeFileSync(join(REPO, 'bench/results/events.json'), JSON.stringify(result, null, 2));
  } finally {
    await d.close();
    observer.kill();
    await Promise.all([rtsp.stop(), broker.stop()]);
  }
}
