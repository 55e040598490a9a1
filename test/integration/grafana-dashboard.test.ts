import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { startMosquitto, type Broker } from '../helpers/mosquitto.js';
import { eventually, freePort, REPO } from '../helpers/shared.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * docs/integrations/grafana-dashboard.json: it has the shape Grafana's "Import dashboard" takes (the
 * export-for-sharing format, its data source an input), every metric it queries is one a real daemon exports,
 * and every query runs on a real Prometheus (Debian's) scraping that daemon.
 */
const PROMETHEUS = process.env.VIGIL_PROMETHEUS ?? '/usr/bin/prometheus';
const DASHBOARD = 'docs/integrations/grafana-dashboard.json';
const DS = { type: 'prometheus', uid: '${DS_PROMETHEUS}' };

interface Target {
  datasource: unknown;
  expr: string;
  refId: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: unknown;
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  datasource: unknown;
  definition: string;
}
const dashboard = JSON.parse(readFileSync(join(REPO, DASHBOARD), 'utf8')) as {
  __inputs: { name: string; type: string; pluginId: string }[];
  __requires: { type: string; id: string }[];
  id: unknown;
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Variable[] };
};
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const targets = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, ...t })));

/** The metric names an expression reads (ours and prom-client's process/Node.js families). */
const metricNames = (expr: string) => [...expr.matchAll(/\b(?:vigil|process|nodejs)_[a-z0-9_]+\b/g)].map((m) => m[0]);
/** A histogram's series name to its family's. */
const family = (name: string) => name.replace(/_(bucket|sum|count)$/, '');
/** The query as Grafana sends it with every box and camera selected. */
const resolved = (expr: string) =>
  expr.replaceAll('$__rate_interval', '1m').replaceAll('$instance', '.*').replaceAll('$monitor', '.*');

test('the dashboard has the shape Grafana imports: a Prometheus input, every panel and query on it, a valid grid', (t) => {
  t.deepEqual(
    dashboard.__inputs.map((i) => [i.name, i.type, i.pluginId]),
    [['DS_PROMETHEUS', 'datasource', 'prometheus']],
  );
  t.true(dashboard.__requires.some((r) => r.type === 'datasource' && r.id === 'prometheus'));
  for (const type of new Set(panels.map((p) => p.type).filter((x) => x !== 'row')))
    t.true(
      dashboard.__requires.some((r) => r.type === 'panel' && r.id === type),
      `${type} in __requires`,
    );
  t.is(dashboard.id, null, 'an imported dashboard gets its id from Grafana');
  t.regex(dashboard.uid, /^[a-zA-Z0-9_-]{1,40}$/);
  t.true(dashboard.title.length > 0 && dashboard.schemaVersion >= 36);
  const ids = panels.map((p) => p.id);
  t.is(new Set(ids).size, ids.length, 'panel ids are unique');
  for (const p of panels) {
    const g = p.gridPos;
    t.true(Number.isInteger(g.x) && g.x >= 0 && g.w > 0 && g.x + g.w <= 24 && g.h > 0 && g.y >= 0, p.title);
    if (p.type === 'row') continue;
    t.deepEqual(p.datasource, DS, p.title);
    t.true((p.targets ?? []).length > 0, `${p.title} has a query`);
  }
  for (const target of targets) t.deepEqual(target.datasource, DS, target.panel);
  for (const v of dashboard.templating.list) t.deepEqual(v.datasource, DS, v.name);
  // Panels do not overlap.
  const cells = new Set<string>();
  for (const p of panels)
    for (let x = p.gridPos.x; x < p.gridPos.x + p.gridPos.w; x++)
      for (let y = p.gridPos.y; y < p.gridPos.y + p.gridPos.h; y++) {
        t.false(cells.has(`${x},${y}`), `${p.title} overlaps at ${x},${y}`);
        cells.add(`${x},${y}`);
      }
});

let daemon: TestDaemon;
let broker: Broker;
let prometheus: ChildProcess;
let promUrl: string;
let exposition: string;

test.before(async () => {
  // MQTT on, so its families are exported (they are not without [mqtt]).
  broker = await startMosquitto();
  daemon = await startTestDaemon({
    toml: `[metrics]\nauth = "loopback"\n[mqtt]\nenabled = true\nurl = "${broker.url}"`,
  });
  exposition = await (await fetch(`${daemon.url}/metrics`)).text();
  const dir = fileTempDir('vigil-prometheus-');
  const port = await freePort();
  promUrl = `http://127.0.0.1:${port}`;
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: vigil',
      `    static_configs: [{ targets: ['${new URL(daemon.url).host}'] }]`,
    ].join('\n'),
  );
  prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: 'ignore' },
  );
});
test.after.always(async () => {
  if (prometheus && prometheus.exitCode === null) {
    const exited = new Promise((r) => prometheus.once('exit', r));
    prometheus.kill('SIGTERM');
    await exited;
  }
  await daemon?.close();
  await broker?.stop();
});

async function query(expr: string): Promise<{ status: string; error?: string; data?: { result: unknown[] } }> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`).catch(() => null);
  return res ? ((await res.json()) as { status: string }) : { status: 'down' };
}

test('every metric the dashboard queries is exported by a real daemon', (t) => {
  const exported = new Set([...exposition.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
  const queried = new Set(
    [...targets.map((q) => q.expr), ...dashboard.templating.list.map((v) => v.definition)].flatMap(metricNames),
  );
  t.true(queried.size >= 25, `the dashboard reads ${queried.size} metrics`);
  const missing = [...queried].filter((name) => !exported.has(family(name)));
  t.deepEqual(missing, [], 'queried by the dashboard, not in /metrics');
});

test('every query runs on a real Prometheus scraping the daemon, and the box panels show its data', async (t) => {
  // Three scrapes, so rate() has points within its 1m window.
  const up = await eventually(
    () => query('count_over_time(vigil_ready[1m])'),
    (r) => Number((r.data?.result[0] as { value?: [number, string] } | undefined)?.value?.[1] ?? 0) >= 3,
    600,
  );
  t.is(up.status, 'success', JSON.stringify(up));
  for (const target of targets) {
    const r = await query(resolved(target.expr));
    t.is(r.status, 'success', `${target.panel}: ${target.expr}: ${r.error ?? ''}`);
  }
  for (const title of ['Ready', 'Version', 'Inference workers', 'Resident memory', 'CPU', 'Requests by status']) {
    const panel = panels.find((p) => p.title === title)!;
    const r = await query(resolved(panel.targets![0]!.expr));
    t.true((r.data?.result.length ?? 0) > 0, `${title}: no data`);
  }
  // The variables' label_values() as Prometheus' series API answers them.
  const boxes = (await (await fetch(`${promUrl}/api/v1/label/instance/values?match[]=vigil_build_info`)).json()) as {
    data: string[];
  };
  t.deepEqual(boxes.data, [new URL(daemon.url).host]);
});
