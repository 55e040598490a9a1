import test from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildCommit, gitCommit, readCommit, VERSION } from '../../src/contract/version.js';
import { tempDir } from '../helpers/tempDir.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
const head = spawnSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).stdout.trim();

test("the version is package.json's, and the commit of a checkout is its HEAD", (t) => {
  t.is(VERSION, pkg.version);
  t.regex(head, /^[0-9a-f]{12}$/);
  t.regex(gitCommit(REPO)!, new RegExp(`^${head}(-dirty)?$`));
  t.regex(buildCommit(), new RegExp(`^${head}(-dirty)?$`), 'src/ under tsx: the checkout HEAD');
});

test('the commit comes from build-info.json when the build wrote one, else git, else "unknown"', (t) => {
  const dir = tempDir(t, 'vigil-version-');
  const info = join(dir, 'build-info.json');
  writeFileSync(info, JSON.stringify({ version: '9.9.9', commit: 'abcdef012345' }));
  t.is(readCommit(info, dir), 'abcdef012345');
  t.is(readCommit(join(dir, 'none.json'), REPO), gitCommit(REPO) ?? 'no git');
  t.is(readCommit(join(dir, 'none.json'), dir), 'unknown', 'an export without .git and without build info');
});

test('npm run build records the commit: VIGIL_COMMIT for a build from an export, else the checkout HEAD', (t) => {
  const out = join(tempDir(t, 'vigil-build-info-'), 'dist');
  mkdirSync(out);
  const run = (env: NodeJS.ProcessEnv) =>
    spawnSync(process.execPath, ['--import', 'tsx', join(REPO, 'scripts/build-info.ts'), out], {
      cwd: REPO,
      encoding: 'utf8',
      env: { ...process.env, ...env },
    });
  const { VIGIL_COMMIT: _drop, ...plain } = process.env;
  let r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO, 'scripts/build-info.ts'), out], {
    cwd: REPO,
    encoding: 'utf8',
    env: plain,
  });
  t.is(r.status, 0, r.stderr);
  let written = JSON.parse(readFileSync(join(out, 'build-info.json'), 'utf8')) as { version: string; commit: string };
  t.is(written.version, pkg.version);
  t.regex(written.commit, new RegExp(`^${head}(-dirty)?$`));
  r = run({ VIGIL_COMMIT: '0123456789ab' });
  t.is(r.status, 0, r.stderr);
  written = JSON.parse(readFileSync(join(out, 'build-info.json'), 'utf8')) as { version: string; commit: string };
  t.deepEqual(written, { version: pkg.version, commit: '0123456789ab' });
  t.not(run({ VIGIL_COMMIT: 'not a commit; rm -rf' }).status, 0, 'a commit that is not hex is refused');
});

test('vigil --version prints the version and the commit', (t) => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO, 'src/cli/main.ts'), '--version'], {
    cwd: REPO,
    encoding: 'utf8',
  });
  t.is(r.status, 0, r.stderr);
  t.regex(r.stdout, new RegExp(`^vigil ${pkg.version.replace(/\./g, '\\.')} \\(commit ${head}(-dirty)?\\)\n$`));
});

test('vigil_build_info carries the version and the commit', async (t) => {
  const { VigilMetrics } = await import('../../src/http/metrics.js');
  const text = await new VigilMetrics().registry.getSingleMetricAsString('vigil_build_info');
  t.regex(
    text,
    new RegExp(
      `^vigil_build_info\\{version="${VERSION}",commit="${buildCommit()}",node_version="${process.version}"\\} 1$`,
      'm',
    ),
  );
});
