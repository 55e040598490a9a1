import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import ort from 'onnxruntime-node';

/** Whether one execution provider can run on this machine, and if not, why. */
export interface ProviderStatus {
  name: string;
  available: boolean;
  reason: string;
}

/** The providers Vigil can be configured with ([inference] execution_providers). */
const SUPPORTED = new Set(['cpu', 'cuda', 'tensorrt']);

/** What the probe looks at; injectable so the rules are unit-tested without a GPU. */
export interface ProviderProbe {
  /** onnxruntime-node's compiled-in backends (listSupportedBackends). */
  backends: { name: string; bundled: boolean }[];
  /** Files next to the onnxruntime binding (libonnxruntime_providers_cuda.so, ...). */
  bindingFiles: string[];
  /** Shared libraries the dynamic loader can find (ldconfig -p), by file name. */
  sharedLibraries: Set<string>;
  /** /dev/nvidiactl and /dev/nvidia0 (or a Jetson's /dev/nvhost-*). */
  gpuDevice: boolean;
  /** For each provider library present next to the binding: the libraries `ldd` cannot resolve (null = ldd did not run). */
  unresolved: Record<string, string[] | null>;
}

function bindingDir(): string | null {
  try {
    const pkg = dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
    const dir = join(pkg, 'bin', 'napi-v6', process.platform, process.arch);
    if (existsSync(dir)) return dir;
    const napi = readdirSync(join(pkg, 'bin')).find((d) => d.startsWith('napi-v'));
    return napi ? join(pkg, 'bin', napi, process.platform, process.arch) : null;
  } catch {
    return null;
  }
}

function loaderLibraries(): Set<string> {
  const names = new Set<string>();
  try {
    const out = execFileSync('ldconfig', ['-p'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    });
    for (const m of out.matchAll(/^\s+(\S+)\s/gm)) names.add(m[1]!);
  } catch {
    /* no ldconfig: only LD_LIBRARY_PATH below */
  }
  for (const dir of (process.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean)) {
    try {
      for (const f of readdirSync(dir)) names.add(f);
    } catch {
      /* unreadable entry */
    }
  }
  return names;
}

/** The shared libraries `ldd` reports "not found" for (exactly what the provider library needs and this host lacks). */
function lddMissing(file: string): string[] | null {
  try {
    const out = execFileSync('ldd', [file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 });
    return [...out.matchAll(/^\s*(\S+) => not found/gm)].map((m) => m[1]!);
  } catch {
    return null;
  }
}

export function probeHost(): ProviderProbe {
  const dir = bindingDir();
  let bindingFiles: string[] = [];
  try {
    bindingFiles = dir ? readdirSync(dir) : [];
  } catch {
    /* none */
  }
  const gpuDevice = (existsSync('/dev/nvidiactl') && existsSync('/dev/nvidia0')) || existsSync('/dev/nvhost-ctrl-gpu');
  const unresolved: Record<string, string[] | null> = {};
  for (const f of bindingFiles.filter((n) => /^libonnxruntime_providers_(cuda|tensorrt)\.so$/.test(n)))
    unresolved[f] = lddMissing(join(dir!, f));
  return {
    backends: ort.listSupportedBackends(),
    bindingFiles,
    sharedLibraries: loaderLibraries(),
    gpuDevice,
    unresolved,
  };
}

const hasLib = (libs: Set<string>, prefix: string) => [...libs].some((l) => l.startsWith(prefix));

/**
 * The truth about each provider here: compiled into the binding is not enough. CUDA needs the binding's
 * CUDA provider library, an NVIDIA device, and every library that provider links against (checked with
 * ldd, so the CUDA/cuDNN major versions it was built for are the ones looked for); TensorRT needs all of
 * that plus its own provider library.
 */
export function providerReport(p: ProviderProbe = probeHost()): ProviderStatus[] {
  return p.backends.map(({ name }) => {
    if (!SUPPORTED.has(name))
      return {
        name,
        available: false,
        reason: `Vigil does not use the ${name} backend (execution_providers accepts cpu, cuda, tensorrt)`,
      };
    if (name === 'cpu') return { name, available: true, reason: 'built into onnxruntime-node' };
    const missing: string[] = [];
    const providerLibs =
      name === 'cuda'
        ? ['libonnxruntime_providers_cuda.so']
        : ['libonnxruntime_providers_cuda.so', 'libonnxruntime_providers_tensorrt.so'];
    const absent = providerLibs.filter((f) => !p.bindingFiles.includes(f));
    if (absent.length)
      missing.push(
        `onnxruntime-node's ${name} provider library (${absent.join(', ')}; the npm package ships it only when installed with its GPU binaries)`,
      );
    if (!p.gpuDevice) missing.push('an NVIDIA GPU device (/dev/nvidia0)');
    const present = providerLibs.filter((f) => p.bindingFiles.includes(f));
    const ldd = present.map((f) => p.unresolved[f]);
    if (present.length && ldd.every((l) => l !== null && l !== undefined)) {
      // ldd names exactly the CUDA/cuDNN/TensorRT libraries the provider was built against and this host lacks.
      const notFound = [...new Set(ldd.flat() as string[])];
      if (notFound.length) missing.push(`libraries the provider needs (${notFound.join(', ')})`);
    } else if (!absent.length) {
      for (const [prefixes, what] of [
        [['libcudart.so.'], 'the CUDA runtime (libcudart)'],
        [['libcublasLt.so.'], 'cuBLAS (libcublasLt)'],
        [['libcudnn.so.'], 'cuDNN (libcudnn)'],
      ] as const) {
        if (!prefixes.some((pre) => hasLib(p.sharedLibraries, pre))) missing.push(what);
      }
      if (name === 'tensorrt' && !hasLib(p.sharedLibraries, 'libnvinfer.so.')) missing.push('TensorRT (libnvinfer)');
    }
    return missing.length
      ? { name, available: false, reason: `missing ${missing.join('; ')}` }
      : { name, available: true, reason: 'provider library, GPU device and CUDA libraries present' };
  });
}

let cached: ProviderStatus[] | null = null;
/** The host's report, probed once per process (the libraries do not change under a running daemon). */
export function hostProviderReport(): ProviderStatus[] {
  cached ??= providerReport();
  return cached;
}
