import ort from 'onnxruntime-node';

export type ProviderName = 'cpu' | 'cuda' | 'tensorrt';

export interface SessionSettings {
  providers: ProviderName[];
  deviceId: number;
  intraOpThreads: number;
}

/** Providers compiled into this onnxruntime-node binding (CUDA/TensorRT only where their libraries are installed). */
export function availableProviders(): string[] {
  return ort.listSupportedBackends().map((b) => b.name);
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
    graphOptimizationLevel: 'all',
    logSeverityLevel: 3,
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
  });
}

export const onnxRuntimeVersion = (): string => ort.env.versions?.node ?? 'unknown';
export { ort };
