import test from 'ava';
import { spawnSync } from 'node:child_process';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { FakeReddit } from '../helpers/fakeReddit.js';
import { freePort } from '../helpers/shared.js';
import { enrollObamaBiden, FAST_MONITORS_TOML, waitFor } from '../helpers/monitors.js';
import { renderScenario, startRtspServer, type RtspServer } from '../helpers/rtsp.js';

/**
 * GET /metrics on a live daemon with a monitor on a real RTSP stream and a scrape against the fake
 * Reddit: Prometheus' own `promtool check metrics` accepts the exposition, and the values move with work.
 */
const PROMTOOL = process.env.VIGIL_PROMTOOL ?? '/usr/bin/promtool';
const METRICS_TOKEN = 'metrics-only-token-0123456789';
let d: TestDaemon;
let fake: FakeReddit;
let rtsp: RtspServer;

test.before(async () => {
  const frames = await renderScenario(
    [
      { image: face('identities/obama/1.jpg'), seconds: 3 },
      { image: null, seconds: 1 },
    ],
    { width: 320, height: 240, fps: 10 },
  );
  [fake, rtsp] = await Promise.all([FakeReddit.start(), startRtspServer({ frames, fps: 10 })]);
  d = await startTestDaemon({ toml: `${FAST_MONITORS_TOML}\n[scrapers]\nfree_items_per_month = 500\n${fake.toml()}` });
  await enrollObamaBiden(d, 'gallery');
});
test.after.always(async () => {
  await d?.close();
  await Promise.all([fake?.close(), rtsp?.stop()]);
});

async function scrapeMetrics(headers: Record<string, string> = d.auth, daemon: TestDaemon = d): Promise<string> {
  const res = await fetch(`${daemon.url}/metrics`, { headers });
  if (res.status !== 200) throw new Error(`/metrics ${res.status}: ${await res.text()}`);
  return res.text();
}

/** The value of one series (name plus exact label set as Prometheus prints it), or undefined. */
function value(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    if (line.slice(0, i) === series) return Number(line.slice(i + 1));
  }
  return undefined;
}

