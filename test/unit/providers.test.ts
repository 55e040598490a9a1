import test from 'ava';
import { probeHost, providerReport, type ProviderProbe } from '../../src/inference/providers.js';
import { availableProviders } from '../../src/inference/sessions.js';
import { InferenceEngine } from '../../src/inference/engine.js';

const BACKENDS = [
  { name: 'cpu', bundled: true },
  { name: 'webgpu', bundled: true },
  { name: 'cuda', bundled: false },
  { name: 'tensorrt', bundled: false },
];
const GPU_LIBS = new Set([
  'libcudart.so.12',
  'libcublasLt.so.12',
  'libcublas.so.12',
  'libcudnn.so.9',
  'libnvinfer.so.10',
]);
const GPU_BINDING = [
  'onnxruntime_binding.node',
  'libonnxruntime.so.1',
  'libonnxruntime_providers_shared.so',
  'libonnxruntime_providers_cuda.so',
  'libonnxruntime_providers_tensorrt.so',
];
const byName = (probe: ProviderProbe) => Object.fromEntries(providerReport(probe).map((p) => [p.name, p]));

test('a CPU box: only cpu is available; cuda and tensorrt say what is missing; webgpu is not a Vigil provider', (t) => {
  const r = byName({
    backends: BACKENDS,
    bindingFiles: ['onnxruntime_binding.node', 'libonnxruntime.so.1'],
    sharedLibraries: new Set(['libc.so.6']),
    gpuDevice: false,
    unresolved: {},
  });
  t.true(r.cpu!.available);
  t.false(r.cuda!.available);
  t.regex(r.cuda!.reason, /libonnxruntime_providers_cuda\.so.*\/dev\/nvidia0/);
  t.false(r.tensorrt!.available);
  t.regex(r.tensorrt!.reason, /libonnxruntime_providers_tensorrt\.so/);
  t.false(r.webgpu!.available);
  t.regex(r.webgpu!.reason, /does not use/);
});

test('a GPU box with everything installed: cuda and tensorrt are available; what ldd cannot resolve is named', (t) => {
  const resolved = { 'libonnxruntime_providers_cuda.so': [], 'libonnxruntime_providers_tensorrt.so': [] };
  const full = byName({
    backends: BACKENDS,
    bindingFiles: GPU_BINDING,
    sharedLibraries: GPU_LIBS,
    gpuDevice: true,
    unresolved: resolved,
  });
  t.true(full.cuda!.available);
  t.true(full.tensorrt!.available);
  // A CUDA 13 host with a provider built for CUDA 12: ldd says which libraries are missing.
  const wrongCuda = byName({
    backends: BACKENDS,
    bindingFiles: GPU_BINDING,
    sharedLibraries: new Set(['libcudart.so.13', 'libcudnn.so.9']),
    gpuDevice: true,
    unresolved: {
      'libonnxruntime_providers_cuda.so': ['libcublasLt.so.12', 'libcudart.so.12'],
      'libonnxruntime_providers_tensorrt.so': ['libnvinfer.so.10'],
    },
  });
  t.false(wrongCuda.cuda!.available);
  t.is(wrongCuda.cuda!.reason, 'missing libraries the provider needs (libcublasLt.so.12, libcudart.so.12)');
  t.regex(wrongCuda.tensorrt!.reason, /libnvinfer\.so\.10/);
  // Without ldd, the library families are looked for by name.
  const noLdd = byName({
    backends: BACKENDS,
    bindingFiles: GPU_BINDING,
    sharedLibraries: new Set([...GPU_LIBS].filter((l) => !l.startsWith('libcudnn'))),
    gpuDevice: true,
    unresolved: { 'libonnxruntime_providers_cuda.so': null },
  });
  t.is(noLdd.cuda!.reason, 'missing cuDNN (libcudnn)');
});

test('this host: availableProviders() is exactly the available part of the report, and an unavailable provider fails with the reason', async (t) => {
  const report = providerReport(probeHost());
  t.deepEqual(
    availableProviders(),
    report.filter((p) => p.available).map((p) => p.name),
  );
  t.true(availableProviders().includes('cpu'));
  const cuda = report.find((p) => p.name === 'cuda');
  if (!cuda || cuda.available) return t.pass('this host can run CUDA');
  const err = await t.throwsAsync(InferenceEngine.start({ providers: ['cuda'] } as never));
  t.is((err as any).code, 'execution_provider_unavailable');
  t.true(err!.message.includes(cuda.reason));
  t.deepEqual((err as any).details.reasons, { cuda: cuda.reason });
});
