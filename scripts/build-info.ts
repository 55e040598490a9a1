/**
 * Writes dist/build-info.json (`npm run build` runs it): the package version and the git commit the build
 * came from, which `vigil --version`, `/v1/system`, `vigil_build_info` and backup manifests report. A build
 * from an export without .git (the Debian package's, see packaging/build-package.sh) passes the commit
 * in VIGIL_COMMIT. Usage: tsx scripts/build-info.ts [OUT_DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COMMIT_PATTERN, gitCommit, VERSION, type BuildInfo } from '../src/contract/version.js';

const REPO = resolve(fileURLToPath(new URL('..', import.meta.url)));
const out = resolve(process.argv[2] ?? join(REPO, 'dist'));
const fromEnv = process.env.VIGIL_COMMIT;
if (fromEnv !== undefined && !COMMIT_PATTERN.test(fromEnv)) {
  process.stderr.write(`build-info: VIGIL_COMMIT must be a hex commit id, got "${fromEnv}"\n`);
  process.exit(1);
}
const info: BuildInfo = { version: VERSION, commit: fromEnv ?? gitCommit(REPO) ?? 'unknown' };
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'build-info.json'), `${JSON.stringify(info, null, 2)}\n`);
process.stdout.write(`build-info: vigil ${info.version} (commit ${info.commit})\n`);
