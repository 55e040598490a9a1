/**
 * `vigil doctor`: what this box can run, checked for real, one line per check. For a site installer after
 * `apt install` (or on a Jetson, after swapping in an ONNX Runtime build with GPU providers): the config
 * loads, the data dir is usable, the model pack verifies, the allocator is installed, GStreamer has the
 * elements the monitor pipeline names, the native accelerators loaded, and which execution providers
 * can really load a model here (providers.ts says why the others cannot; an available one is then used to
 * open the pack's detector). Exit code 1 when a check fails.
 */
import { accessSync, constants, statfsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { loadConfig } from '../config/load.js';
import { PIPELINE_PRESETS } from '../config/pipelinePresets.js';
import type { VigilConfig } from '../config/schema.js';
import { buildCommit, VERSION } from '../contract/version.js';
import { isVigilError } from '../contract/errors.js';
import { providerReport } from '../inference/providers.js';
import { createSession, onnxRuntimeVersion, type ProviderName } from '../inference/sessions.js';
import { getPack, resolveCatalog } from '../models/catalog.js';
import { verifyPack } from '../models/installer.js';
import { exampleLaunch, parseLaunches } from '../monitors/gstLaunch.js';
import { walkerProblem } from '../search/hnswGraph.js';
import { daemonAllocatorPath, DAEMON_ALLOCATOR_LIBRARY } from '../system/allocator.js';
import { EXIT } from './exitCodes.js';
import type { CliIo } from './workspaces.js';

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'info';
export interface DoctorCheck {
  check: string;
  status: CheckStatus;
  detail: string;
}

/** The report as text: one aligned line per check, then a summary line. */
export function formatDoctor(checks: DoctorCheck[]): string {
  const width = Math.max(...checks.map((c) => c.check.length));
  const lines = checks.map((c) => `${c.status.padEnd(4)}  ${c.check.padEnd(width)}  ${c.detail}`);
  const failed = checks.filter((c) => c.status === 'fail').length;
  const warned = checks.filter((c) => c.status === 'warn').length;
  lines.push(failed ? `${failed} check(s) failed, ${warned} warning(s)` : `no failures, ${warned} warning(s)`);
  return `${lines.join('\n')}\n`;
}

const message = (e: unknown) => (isVigilError(e) ? e.message : e instanceof Error ? e.message : String(e));

/** Elements looked for beyond the configured pipeline: software decoders, and hardware ones (informative). */
const SOFTWARE_DECODERS = ['avdec_h264', 'avdec_h265'];
const HARDWARE_DECODERS = PIPELINE_PRESETS.filter((p) => p.id !== 'software').map((p) => p.decoder);

async function gstreamerChecks(config: VigilConfig): Promise<DoctorCheck[]> {
  const pipeline = exampleLaunch(config.monitors.pipeline, config.monitors.frame_max_side);
  const decoders = [...SOFTWARE_DECODERS, ...HARDWARE_DECODERS];
  // Each element beside a fakesink: "no element X" when its plugin is not installed.
  const parsed = await parseLaunches([pipeline, ...decoders.map((el) => `${el} fakesink`)]);
  if ('error' in parsed) return [{ check: 'gstreamer', status: 'fail', detail: parsed.error }];
  const [problem, ...results] = parsed;
  const present = new Set(decoders.filter((_, i) => results[i] === null));
  const checks: DoctorCheck[] = [
    problem
      ? { check: 'monitor pipeline', status: 'fail', detail: `[monitors] pipeline does not build: ${problem}` }
      : { check: 'monitor pipeline', status: 'ok', detail: 'every element of [monitors] pipeline is installed' },
  ];
  const missing = SOFTWARE_DECODERS.filter((el) => !present.has(el));
  checks.push(
    missing.length
      ? {
          check: 'software decoders',
          status: 'warn',
          detail: `${missing.join(', ')} missing (Debian's gstreamer1.0-libav): H.264/H.265 cameras need them with the default pipeline`,
        }
      : { check: 'software decoders', status: 'ok', detail: SOFTWARE_DECODERS.join(', ') },
  );
  const hardware = HARDWARE_DECODERS.filter((el) => present.has(el));
  checks.push({
    check: 'hardware decoders',
    status: 'info',
    detail: hardware.length
      ? `${hardware.join(', ')} available (docs/cameras.md#hardware-decoding has a pipeline for each)`
      : `none of ${HARDWARE_DECODERS.join(', ')}`,
  });
  return checks;
}

function dataDirCheck(dir: string): DoctorCheck {
  try {
    const st = statSync(dir);
    if (!st.isDirectory()) return { check: 'data dir', status: 'fail', detail: `${dir} is not a directory` };
    accessSync(dir, constants.W_OK | constants.X_OK);
    const fs = statfsSync(dir);
    const free = `${((fs.bavail * fs.bsize) / 2 ** 30).toFixed(1)} GiB free`;
    if (st.mode & 0o077)
      return {
        check: 'data dir',
        status: 'warn',
        detail: `${dir} is mode ${(st.mode & 0o777).toString(8)}: keys and faces live there, 0700 keeps them to the service (${free})`,
      };
    return { check: 'data dir', status: 'ok', detail: `${dir} writable, mode 700, ${free}` };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return {
      check: 'data dir',
      status: 'fail',
      detail:
        code === 'ENOENT'
          ? `${dir} does not exist`
          : code === 'EACCES'
            ? `${dir} is not writable by this user (run as the service user: sudo -u vigil vigil doctor)`
            : message(e),
    };
  }
}

async function modelChecks(config: VigilConfig): Promise<{ checks: DoctorCheck[]; detector: string | null }> {
  const packId = config.inference.model_pack;
  try {
    const catalog = await resolveCatalog(config.server.model_catalog);
    const pack = getPack(catalog, packId);
    const result = await verifyPack({ packId, modelsDir: config.server.models_dir, catalog });
    return {
      checks: [
        {
          check: 'models',
          status: 'ok',
          detail: `${packId}: ${result.files.map((f) => f.name).join(', ')} verified in ${result.dir}`,
        },
      ],
      detector: join(result.dir, pack.detector.file),
    };
  } catch (e) {
    return {
      checks: [
        {
          check: 'models',
          status: 'fail',
          detail: `${packId}: ${message(e)}`,
        },
      ],
      detector: null,
    };
  }
}

/**
 * Every backend of the ONNX Runtime binding: available ones are used to open the detector (a real load,
 * on this machine's libraries and device); the others with providers.ts's reason. A configured provider
 * that cannot load fails.
 */
async function providerChecks(config: VigilConfig, detector: string | null): Promise<DoctorCheck[]> {
  const wanted = new Set<string>(config.inference.execution_providers);
  const checks: DoctorCheck[] = [];
  for (const p of providerReport()) {
    const name = `provider ${p.name}`;
    const configured = wanted.has(p.name) ? ' (configured)' : '';
    if (!p.available) {
      checks.push({
        check: name,
        status: configured ? 'fail' : 'info',
        detail: `unavailable${configured}: ${p.reason}`,
      });
      continue;
    }
    if (!detector) {
      checks.push({
        check: name,
        status: 'warn',
        detail: `available${configured}; not loaded (no model pack to load)`,
      });
      continue;
    }
    try {
      const session = await createSession(detector, {
        providers: [p.name as ProviderName],
        deviceId: config.inference.device_id,
        intraOpThreads: 1,
        graphOptimization: 'basic',
      });
      await session.release();
      checks.push({ check: name, status: 'ok', detail: `loads the detector${configured}` });
    } catch (e) {
      checks.push({
        check: name,
        status: configured ? 'fail' : 'warn',
        detail: `reported available, but loading the detector failed${configured}: ${message(e)}`,
      });
    }
  }
  return checks;
}

export async function collectDoctorChecks(configFile: string | undefined): Promise<DoctorCheck[]> {
  const glibc = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header
    ?.glibcVersionRuntime;
  const checks: DoctorCheck[] = [
    {
      check: 'vigil',
      status: 'info',
      detail: `${VERSION} (commit ${buildCommit()}), Node ${process.version}, ${process.platform}-${process.arch}${glibc ? `, glibc ${glibc}` : ''}, ONNX Runtime ${onnxRuntimeVersion()}`,
    },
  ];
  let config: VigilConfig;
  try {
    const loaded = loadConfig(configFile);
    config = loaded.config;
    checks.push({ check: 'config', status: 'ok', detail: loaded.file ?? 'no file: the built-in defaults' });
  } catch (e) {
    checks.push({ check: 'config', status: 'fail', detail: message(e) });
    return checks;
  }
  checks.push(dataDirCheck(config.server.data_dir));
  const models = await modelChecks(config);
  checks.push(...models.checks);
  const allocator = daemonAllocatorPath();
  checks.push(
    allocator
      ? { check: 'allocator', status: 'ok', detail: `${allocator} (the unit preloads ${DAEMON_ALLOCATOR_LIBRARY})` }
      : {
          check: 'allocator',
          status: 'warn',
          detail: `${DAEMON_ALLOCATOR_LIBRARY} not installed (Debian's libjemalloc2): glibc's malloc uses ~130 MB more with four cameras`,
        },
  );
  checks.push(...(await gstreamerChecks(config)));
  checks.push(
    walkerProblem
      ? {
          check: 'hnsw walker',
          status: 'warn',
          detail: `not loaded, HNSW collections are searched through usearch instead: ${walkerProblem}`,
        }
      : { check: 'hnsw walker', status: 'ok', detail: 'native/hnsw-walk loaded' },
  );
  try {
    const scan = createRequire(import.meta.url)('vigil-vector-scan') as { kernel(): string };
    checks.push({ check: 'vector scan', status: 'ok', detail: `fp16/bf16 kernel: ${scan.kernel()}` });
  } catch (e) {
    checks.push({ check: 'vector scan', status: 'fail', detail: `native/vector-scan does not load: ${message(e)}` });
  }
  checks.push(...(await providerChecks(config, models.detector)));
  return checks;
}

export async function runDoctorCommand(
  args: string[],
  configFile: string | undefined,
  io: CliIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const checks = await collectDoctorChecks(configFile);
  io.stdout.write(args.includes('--json') ? `${JSON.stringify(checks, null, 2)}\n` : formatDoctor(checks));
  return checks.some((c) => c.status === 'fail') ? EXIT.failure : EXIT.ok;
}
