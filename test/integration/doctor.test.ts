import test from 'ava';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatDoctor, type DoctorCheck } from '../../src/cli/doctor.js';
import { modelsDirWith, REPO } from '../helpers/daemon.js';
import { tempDir } from '../helpers/tempDir.js';

/** `vigil doctor --json` with a server.toml of these lines; its exit code and checks by name. */
function doctor(t: Parameters<typeof tempDir>[0], toml: string) {
  const dir = tempDir(t, 'vigil-doctor-');
  const config = join(dir, 'server.toml');
  writeFileSync(config, toml.replaceAll('$DIR', dir));
  mkdirSync(join(dir, 'data'), { mode: 0o700 });
  chmodSync(join(dir, 'data'), 0o700);
  const r = spawnSync(
    process.execPath,
    ['--import', 'tsx', join(REPO, 'src/cli/main.ts'), 'doctor', '--json', '--config', config],
    { cwd: REPO, encoding: 'utf8', timeout: 120_000 },
  );
  const checks = JSON.parse(r.stdout || '[]') as DoctorCheck[];
  return { status: r.status, stderr: r.stderr, get: (name: string) => checks.find((c) => c.check === name) };
}

test('vigil doctor on a usable box: every check passes and the CPU provider really loads the detector', async (t) => {
  const models = await modelsDirWith('edge_s');
  const r = doctor(t, `[server]\ndata_dir = "$DIR/data"\nmodels_dir = ${JSON.stringify(models)}\n`);
  t.is(r.status, 0, r.stderr);
  t.like(r.get('config'), { status: 'ok' });
  t.like(r.get('data dir'), { status: 'ok' });
  t.like(r.get('models'), { status: 'ok' });
  t.regex(r.get('models')!.detail, /^edge_s: .*det_500m\.onnx/);
  t.like(r.get('provider cpu'), { status: 'ok', detail: 'loads the detector (configured)' });
  t.like(r.get('monitor pipeline'), { status: 'ok' });
  t.like(r.get('software decoders'), { status: 'ok' });
  t.like(r.get('hnsw walker'), { status: 'ok' });
  t.regex(r.get('vector scan')!.detail, /kernel: (avx2-f16c|neon|scalar)$/);
  t.regex(r.get('vigil')!.detail, /^\d+\.\d+\.\d+ \(commit [0-9a-f]+/);
});

test('vigil doctor fails, with what to do, on missing models, a pipeline element that is not installed and an unusable data dir', async (t) => {
  const dir = tempDir(t, 'vigil-doctor-models-');
  const r = doctor(
    t,
    [
      '[server]',
      `data_dir = "$DIR/missing"`,
      `models_dir = ${JSON.stringify(dir)}`,
      '[monitors]',
      // Jetson's hardware decoder: not installed on this machine.
      'pipeline = "rtspsrc name=src latency={latency_ms} ! rtph264depay ! h264parse ! nvv4l2decoder ! videorate name=rate drop-only=true max-rate={max_fps} ! videoconvert ! video/x-raw,format=RGB ! appsink name=sink"',
      '',
    ].join('\n'),
  );
  t.is(r.status, 1);
  t.like(r.get('data dir'), { status: 'fail' });
  t.regex(r.get('data dir')!.detail, /missing does not exist$/);
  t.like(r.get('models'), { status: 'fail' });
  t.regex(r.get('models')!.detail, /vigil models install edge_s --accept-license/);
  t.like(r.get('monitor pipeline'), { status: 'fail' });
  t.regex(r.get('monitor pipeline')!.detail, /no element "nvv4l2decoder"/);
  t.like(r.get('provider cpu'), { status: 'warn' }, 'no model to load');
});

test('formatDoctor: aligned lines and a summary that counts failures and warnings', (t) => {
  const text = formatDoctor([
    { check: 'config', status: 'ok', detail: '/etc/vigil/server.toml' },
    { check: 'models', status: 'fail', detail: 'edge_s: not installed' },
    { check: 'allocator', status: 'warn', detail: 'libjemalloc.so.2 not installed' },
  ]);
  t.is(
    text,
    [
      'ok    config     /etc/vigil/server.toml',
      'fail  models     edge_s: not installed',
      'warn  allocator  libjemalloc.so.2 not installed',
      '1 check(s) failed, 1 warning(s)',
      '',
    ].join('\n'),
  );
});
