import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The package version, read once (works from src/ under tsx and from dist/): package.json is its one place. */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * The InsightFace Server API contract this build speaks, as upstream clients read it from
 * `/v1/health` `version` and `/v1/system` `server_version` (they gate features on it). Vigil's own
 * version is reported beside it as `vigil_version`.
 */
export const API_CONTRACT_VERSION = '0.3.1';

/** What `npm run build` records beside the compiled code (scripts/build-info.ts). */
export interface BuildInfo {
  version: string;
  commit: string;
}

/** A short commit id, with `-dirty` when the build had uncommitted changes. */
export const COMMIT_PATTERN = /^[0-9a-f]{7,40}(-dirty)?$/;

/** The short HEAD of the git checkout at `dir` (`-dirty` with uncommitted changes to tracked files), or null. */
export function gitCommit(dir: string): string | null {
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    // Only the checkout's own root: an export unpacked inside another repository is not that repository.
    if (git('rev-parse', '--show-toplevel') !== realpathSync(dir)) return null;
    const head = git('rev-parse', '--short=12', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') ? `${head}-dirty` : head;
  } catch {
    return null;
  }
}

/** The commit in `buildInfoFile` when the build wrote one, else the git checkout at `repoDir`, else "unknown". */
export function readCommit(buildInfoFile: string, repoDir: string): string {
  try {
    const { commit } = JSON.parse(readFileSync(buildInfoFile, 'utf8')) as Partial<BuildInfo>;
    if (typeof commit === 'string' && COMMIT_PATTERN.test(commit)) return commit;
  } catch {
    // No build info: the source run from a checkout (tsx), or an export built without it.
  }
  return gitCommit(repoDir) ?? 'unknown';
}

let commit: string | undefined;

/**
 * The git commit this code was built from, reported with VERSION by `vigil --version`, `/v1/system`,
 * `vigil_build_info` and backup manifests: dist/build-info.json in a build, the checkout's HEAD when the
 * source runs under tsx. Read once, on first use.
 */
export function buildCommit(): string {
  commit ??= readCommit(
    fileURLToPath(new URL('../build-info.json', import.meta.url)),
    fileURLToPath(new URL('../..', import.meta.url)),
  );
  return commit;
}