function promtool(text: string): { status: number | null; out: string } {
  const r = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

test.serial(
  'promtool accepts /metrics on a live daemon with a monitor and a scrape running, and the values move',
  async (t) => {
    const before = await scrapeMetrics();
    t.is(promtool(before).status, 0, promtool(before).out);
    t.is(value(before, 'vigil_ready'), 1);
    t.regex(before, /^vigil_build_info\{version="[^"]+",commit="[^"]+",node_version="v[^"]+"\} 1$/m);
    t.true((value(before, 'process_resident_memory_bytes') ?? 0) > 0);
    t.not(value(before, 'nodejs_eventloop_lag_seconds'), undefined);
    t.is(value(before, 'vigil_search_rows{collection="gallery"}'), 3);

    // Face API work: a search moves the HTTP, inference and search series.
    const searchesBefore = value(before, 'vigil_search_duration_seconds_count{op="search"}') ?? 0;
    const s = await post(d, '/v1/collections/gallery/search', form({ image: face('identities/obama/1.jpg') }));
    t.is(s.res.status, 200, JSON.stringify(s.json));

    // A monitor and a scrape.
    const m = await call(d, 'POST', '/v1/monitors', {
      id: 'door',
      name: 'Door',
      source: { url: rtsp.url() },
      collection_id: 'gallery',
      inference_fps: 5,
      event_policy: { confirm_frames: 1 },
    });
    t.is(m.status, 201, JSON.stringify(m.json));
    await d.runtime.workspaces.create({ id: 'acme', name: 'acme', monthlyItemQuota: null });
    const token = (await d.runtime.workspaces.createKey('acme')).token;
    const run = await call(
      d,
      'POST',
      '/workspaces/acme/scrapers/forum/scrape',
      { urls: ['https://www.reddit.com/r/typescript/new', 'https://www.reddit.com/r/private_sub'], max_items: 5 },
      { Authorization: `Bearer ${token}` },
    );
    t.is(run.status, 200, JSON.stringify(run.json));

    const after = await waitFor(
      'monitor metrics',
      async () => {
        const text = await scrapeMetrics();
        return (value(text, 'vigil_monitor_frames_inferred_total{monitor="door"}') ?? 0) > 0 &&
          (value(text, 'vigil_monitor_events_total{monitor="door",type="person_enter"}') ?? 0) > 0
          ? text
          : undefined;
      },
      45_000,
      500,
    );
    const check = promtool(after);
    t.is(check.status, 0, check.out);

    t.is(value(after, 'vigil_monitor_connected{monitor="door"}'), 1);
    t.is(value(after, 'vigil_monitor_enabled{monitor="door"}'), 1);
    t.true((value(after, 'vigil_monitor_frames_decoded_total{monitor="door"}') ?? 0) > 0);
    t.not(value(after, 'vigil_monitor_preview_viewers{monitor="door"}'), undefined);
    t.is(value(after, 'vigil_search_duration_seconds_count{op="search"}'), searchesBefore + 1);
    t.true(
      (value(after, 'vigil_search_duration_seconds_count{op="identify"}') ?? 0) > 0,
      'the monitor identifies faces',
    );
    t.true(
      (value(
        after,
        'vigil_http_requests_total{route="/v1/collections/:collection_id/search",method="POST",status="200"}',
      ) ?? 0) >= 1,
    );
    t.true(
      (value(
        after,
        'vigil_http_request_duration_seconds_count{route="/v1/collections/:collection_id/search",method="POST"}',
      ) ?? 0) >= 1,
    );
    t.true(
      (value(after, 'vigil_inference_jobs_total{outcome="ok"}') ?? 0) >
        (value(before, 'vigil_inference_jobs_total{outcome="ok"}') ?? 0),
    );
    t.true((value(after, 'vigil_inference_stage_duration_seconds_count{stage="detect"}') ?? 0) > 0);
    t.true((value(after, 'vigil_inference_queue_wait_seconds_count') ?? 0) > 0);
    t.is(value(after, 'vigil_scrape_runs_total{kind="forum",outcome="partial"}'), 1);
    t.is(value(after, 'vigil_scrape_items_billed_total{kind="forum"}'), run.json.billing.billed_units);
    t.is(value(after, 'vigil_scrape_upstream_errors_total{kind="forum",code="community_private"}'), 1);
    t.is(value(after, 'vigil_scrape_queue_depth{state="queued"}'), 0);
    // Bounded labels: no raw paths, no person ids.
    t.notRegex(after, /obama|biden/);
    t.notRegex(after, /route="\/v1\/collections\/gallery/);
    await call(d, 'DELETE', '/v1/monitors/door');
  },
);

test.serial(
  'features that are off export no families: no MQTT series without MQTT, no fleet series on one box',
  async (t) => {
    const text = await scrapeMetrics();
    t.notRegex(text, /vigil_mqtt_/);
    t.notRegex(text, /vigil_fleet_/);
    t.regex(text, /^vigil_webhook_endpoints\{state="enabled"\} 0$/m, 'webhook families are always there');
  },
);

test('webhook endpoints: messages waiting, failure streak and disabled endpoints; MQTT on exports its connection', async (t) => {
  const dead = await freePort(); // nothing listens there
  const box = await startTestDaemon({
    toml: [
      '[mqtt]',
      'enabled = true',
      `url = "mqtt://127.0.0.1:${await freePort()}"`,
      '[webhooks]',
      'first_retry_seconds = 0.1',
      'max_retry_delay_seconds = 0.2',
      'disable_after_failures = 3',
    ].join('\n'),
  });
  try {
    const hook = await call(box, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${dead}/hook` });
    t.is(hook.status, 201, JSON.stringify(hook.json));
    const id = hook.json.webhook.id as string;
    const series = (name: string) => `${name}{endpoint="${id}",scope="admin"}`;
    const fresh = await scrapeMetrics(box.auth, box);
    t.is(value(fresh, series('vigil_webhook_endpoint_enabled')), 1);
    t.is(value(fresh, series('vigil_webhook_pending_messages')), 0);
    t.is(value(fresh, series('vigil_webhook_failure_streak')), 0);
    t.is(value(fresh, 'vigil_mqtt_connected'), 0, 'MQTT on and its broker away');
    t.not(value(fresh, 'vigil_mqtt_queued_messages'), undefined);

    t.is((await call(box, 'POST', `/v1/webhooks/${id}/test`)).status, 202);
    await call(box, 'POST', `/v1/webhooks/${id}/test`);
    const text = await waitFor(
      'the endpoint disabled',
      async () => {
        const m = await scrapeMetrics(box.auth, box);
        return value(m, series('vigil_webhook_endpoint_enabled')) === 0 ? m : undefined;
      },
      20_000,
      200,
    );
    t.is(value(text, series('vigil_webhook_failure_streak')), 3);
    t.is(value(text, series('vigil_webhook_pending_messages')), 2, 'its messages wait for it');
    t.is(value(text, 'vigil_webhook_endpoints{state="disabled"}'), 1);
    t.is(value(text, 'vigil_webhook_endpoints{state="enabled"}'), 0);
    const check = promtool(text);
    t.is(check.status, 0, check.out);
  } finally {
    await box.close();
  }
});

test.serial('auth: the admin key by default; no key is 401', async (t) => {
  const res = await fetch(`${d.url}/metrics`);
  t.is(res.status, 401);
  t.is(((await res.json()) as any).error.code, 'unauthorized');
  const wrong = await fetch(`${d.url}/metrics`, { headers: { Authorization: 'Bearer not-the-key-0123456789' } });
  t.is(wrong.status, 401);
});

test('auth = "token": a separate metrics token opens /metrics and nothing else; "loopback" needs no credential from this host', async (t) => {
  const tokenBox = await startTestDaemon({
    toml: `[metrics]\nauth = "token"\ntoken = "${METRICS_TOKEN}"`,
    waitReady: false,
  });
  try {
    const ok = await fetch(`${tokenBox.url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
    t.is(ok.status, 200);
    t.regex(await ok.text(), /vigil_build_info/);
    t.is(
      (await fetch(`${tokenBox.url}/metrics`, { headers: tokenBox.auth })).status,
      401,
      'the admin key is not the metrics token',
    );
    t.is(
      (await fetch(`${tokenBox.url}/v1/collections`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } })).status,
      401,
      'the metrics token opens nothing else',
    );
  } finally {
    await tokenBox.close();
  }
  const loop = await startTestDaemon({ toml: '[metrics]\nauth = "loopback"', waitReady: false });
  try {
    const res = await fetch(`${loop.url}/metrics`);
    t.is(res.status, 200);
    t.is(promtool(await res.text()).status, 0);
  } finally {
    await loop.close();
  }
});

test.serial(
  '/v1/system lists as available only the providers that can run here, with the reason for each other',
  async (t) => {
    const s = await call(d, 'GET', '/v1/system');
    t.is(s.status, 200);
    const report = s.json.runtime.execution_provider_report as { name: string; available: boolean; reason: string }[];
    t.deepEqual(
      s.json.runtime.available_execution_providers,
      report.filter((p) => p.available).map((p) => p.name),
    );
    t.true(report.some((p) => p.name === 'cpu' && p.available));
    for (const p of report.filter((x) => !x.available)) t.regex(p.reason, /^(missing|Vigil does not use)/, p.name);
  },
);
