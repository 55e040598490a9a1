import ort from 'onnxruntime-node';
import { hostProviderReport } from './providers.js';

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
  return hostProviderReport().filter((p) => p.available).map((p) => p.name);
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
 * and CPU: on the 2-core x86 dev box 'all' (NCHWc layouts) halves SCRFD's time but makes the 512-d
 * MobileFaceNet 2.5x slower than 'extended'. Costs a few hundred ms once at startup.
 */
export async function tunedSession(path: string, s: SessionSettings, probeShape: number[]): Promise<{ session: ort.InferenceSession; level: OptimizationLevel; runMs: number }> {
  const levels: OptimizationLevel[] = s.graphOptimization && s.graphOptimization !== 'auto' ? [s.graphOptimization] : ['extended', 'all'];
  const probe = new Float32Array(probeShape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < probe.length; i++) probe[i] = ((i * 2654435761) % 1000) / 1000 - 0.5;
  let best: { session: ort.InferenceSession; level: OptimizationLevel; runMs: number } | null = null;
  for (const level of levels) {
    const session = await createSession(path, { ...s, graphOptimization: level });
    const feed = { [session.inputNames[0]!]: new ort.Tensor('float32', probe, probeShape) };
    await session.run(feed);
    const times: number[] = [];
    for (let i = 0; i < (levels.length > 1 ? 5 : 1); i++) {
      const t = performance.now();
      await session.run(feed);
      times.push(performance.now() - t);
    }
    const runMs = times.sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
    if (!best || runMs < best.runMs) {
        await best?.session.release();
      best = { session, level, runMs };
    } else await session.release();
  }
  return best!;
}

export const onnxRuntimeVersion = (): string => ort.env.versions?.node ?? 'unknown';
export { ort };
