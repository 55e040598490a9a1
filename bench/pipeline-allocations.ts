/**
 * Where the face pipeline allocates on the JS heap: V8's sampling heap profiler (objects later collected
 * included) over 40 analyses of a 6-face group photo, single-threaded sessions as in an inference worker.
 * Prints KiB per photo by allocating function, largest first. Garbage here is what the workers' scavenges
 * pay for on every request and monitor frame.
 * Usage: npx tsx bench/pipeline-allocations.ts
 */
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { decodeImage } from '../src/inference/image.js';
import { FacePipeline } from '../src/inference/pipeline.js';
import { tunedSession } from '../src/inference/sessions.js';
import { loadInstalledPack } from '../src/models/installed.js';
import { modelsDirWith } from '../test/helpers/daemon.js';
import { FACES } from '../test/helpers/shared.js';
const pack = await loadInstalledPack(await modelsDirWith('edge_s'), 'edge_s');
const settings = {
  providers: ['cpu' as const],
  deviceId: 0,
  intraOpThreads: 1,
  graphOptimization: 'extended' as const,
};
const det = (await tunedSession(pack.detector.path, settings, [1, 3, 512, 512])).session;
const rec = (await tunedSession(pack.recognizer.path, settings, [1, 3, 112, 112])).session;
const p = new FacePipeline({
  detector: { spec: pack.detector, session: det },
  recognizer: { spec: pack.recognizer, session: rec },
});
const img = await decodeImage(readFileSync(`${FACES}groups/t1_friends.jpg`), { maxBytes: 1e8, maxPixels: 1e8 });
const profile = {
  input_sizes: [
    [96, 96],
    [512, 512],
  ] as [number, number][],
  threshold: 0.5,
  nms_threshold: 0.4,
  single_face_selection: 'largest' as const,
};
const one = () =>
  p.analyze({
    image: { raw: img.data, width: img.width, height: img.height },
    limits: { maxBytes: 1e8, maxPixels: 1e8 },
    profile,
    maxFaces: 100,
    embed: 'selected',
  });
for (let i = 0; i < 5; i++) await one();
const s = new Session();
s.connect();
await s.post('HeapProfiler.startSampling', {
  samplingInterval: 4096,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
for (let i = 0; i < 40; i++) await one();
interface SampleNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SampleNode[];
}
const { profile: prof } = (await s.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: SampleNode } };
const by = new Map<string, number>();
const walk = (n: SampleNode) => {
  const f = n.callFrame;
  const k = `${f.functionName || '(anon)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
  by.set(k, (by.get(k) ?? 0) + n.selfSize);
  for (const c of n.children) walk(c);
};
walk(prof.head);
console.log(
  [...by]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 20)
    .map(([k, v]) => `${(v / 40 / 1024).toFixed(1)} KiB/photo ${k}`)
    .join('\n'),
);
