/**
 * The liveness addon's model files under `<models_dir>/addons/liveness/`: inspection (never downloads),
 * installation from the mirror or the catalog's pinned upstream URLs, and the startup check.
 */
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Errors } from '../contract/errors.js';
import { getAddon, getFile, resolveCatalog, type Catalog, type LivenessModelFile } from '../models/catalog.js';
import { hashFile, removeStaleTemps, type Digest } from '../models/fsutil.js';
import type { HttpOptions } from '../models/http.js';
import { fetchVerified, matchesSpec, type FileOutcome } from '../models/installer.js';
import type { OutStream } from '../models/license.js';
import { createProgress, silentProgress } from '../models/progress.js';
import { ContainerCache, originsFor, resolveMirror } from '../models/sources.js';
import { tryLockFile } from '../system/lockFile.js';

export const LIVENESS = 'liveness';

export const livenessDir = (modelsDir: string): string => join(modelsDir, 'addons', LIVENESS);

export const addonInstallCommand = (modelsDir: string): string =>
  `vigil addons install liveness --from <mirror> --models-dir ${modelsDir}`;

export interface LivenessFilesState {
  dir: string;
  /** Every file present and matching its pinned SHA-256. */
  installed: boolean;
  /** Files that exist but do not verify: never overwritten, the operator must look at them. */
  invalid: { file: string; problem: string }[];
  missing: string[];
  models: LivenessModelFile[];
}

/**
 * GET /v1/addons/liveness reads the state on every call; re-hashing 3.5 MB each time is wasted while the
 * file is the same one (same inode, size and mtime), so the digest is kept for that identity.
 */
const digests = new Map<string, { key: string; digest: Digest }>();
async function hashUnchanged(path: string): Promise<Digest> {
  const s = await stat(path);
  const key = `${s.ino}:${s.size}:${s.mtimeMs}`;
  const hit = digests.get(path);
  if (hit?.key === key) return hit.digest;
  const digest = await hashFile(path);
  digests.set(path, { key, digest });
  return digest;
}

export async function inspectLiveness(catalog: Catalog, modelsDir: string): Promise<LivenessFilesState> {
  const addon = getAddon(catalog, LIVENESS);
  const dir = livenessDir(modelsDir);
  const invalid: LivenessFilesState['invalid'] = [];
  const missing: string[] = [];
  for (const m of addon.models) {
    const spec = getFile(catalog, m.file);
    try {
      const digest = await hashUnchanged(join(dir, m.file));
      if (!matchesSpec(digest, spec))
        invalid.push({
          file: m.file,
          problem: `sha256 ${digest.sha256} (${digest.size} bytes) does not match the pinned ${spec.sha256}`,
        });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') missing.push(m.file);
      else invalid.push({ file: m.file, problem: `unreadable (${code ?? String(e)})` });
    }
  }
  const models = addon.models.map((m) => ({ ...m, path: join(dir, m.file), sha256: getFile(catalog, m.file).sha256 }));
  return { dir, installed: invalid.length === 0 && missing.length === 0, invalid, missing, models };
}

/** For startup: the verified models, or addon_model_missing / addon_model_invalid with the fix. */
export async function requireLiveness(catalog: Catalog, modelsDir: string): Promise<LivenessModelFile[]> {
  const state = await inspectLiveness(catalog, modelsDir);
  const command = addonInstallCommand(modelsDir);
  if (state.invalid.length > 0) {
    throw Errors.addonModelInvalid(
      `The liveness addon in ${state.dir} does not verify (${state.invalid.map((f) => `${f.file}: ${f.problem}`).join('; ')}). ` +
        `Remove the bad file(s) and run: ${command}`,
      { details: { dir: state.dir, invalid: state.invalid, install_command: command } },
    );
  }
  if (state.missing.length > 0) {
    throw Errors.addonModelMissing(
      `Liveness is enabled in the config but its model files are missing from ${state.dir} (${state.missing.join(', ')}). ` +
        `Install them with: ${command} (or disable liveness in [inference].addons)`,
      { details: { dir: state.dir, missing: state.missing, install_command: command } },
    );
  }
  return state.models;
}

export interface InstallLivenessOptions {
  catalog?: Catalog | string;
  modelsDir: string;
  /** Flat directory or http(s) base URL tried before the catalog's pinned URLs (default env VIGIL_MODEL_MIRROR). */
  mirror?: string;
  env?: NodeJS.ProcessEnv;
  http?: HttpOptions;
  stderr?: OutStream;
}

/**
 * Downloads and verifies every missing file. A file that exists with the wrong digest is never
 * overwritten (addon_model_invalid): it may be an operator's own file, and replacing it silently would
 * hide that. Holds `.liveness-install.lock` in the addons folder so two installers never interleave.
 */
export async function installLiveness(opts: InstallLivenessOptions): Promise<{ dir: string; files: FileOutcome[] }> {
  const catalog = await resolveCatalog(opts.catalog);
  const env = opts.env ?? process.env;
  const mirrorValue = opts.mirror ?? (env.VIGIL_MODEL_MIRROR || undefined);
  const mirror = mirrorValue === undefined ? undefined : await resolveMirror(mirrorValue);
  const dir = livenessDir(opts.modelsDir);
  await mkdir(dir, { recursive: true });
  const lock = tryLockFile(join(dir, '..', '.liveness-install.lock'));
  if (!('release' in lock)) {
    throw Errors.addonJobInProgress(
      `Another process (pid ${lock.heldBy}) is installing the liveness addon.`,
      lock.heldBy,
    );
  }
  try {
    const state = await inspectLiveness(catalog, opts.modelsDir);
    if (state.invalid.length > 0) {
      throw Errors.addonModelInvalid(
        `Not overwriting liveness model file(s) that do not verify: ${state.invalid.map((f) => `${join(dir, f.file)}: ${f.problem}`).join('; ')}. Remove them and retry.`,
        { status: 409, details: { dir, invalid: state.invalid } },
      );
    }
    await removeStaleTemps(dir);
    const stderr = opts.stderr;
    const progress = stderr ? createProgress(stderr) : silentProgress;
    const containers = new ContainerCache(dir, progress, opts.http);
    const files: FileOutcome[] = [];
    try {
      for (const m of getAddon(catalog, LIVENESS).models) {
        const spec = getFile(catalog, m.file);
        if (!state.missing.includes(m.file)) {
          files.push({ name: m.file, status: 'cached', sha256: spec.sha256, size: spec.size });
          continue;
        }
        const origins = originsFor(m.file, spec, mirror, { progress, http: opts.http, env, containers });
        const origin = await fetchVerified(
          { packId: LIVENESS, dir, name: m.file, spec, origins, force: false, stderr: stderr ?? { write: () => true } },
          join(dir, m.file),
        );
        files.push({
          name: m.file,
          status: 'downloaded',
          source: origin.description,
          sha256: spec.sha256,
          size: spec.size,
        });
      }
    } finally {
      await containers.clear();
    }
    return { dir, files };
  } finally {
    lock.release();
  }
}
