import test from 'ava';
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tempDir.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The Makefile's rules, dry-run (`make -n`) in a scratch directory that plays the checkout: what each target
 * would run follows from the files there (node_modules, package-lock.json, ../shared/models), not from this
 * checkout's own state.
 */
function dryRun(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const { VIGIL_MODEL_MIRROR: _drop, MODEL_MIRROR: _drop2, ...base } = process.env;
  const r = spawnSync('make', ['-n', '-f', join(REPO, 'Makefile'), ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...base, ...env },
  });
  return `${r.stdout}${r.stderr}`;
}

function checkout(t: Parameters<typeof tempDir>[0], withShared: boolean): string {
  const root = tempDir(t, 'vigil-make-');
  const dir = join(root, 'main');
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  writeFileSync(join(dir, 'package-lock.json'), '{}');
  if (withShared) mkdirSync(join(root, 'shared', 'models'), { recursive: true });
  return dir;
}

test('node_modules is installed again only when package-lock.json is newer (make test does not rerun npm ci)', (t) => {
  const dir = checkout(t, false);
  const old = new Date(Date.now() - 60_000);
  utimesSync(join(dir, 'package-lock.json'), old, old);
  t.notRegex(dryRun(dir, ['node_modules']), /npm ci/);
  const later = new Date(Date.now() + 60_000);
  utimesSync(join(dir, 'package-lock.json'), later, later);
  t.regex(dryRun(dir, ['node_modules']), /npm ci/);
});

test('models come from ../shared/models when it exists, else from the upstream sources, and make says so', (t) => {
  const shared = checkout(t, true);
  const withMirror = dryRun(shared, ['-o', 'build', 'models']);
  t.regex(withMirror, /models install edge_s --accept-license --from \S+\/shared\/models /);

  const alone = checkout(t, false);
  const upstream = dryRun(alone, ['-o', 'build', 'models']);
  t.regex(upstream, /models install edge_s --accept-license +--config config\/dev\.toml/);
  t.regex(upstream, /upstream sources/);

  // An empty MODEL_MIRROR= also means the upstream sources, never `--from` with no value.
  const empty = dryRun(shared, ['-o', 'build', 'models', 'MODEL_MIRROR=']);
  t.notRegex(empty, /--from/);
  t.regex(dryRun(alone, ['-o', 'build', 'models', 'MODEL_MIRROR=/srv/mirror']), /--from \/srv\/mirror /);
});
