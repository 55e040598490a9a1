/**
 * The checks the package tests run against an installed daemon (packaging/install-test.sh for amd64 in CI,
 * packaging/arm64-smoke.sh by hand): health and version, detect (6 faces on the group photo), embeddings,
 * search with the fp32, fp16 and int8 profiles and an HNSW collection, and one RTSP monitor event. Every
 * similarity is written to --out; with --compare, each must equal the other build's within --tolerance.
 *
 *   tsx packaging/smoke.ts --base URL --key KEY --fixtures DIR --camera RTSP_URL --out FILE
 *                          [--compare FILE] [--tolerance 1e-4] [--expect-version V] [--expect-commit C]
 *   tsx packaging/smoke.ts camera --fixtures DIR   starts the test camera, prints its URL, runs until killed
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { renderScenario, startRtspServer } from '../test/helpers/rtsp.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    base: { type: 'string', default: 'http://127.0.0.1:8080' },
    key: { type: 'string' },
    fixtures: { type: 'string' },
    camera: { type: 'string' },
    out: { type: 'string' },
    compare: { type: 'string' },
    tolerance: { type: 'string', default: '1e-4' },
    'expect-version': { type: 'string' },
    'expect-commit': { type: 'string' },
    'event-timeout': { type: 'string', default: '180' },
    // Seconds one request may take (an emulated arm64 daemon needs minutes for an enrolment).
    'call-timeout': { type: 'string', default: '120' },
  },
});
const fixtures = values.fixtures ?? '../shared/fixtures/faces';
const photo = (rel: string) => readFileSync(join(fixtures, rel));

if (positionals[0] === 'camera') {
  // Grey, then Obama for long enough to be identified, looping: every loop is an enter and an exit.
  const frames = await renderScenario(
    [
      { image: null, seconds: 2 },
      { image: photo('identities/obama/1.jpg'), seconds: 6 },
      { image: null, seconds: 4 },
    ],
    { width: 640, height: 480, fps: 10 },
  );
  const server = await startRtspServer({ frames, fps: 10 });
  process.stdout.write(`${server.url()}\n`);
  const stop = () => void server.stop().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  await new Promise(() => undefined);
}

const base = values.base!;
const auth = { authorization: `Bearer ${values.key ?? ''}` };
const t0 = Date.now();
const results: {
  similarities: Record<string, number>;
  facts: Record<string, unknown>;
  seconds: Record<string, number>;
} = { similarities: {}, facts: {}, seconds: {} };

// What was measured so far goes to --out after each stage: a run stopped part-way (an emulated one that ran out
// of time) still leaves the similarities it got.
function save(): void {
  if (values.out) writeFileSync(values.out, `${JSON.stringify(results, null, 2)}\n`);
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`smoke: ${what}`);
  process.stdout.write(`ok  ${what}\n`);
}

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const init: RequestInit = { method, headers: { ...auth } };
  if (body instanceof FormData) init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const res = await fetch(`${base}${path}`, {
    ...init,
    signal: AbortSignal.timeout(Number(values['call-timeout']) * 1000),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = { text };
  }
  return { status: res.status, json };
}

function form(fields: Record<string, string | Buffer | Buffer[]>): FormData {
  const f = new FormData();
  for (const [k, v] of Object.entries(fields))
    for (const item of Array.isArray(v) ? v : [v])
      if (typeof item === 'string') f.append(k, item);
      else f.append(k, new Blob([new Uint8Array(item)], { type: 'image/jpeg' }), `${k}.jpg`);
  return f;
}

async function until<T>(what: string, seconds: number, probe: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + seconds * 1000;
  for (;;) {
    const got = await probe().catch(() => undefined);
    if (got !== undefined) return got;
    if (Date.now() > end) throw new Error(`smoke: ${what} (waited ${seconds} s)`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

if (positionals[0] === 'without-walker') {
  // The daemon started without native/hnsw-walk's prebuild: HNSW collections answer through usearch.
  await until('/v1/health answers ready', 180, async () =>
    (await call('GET', '/v1/health')).json?.status === 'ready' ? true : undefined,
  );
  const r = await call('POST', '/v1/collections/smoke-hnsw/search', form({ image: photo('identities/obama/3.jpg') }));
  check(r.json.matches?.[0]?.person?.id === 'obama', 'without the walker, smoke-hnsw finds obama first');
  const c = (await call('GET', '/v1/collections/smoke-hnsw')).json.collection;
  check(c.search_index?.status?.serving === 'hnsw', 'and its graph serves (through usearch)');
  process.exit(0);
}

const cosine = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i]!, 0);
const round = (x: number) => Math.round(x * 1e6) / 1e6;

// Health and what runs.
const health = await until('/v1/health answers ready', 180, async () => {
  const h = await call('GET', '/v1/health');
  return h.json?.status === 'ready' ? h.json : undefined;
});
results.seconds.ready = (Date.now() - t0) / 1000;
check(true, `/v1/health ready (vigil ${health.vigil_version})`);
const system = (await call('GET', '/v1/system')).json;
results.facts.system = {
  vigil_version: system.vigil_version,
  vigil_commit: system.vigil_commit,
  architecture: system.architecture,
  node_version: system.runtime?.node_version,
  memory_allocator: system.runtime?.memory_allocator,
  execution_provider: system.execution_provider,
};
if (values['expect-version'])
  check(system.vigil_version === values['expect-version'], `vigil_version ${system.vigil_version}`);
if (values['expect-commit'])
  check(system.vigil_commit === values['expect-commit'], `vigil_commit ${system.vigil_commit}`);
check(
  system.runtime?.memory_allocator === 'jemalloc',
  `the unit's allocator runs (${system.runtime?.memory_allocator})`,
);

// Detect: the group photo has 6 faces.
const detect = await call('POST', '/v1/detect', form({ image: photo('groups/t1_friends.jpg') }));
check(
  detect.status === 200 && detect.json.faces.length === 6,
  `detect: ${detect.json.faces?.length} faces on groups/t1_friends.jpg`,
);
results.facts.detection_scores = detect.json.faces.map((f: { detection_score: number }) => round(f.detection_score));

// Embeddings: one vector per photo; cosine similarities between them.
const people = {
  obama1: 'identities/obama/1.jpg',
  obama3: 'identities/obama/3.jpg',
  biden1: 'identities/biden/1.jpg',
  kit1: 'identities/kit_harington/1.jpg',
};
const vectors: Record<string, number[]> = {};
for (const [name, rel] of Object.entries(people)) {
  const r = await call('POST', '/v1/embeddings', form({ image: photo(rel) }));
  check(r.status === 200 && r.json.faces?.[0]?.embedding?.length > 0, `embedding of ${rel}`);
  vectors[name] = r.json.faces[0].embedding;
}
for (const [a, b] of [
  ['obama1', 'obama3'],
  ['obama1', 'biden1'],
  ['obama3', 'kit1'],
] as const)
  results.similarities[`embedding ${a}~${b}`] = round(cosine(vectors[a]!, vectors[b]!));
check(
  results.similarities['embedding obama1~obama3']! > results.similarities['embedding obama1~biden1']!,
  'the same person is closer than another',
);
save();

// Search: one collection per profile and one HNSW collection, the same people enrolled in each.
const collections = [
  { id: 'smoke-fp32', search: { profile: 'fp32_v1' } },
  { id: 'smoke-fp16', search: { profile: 'fp16_v1' } },
  { id: 'smoke-int8', search: { profile: 'int8_x1000_v1' } },
  { id: 'smoke-hnsw', search: { profile: 'fp32_v1', index: 'hnsw' } },
];
const enrol: Record<string, string[]> = {
  obama: ['identities/obama/1.jpg', 'identities/obama/2.jpg'],
  biden: ['identities/biden/1.jpg'],
  kit_harington: ['identities/kit_harington/1.jpg'],
  rose_leslie: ['identities/rose_leslie/1.jpg'],
};
for (const c of collections) {
  const created = await call('POST', '/v1/collections', { name: c.id, ...c });
  check(created.status === 201, `collection ${c.id} (${JSON.stringify(c.search)})`);
  for (const [person, photos] of Object.entries(enrol)) {
    const r = await call(
      'POST',
      `/v1/collections/${c.id}/persons`,
      form({ id: person, name: person, images: photos.map(photo) }),
    );
    check(r.status === 201, `${c.id}: ${person} enrolled`);
  }
}
// Collections load lazily (on first use), and a graph is built once its collection is loaded: one search
// loads smoke-hnsw (answered exactly meanwhile).
const first = await call('POST', '/v1/collections/smoke-hnsw/search', form({ image: photo('identities/obama/3.jpg') }));
check(first.json.matches?.[0]?.person?.id === 'obama', 'smoke-hnsw answers before its graph is built');
const hnswServing = await until('the HNSW graph serves', 180, async () => {
  const c = (await call('GET', '/v1/collections/smoke-hnsw')).json.collection;
  const status = c.search_index?.status;
  // Served by a graph that holds every enrolled face (5), not an early one plus an exact delta.
  return status?.serving === 'hnsw' && status.graph?.rows === 5 ? status : undefined;
});
results.facts.hnsw = hnswServing;
check(true, 'smoke-hnsw is served by its HNSW graph');
for (const c of collections)
  for (const [query, person] of [
    ['identities/obama/3.jpg', 'obama'],
    ['identities/biden/2.jpg', 'biden'],
    ['identities/kit_harington/2.jpg', 'kit_harington'],
  ] as const) {
    const r = await call('POST', `/v1/collections/${c.id}/search`, form({ image: photo(query), limit: '3' }));
    check(r.status === 200 && r.json.matches?.[0]?.person?.id === person, `${c.id}: ${query} finds ${person} first`);
    for (const m of r.json.matches as { person: { id: string }; similarity: number }[])
      results.similarities[`search ${c.id} ${query} ${m.person.id}`] = round(m.similarity);
  }

// One RTSP monitor event: the test camera shows Obama.
if (values.camera) {
  const created = await call('POST', '/v1/monitors', {
    id: 'smoke-door',
    name: 'Smoke door',
    collection_id: 'smoke-fp32',
    source: { url: values.camera },
    inference_fps: 5,
  });
  check(created.status === 201, `monitor smoke-door on ${values.camera}`);
  const since = Date.now();
  const event = await until('a person_enter event for obama', Number(values['event-timeout']), async () => {
    const r = await call('GET', '/v1/events?monitor_id=smoke-door');
    const list = (r.json.events ?? []) as { type: string; person: { id: string } | null }[];
    return list.find((e) => e.type === 'person_enter' && e.person?.id === 'obama');
  });
  results.seconds.first_event = (Date.now() - since) / 1000;
  check(true, `monitor event person_enter obama after ${results.seconds.first_event} s`);
  results.facts.event = event;
  await call('DELETE', '/v1/monitors/smoke-door');
}
results.seconds.total = (Date.now() - t0) / 1000;
save();

if (values.compare) {
  const other = JSON.parse(readFileSync(values.compare, 'utf8')) as typeof results;
  const tol = Number(values.tolerance);
  const keys = Object.keys(other.similarities);
  const diffs = keys
    .map((k) => ({ k, a: results.similarities[k], b: other.similarities[k]! }))
    .filter(({ a, b }) => a === undefined || Math.abs(a - b) > tol);
  const worst = Math.max(...keys.map((k) => Math.abs((results.similarities[k] ?? Infinity) - other.similarities[k]!)));
  for (const d of diffs) process.stdout.write(`DIFF ${d.k}: ${d.a} vs ${d.b}\n`);
  check(
    diffs.length === 0,
    `${keys.length} similarities equal ${values.compare}'s within ${tol} (largest difference ${worst})`,
  );
}
process.stdout.write(`smoke: all checks passed in ${results.seconds.total} s\n`);
