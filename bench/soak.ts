/**
 * Reliability soak: the figures of docs/performance.md, "Reliability soak". Runs `vigil serve` as a child
 * process and measures, in one run:
 *   - fuzz: every operation in /openapi.json (test/helpers/fuzz.ts) -> requests, replies by status,
 *     5xx by cause, replies outside the envelope, requests without a reply, daemon crashes
 *   - RSS of the daemon (from /v1/system) before, peak during and after the fuzz and the chunked uploads
 *   - chunked uploads: 4 concurrent 180 MB chunked registrations (no Content-Length) -> status, RSS
 *   - wrong keys: 16 concurrent clients presenting wrong keys; health latency beside them vs alone
 *     (the anchor, same run)
 *   - SIGKILL loop: writes acknowledged, writes lost (test/helpers/killLoop.ts)
 * Usage: npx tsx bench/soak.ts [--fuzz 20] [--kills 10] -> prints JSON, writes bench/results/soak.json
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { face, REPO } from '../test/helpers/daemon.js';
import { startDaemonProcess, type DaemonProcess } from '../test/helpers/daemonProcess.js';
import { fuzz } from '../test/helpers/fuzz.js';
import { killLoop } from '../test/helpers/killLoop.js';

const { values } = parseArgs({
  options: { fuzz: { type: 'string', default: '20' }, kills: { type: 'string', default: '10' } },
});

const rss = async (d: DaemonProcess): Promise<number> =>
  ((await (await fetch(`${d.url}/v1/system`, { headers: d.auth })).json()) as { runtime: { rss_bytes: number } })
    .runtime.rss_bytes;
const mb = (b: number) => Math.round(b / 1048576);
const alive = async (d: DaemonProcess) =>
  fetch(`${d.url}/v1/health`).then(
    (r) => r.ok,
    () => false,
  );

async function peakDuring<T>(d: DaemonProcess, work: Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = 0,
    done = false;
  const poll = (async () => {
    while (!done) {
      peak = Math.max(peak, await rss(d).catch(() => 0));
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const result = await work;
  done = true;
  await poll;
  return { result, peak };
}

function chunkedUpload(d: DaemonProcess, totalBytes: number): Promise<number> {
  return new Promise((resolve) => {
    const u = new URL(`${d.url}/v1/collections/people/persons`);
    const boundary = 'soakboundary';
    let answered = false;
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        headers: {
          ...d.auth,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'transfer-encoding': 'chunked',
        },
      },
      (res) => {
        answered = true;
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => {
      if (!answered) resolve(0);
    });
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="images"; filename="big.png"\r\n\r\n`);
    const chunk = Buffer.alloc(1024 * 1024, 0x41);
    let sent = 0;
    const next = () => {
      if (answered || req.destroyed) return;
      if (sent >= totalBytes) {
        req.end(`\r\n--${boundary}--\r\n`);
        return;
      }
      sent += chunk.length;
      if (req.write(chunk)) setImmediate(next);
      else req.once('drain', next);
    };
    next();
  });
}

async function latency(url: string, n: number, headers: Record<string, string> = {}): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await (await fetch(url, { headers })).text();
    out.push(performance.now() - t);
  }
  return out.sort((a, b) => a - b);
}
const p = (xs: number[], q: number) => Math.round(xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]! * 100) / 100;

const d = await startDaemonProcess({ logLevel: 'info', toml: '[auth]\nmax_failures = 1000000' });
try {
  await fetch(`${d.url}/v1/collections`, {
    method: 'POST',
    headers: { ...d.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'people', name: 'people' }),
  });
  await fetch(`${d.url}/v1/collections`, {
    method: 'POST',
    headers: { ...d.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ id: '_default', name: 'default' }),
  });
  const rssStart = await rss(d);
  const openapi = await (await fetch(`${d.url}/openapi.json`, { headers: d.auth })).json();
  const fz = await peakDuring(
    d,
    fuzz(d.url, openapi as never, d.auth, {
      perOperation: Number(values.fuzz),
      seed: 23,
      realImage: face('identities/obama/1.jpg'),
    }),
  );
  const crashesAfterFuzz = (await alive(d)) ? 0 : 1;
  const rssAfterFuzz = await rss(d);

  const up = await peakDuring(d, Promise.all(Array.from({ length: 4 }, () => chunkedUpload(d, 180 * 1024 * 1024))));
  const rssAfterUploads = await rss(d);

  const anchor = await latency(`${d.url}/v1/health`, 200);
  let stop = false;
  let wrong = 0;
  const attackers = Array.from({ length: 16 }, async (_, i) => {
    while (!stop) {
      await (
        await fetch(`${d.url}/v1/system`, { headers: { Authorization: `Bearer wrong-key-${i}-${wrong++}-0123456789` } })
      ).text();
    }
  });
  const t0 = performance.now();
  const underAttack = await latency(`${d.url}/v1/health`, 200);
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(attackers);
  const rssAfterWrongKeys = await rss(d);

  const kills = await killLoop(d, Number(values.kills), 11);
  const result = {
    fuzz: {
      per_operation: Number(values.fuzz),
      requests: fz.result.requests,
      by_status: fz.result.byStatus,
      server_errors_by_cause: fz.result.serverErrors,
      outside_envelope: fz.result.outsideEnvelope.length,
      no_reply: fz.result.noReply.length,
      crashes: crashesAfterFuzz,
    },
    chunked_uploads: { uploads: 4, bytes_each: 180 * 1024 * 1024, statuses: up.result, rss_peak_mb: mb(up.peak) },
    wrong_keys: {
      clients: 16,
      requests: wrong,
      per_second: Math.round(wrong / seconds),
      health_ms_alone: { p50: p(anchor, 0.5), p99: p(anchor, 0.99) },
      health_ms_beside: { p50: p(underAttack, 0.5), p99: p(underAttack, 0.99) },
    },
    sigkill: {
      rounds: Number(values.kills),
      acknowledged_writes: kills.acknowledged,
      lost_writes: kills.lost.length,
      requests_cut_by_kill: kills.failedDuringKill,
    },
    rss_mb: {
      start: mb(rssStart),
      fuzz_peak: mb(fz.peak),
      after_fuzz: mb(rssAfterFuzz),
      after_uploads: mb(rssAfterUploads),
      after_wrong_keys: mb(rssAfterWrongKeys),
    },
  };
  console.log(JSON.stringify(result, null, 2));
  mkdirSync(join(REPO, 'bench/results'), { recursive: true });
  writeFileSync(join(REPO, 'bench/results/soak.json'), JSON.stringify(result, null, 2));
} finally {
  await d.stop();
}
