import ort from 'onnxruntime-node';
import { hostProviderReport } from './providers.js';

// onnxruntime-node 1.30's Linux build carries Microsoft's 1DS telemetry: once the first session sets up ORT's
// environment it starts an uploader and leaves $TMPDIR/.ses and an empty $TMPDIR/mat-debug-<pid>.log behind
// in every process (one per daemon start, CLI run and test process). ORT_DISABLE_TELEMETRY=1 turns all of it
// off; ORT reads it then, so setting it here (main thread, before any session or inference worker) is in time.
// An operator who sets the variable keeps their value.
process.env.ORT_DISABLE_TELEMETRY ??= '1';

export type ProviderName = 'cpu' | 'cuda' | 'tensorrt';

export type OptimizationLevel = 'basic' | 'extended' | 'all';

export interface SessionSettings {
  providers: ProviderName[];
  deviceId: number;
  intraOpThreads: number;
  /** 'auto' measures 'extended' and 'all' on this machine and keeps the faster (see tunedSession). */
  graphOptimization?: OptimizationLevel | 'auto';
}

/**
 * Providers that can actually run here: compiled into the binding AND with their libraries and device
 * present (providers.ts says why the others cannot).
 */
export function availableProviders(): string[] {
  return hostProviderReport()
    .filter((p) => p.available)
    .map((p) => p.name);
}

function providerOption(name: ProviderName, deviceId: number): ort.InferenceSession.ExecutionProviderConfig {
  return name === 'cpu' ? 'cpu' : { name, deviceId };
}

/**
 * One ORT session with the settings that matter on a small shared box: intra-op threads = the cores we
 * were given, sequential execution, and thread spinning off (spinning burnt a core per idle session).
 */
export async function createSession(path: string, s: SessionSettings): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(path, {
    executionProviders: s.providers.map((p) => providerOption(p, s.deviceId)),
    intraOpNumThreads: s.intraOpThreads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: s.graphOptimization && s.graphOptimization !== 'auto' ? s.graphOptimization : 'all',
    logSeverityLevel: 3,
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
  });
}

/**
 * A session at the graph optimisation level that is fastest here. Measured, because it differs per model
 * and CPU: on the 2-core x86 dev box 'all' (NCHWc layouts) halves SCRFD's time, and for the 512-d
 * MobileFaceNet either level can win by a wide margin depending on the ORT build. Costs a few hundred ms
 * once at startup.
 *
 * The levels run interleaved (A, B, A, B, ...) and each keeps its fastest run: a box that is busy at
 * startup (other services, a second daemon starting) slows some runs, and the minimum of interleaved
 * runs is what survives that; a median of back-to-back runs picked the slower level on a loaded box,
 * and the choice then stays for the life of the process (bench/inference.ts records it).
 */
export async function tunedSession(
  path: string,
  s: SessionSettings,
  probeShape: number[],
): Promise<{ session: ort.InferenceSession; level: OptimizationLevel; runMs: number }> {
  const levels: OptimizationLevel[] =
    s.graphOptimization && s.graphOptimization !== 'auto' ? [s.graphOptimization] : ['extended', 'all'];
  const probe = new Float32Array(probeShape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < probe.length; i++) probe[i] = ((i * 2654435761) % 1000) / 1000 - 0.5;
  const candidates: { session: ort.InferenceSession; level: OptimizationLevel; runMs: number }[] = [];
  for (const level of levels) {
    const session = await createSession(path, { ...s, graphOptimization: level });
    candidates.push({ session, level, runMs: Infinity });
  }
  const feeds = candidates.map((c) => ({ [c.session.inputNames[0]!]: new ort.Tensor('float32', probe, probeShape) }));
  for (let i = 0; i < candidates.length; i++) await candidates[i]!.session.run(feeds[i]!);
  const rounds = candidates.length > 1 ? 7 : 1;
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < candidates.length; i++) {
      const t = performance.now();
      await candidates[i]!.session.run(feeds[i]!);
      candidates[i]!.runMs = Math.min(candidates[i]!.runMs, performance.now() - t);
    }
  }
  const best = candidates.reduce((a, b) => (b.runMs < a.runMs ? b : a));
  await Promise.all(candidates.filter((c) => c !== best).map((c) => c.session.release()));
  return best;
}

export const onnxRuntimeVersion = (): string => ort.env.versions?.node ?? 'unknown';
export { ort };
