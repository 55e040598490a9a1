/**
 * Liveness benchmark: the latency the liveness check adds per face (input gate + two box-context crops +
 * MiniFASNetV2 + MiniFASNetV1SE), measured in-process with the daemon's session settings, and
 * end-to-end /v1/embeddings latency with the addon off and on.
 * Usage: npx tsx bench/liveness.ts [--iterations 200] [--requests 60]  -> prints JSON, writes bench/results/liveness.json
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { installLiveness, requireLiveness } from '../src/addons/livenessFiles.js';
import { startDaemon } from '../src/cli/serve.js';
import { loadConfig } from '../src/config/load.js';
import { resolveThreading } from '../src/inference/engine.js';
import { decodeImage } from '../src/inference/image.js';
import { FacePipeline } from '../src/inference/pipeline.js';
import { loadLivenessModels } from '../src/inference/livenessModel.js';
import { tunedSession } from '../src/inference/sessions.js';
import { loadCatalog } from '../src/models/catalog.js';
import { loadInstalledPack } from '../src/models/installed.js';
import { installPack } from '../src/models/installer.js';
import { fileTempDir } from '../test/helpers/tempDir.js';

const { values } = parseArgs({
  options: { iterations: { type: 'string', default: '200' }, requests: { type: 'string', default: '60' } },
});
const N = Number(values.iterations),
  R = Number(values.requests);
const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const SHARED = process.env.VIGIL_SHARED_DIR ?? resolve(REPO, '../shared');
const MIRROR = join(SHARED, 'models');
const FACES = [
  'liveness/live_T1.jpg',
  'liveness/spoof_print_F1.jpg',
  'identities/obama/1.jpg',
  'groups/t1_friends.jpg',
];
const KEY = 'bench-key-0123456789abcdef';
const quiet = new Writable({ write: (_c, _e, cb) => cb() });
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const r3 = (v: number) => Math.round(v * 1000) / 1000;
const summary = (xs: number[]) => ({
  p50_ms: r3(pct(xs, 50)),
  p95_ms: r3(pct(xs, 95)),
  mean_ms: r3(xs.reduce((a, b) => a + b, 0) / xs.length),
  n: xs.length,
});

const modelsDir = fileTempDir('vigil-bench-live-');
await installPack({
  packId: 'edge_s',
  modelsDir,
  mirror: MIRROR,
  acceptLicense: true,
  io: { stdout: quiet, stderr: quiet } as never,
});
await installLiveness({ modelsDir, mirror: MIRROR });
const catalog = await loadCatalog();
const liveness = await requireLiveness(catalog, modelsDir);
const pack = await loadInstalledPack(modelsDir, 'edge_s');

// In-process: the same per-worker thread count the daemon uses on this host.
const { intraOpThreads } = resolveThreading('auto', 'auto');
const settings = { providers: ['cpu' as const], deviceId: 0, intraOpThreads };
const pipeline = new FacePipeline({
  detector: {
    spec: pack.detector,
    session: (await tunedSession(pack.detector.path, settings, [1, 3, 512, 512])).session,
  },
  recognizer: {
    spec: pack.recognizer,
    session: (await tunedSession(pack.recognizer.path, settings, [1, 3, 112, 112])).session,
  },
});
// The daemon's own loader: with 2+ cores the second model runs in a peer thread, overlapping the first.
const livenessModels = await loadLivenessModels(liveness, settings, availableParallelism());
pipeline.useLiveness(livenessModels);
const profile = {
  input_sizes: [
    [96, 96],
    [512, 512],
  ] as [number, number][],
  threshold: 0.5,
  nms_threshold: 0.4,
  single_face_selection: 'largest' as const,
};
const perFace: number[] = [];
let faces = 0;
// CPU time as well as wall time: on a shared 2-core box wall time mostly measures the neighbours.
const cpu0 = process.cpuUsage();
for (const f of FACES) {
  const img = await decodeImage(readFileSync(join(SHARED, 'fixtures/faces', f)), { maxBytes: 1e8, maxPixels: 1e8 });
  const { faces: found } = await pipeline.detect(img.data, img.width, img.height, profile);
  for (const face of found) {
    faces++;
    for (let i = 0; i < 5; i++) await pipeline.liveness(img.data, img.width, img.height, face, 0.8);
    for (let i = 0; i < Math.ceil(N / FACES.length); i++) {
      const t = performance.now();
      await pipeline.liveness(img.data, img.width, img.height, face, 0.8);
      perFace.push(performance.now() - t);
    }
  }
}

const cpu = process.cpuUsage(cpu0);
await Promise.all(livenessModels.map((m) => m.close()));
const cpuPerFaceMs = (cpu.user + cpu.system) / 1000 / (perFace.length + faces * 5);
const loadAverage = (await import('node:os')).loadavg()[0];

// End to end: /v1/embeddings on one portrait, addon off vs on (normal mode), same machine, one after the other.
async function endToEnd(addons: string) {
  const dir = fileTempDir('vigil-bench-live-d-');
  const file = join(dir, 'server.toml');
  writeFileSync(
    file,
    `[server]\nhost = "127.0.0.1"\nport = 0\ndata_dir = ${JSON.stringify(join(dir, 'data'))}\nmodels_dir = ${JSON.stringify(modelsDir)}\nlog_level = "silent"\n[inference]\naddons = ${addons}\n`,
  );
  const d = await startDaemon(loadConfig(file, { VIGIL_API_KEY: KEY }));
  await d.ready;
  const image = readFileSync(join(SHARED, 'fixtures/faces/liveness/live_T1.jpg'));
  const once = async () => {
    const fd = new FormData();
    fd.append('image', new Blob([image]), 'x.jpg');
    const res = await fetch(`${d.url}/v1/embeddings`, {
      method: 'POST',
      body: fd,
      headers: { Authorization: `Bearer ${KEY}` },
    });
    if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  };
  for (let i = 0; i < 5; i++) await once();
  const xs: number[] = [];
  for (let i = 0; i < R; i++) {
    const t = performance.now();
    await once();
    xs.push(performance.now() - t);
  }
  await d.close();
  return summary(xs);
}
const off = await endToEnd('[]');
const on = await endToEnd('["liveness"]');
const result = {
  machine: { cpus: (await import('node:os')).cpus().length, intra_op_threads: intraOpThreads },
  load_average_1m: r3(loadAverage!),
  liveness_per_face: { ...summary(perFace), cpu_ms_per_face: r3(cpuPerFaceMs), faces, target_ms: 5 },
  embeddings_http: { liveness_off: off, liveness_on: on, added_p50_ms: r3(on.p50_ms - off.p50_ms) },
};
console.log(JSON.stringify(result, null, 2));
mkdirSync(join(REPO, 'bench/results'), { recursive: true });
writeFileSync(join(REPO, 'bench/results/liveness.json'), `${JSON.stringify(result, null, 2)}\n`);
