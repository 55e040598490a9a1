/**
 * `vigil models install|verify|list|info`: puts a catalog pack on disk so that every published file
 * has been verified against the catalog's SHA-256, and pack.json (written last, atomically) is the
 * marker that the pack is complete.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type ApiError, Errors } from '../contract/errors.js';
import {
  getFile,
  getPack,
  governingLicense,
  packFileNames,
  packLicenses,
  resolveCatalog,
  type Catalog,
  type DetectorSpec,
  type FileSpec,
  type LicenseEntry,
  type RecognizerSpec,
} from './catalog.js';
import {
  hashFile,
  publish,
  removeQuietly,
  removeStaleTemps,
  tempPathFor,
  writeFileAtomic,
  type Digest,
} from './fsutil.js';
import type { HttpOptions } from './http.js';
import { assertInstalled, inspectPack, PACK_JSON, packDir, type PackJson, type PackProblem } from './installed.js';
import { confirmLicense, type InStream, type OutStream } from './license.js';
import { createProgress } from './progress.js';
import { SourceError, type SourceFailureKind } from './source-error.js';
import { ContainerCache, describeSource, originsFor, resolveMirror, type FileOrigin } from './sources.js';

export interface ModelsIo {
  stdout?: OutStream;
  stderr?: OutStream;
  stdin?: InStream;
}

interface CatalogOption {
  /** A parsed catalog or a path to one; defaults to the bundled models/manifest.json. */
  catalog?: Catalog | string;
}

export interface InstallOptions extends CatalogOption {
  packId: string;
  modelsDir: string;
  /** Flat directory or http(s) base URL tried before the catalog sources; defaults to env VIGIL_MODEL_MIRROR. */
  mirror?: string;
  acceptLicense?: boolean;
  /** Fetch every file again even when the installed copy verifies. */
  force?: boolean;
  env?: NodeJS.ProcessEnv;
  http?: HttpOptions;
  io?: ModelsIo;
}

export type FileStatus = 'cached' | 'downloaded' | 'replaced';

export interface FileOutcome {
  name: string;
  status: FileStatus;
  /** Where the bytes came from; absent when cached. */
  source?: string;
  sha256: string;
  size: number;
}

export interface InstallResult {
  pack_id: string;
  dir: string;
  files: FileOutcome[];
  pack: PackJson;
}

export interface SourceFailure {
  source: string;
  kind: SourceFailureKind;
  error: string;
}

export async function installPack(opts: InstallOptions): Promise<InstallResult> {
  const catalog = await resolveCatalog(opts.catalog);
  const pack = getPack(catalog, opts.packId);
  const env = opts.env ?? process.env;
  const stderr = opts.io?.stderr ?? process.stderr;
  const mirrorValue = opts.mirror ?? (env.VIGIL_MODEL_MIRROR || undefined);
  const mirror = mirrorValue === undefined ? undefined : await resolveMirror(mirrorValue);
  const licenses = packLicenses(catalog, pack);

  // Nothing is fetched or created before the licence is accepted.
  await confirmLicense({
    packId: opts.packId,
    licenses,
    acceptLicense: opts.acceptLicense === true,
    stdin: opts.io?.stdin ?? process.stdin,
    stdout: opts.io?.stdout ?? process.stdout,
    stderr,
  });

  const dir = packDir(opts.modelsDir, opts.packId);
  await mkdir(dir, { recursive: true });
  await removeStaleTemps(dir);
  const progress = createProgress(stderr);
  const containers = new ContainerCache(dir, progress, opts.http);
  const files: FileOutcome[] = [];
  try {
    for (const name of packFileNames(pack)) {
      const spec = getFile(catalog, name);
      const origins = originsFor(name, spec, mirror, { progress, http: opts.http, env, containers });
      files.push(
        await installFile({ packId: opts.packId, dir, name, spec, origins, force: opts.force === true, stderr }),
      );
    }
  } finally {
    await containers.clear();
  }

  const packJson = buildPackJson(opts.packId, pack.detector, pack.recognizer, files, licenses);
  await writeFileAtomic(join(dir, PACK_JSON), `${JSON.stringify(packJson, null, 2)}\n`);
  return { pack_id: opts.packId, dir, files, pack: packJson };
}

export interface FileJob {
  packId: string;
  dir: string;
  name: string;
  spec: FileSpec;
  origins: FileOrigin[];
  force: boolean;
  stderr: OutStream;
}

async function installFile(job: FileJob): Promise<FileOutcome> {
  const finalPath = join(job.dir, job.name);
  const existing = await hashFile(finalPath).catch(() => undefined);
  const { sha256, size } = job.spec;
  if (!job.force && existing && matchesSpec(existing, job.spec))
    return { name: job.name, status: 'cached', sha256, size };
  if (existing && !matchesSpec(existing, job.spec)) {
    job.stderr.write(`${job.name}: installed copy does not verify; fetching a new one\n`);
  }
  const origin = await fetchVerified(job, finalPath);
  return { name: job.name, status: existing ? 'replaced' : 'downloaded', source: origin.description, sha256, size };
}

/** Tries each origin in order; the first whose bytes verify is published over `finalPath`. */
export async function fetchVerified(job: FileJob, finalPath: string): Promise<FileOrigin> {
  if (job.origins.length === 0) {
    throw Errors.modelSourceUnavailable(
      `the catalog lists no source for ${job.name}; supply a mirror that has it with --from DIR|URL`,
      { pack: job.packId, file: job.name },
    );
  }
  const failures: SourceFailure[] = [];
  for (const origin of job.origins) {
    const temp = tempPathFor(finalPath);
    try {
      checkDigest(await origin.fetchTo(temp), job.spec);
      await publish(temp, finalPath);
      return origin;
    } catch (err) {
      await removeQuietly(temp);
      const failure = toFailure(origin, err);
      failures.push(failure);
      job.stderr.write(`${job.name}: ${failure.source}: ${failure.error}\n`);
    }
  }
  throw allSourcesFailed(job, failures);
}

export function matchesSpec(digest: Digest, spec: FileSpec): boolean {
  return digest.sha256 === spec.sha256 && digest.size === spec.size;
}

function checkDigest(digest: Digest, spec: FileSpec): void {
  if (digest.size !== spec.size)
    throw new SourceError('mismatch', `size is ${digest.size} bytes, expected ${spec.size}`);
  if (digest.sha256 !== spec.sha256)
    throw new SourceError('mismatch', `sha256 is ${digest.sha256}, expected ${spec.sha256}`);
}

function toFailure(origin: FileOrigin, err: unknown): SourceFailure {
  if (err instanceof SourceError) return { source: origin.description, kind: err.kind, error: err.message };
  // Unexpected errors still count against this source only; the message is redacted like the rest.
  return {
    source: origin.description,
    kind: 'unavailable',
    error: new SourceError('unavailable', String((err as Error)?.message ?? err)).message,
  };
}

function allSourcesFailed(job: FileJob, failures: SourceFailure[]): ApiError {
  const onlyMismatches = failures.every((f) => f.kind === 'mismatch');
  const summary = failures.map((f) => `${f.source}: ${f.error}`).join('; ');
  const what = onlyMismatches ? 'no source provided a copy that verifies' : 'every source failed';
  const make = onlyMismatches ? Errors.modelChecksumMismatch : Errors.modelDownloadFailed;
  return make(`cannot install ${job.name} for pack "${job.packId}": ${what} (${summary})`, {
    pack: job.packId,
    file: job.name,
    expected_sha256: job.spec.sha256,
    attempts: failures,
  });
}

function buildPackJson(
  packId: string,
  detector: DetectorSpec,
  recognizer: RecognizerSpec,
  files: FileOutcome[],
  licenses: (LicenseEntry & { files: string[] })[],
): PackJson {
  return {
    pack_id: packId,
    installed_at: new Date().toISOString(),
    detector,
    recognizer,
    files: Object.fromEntries(files.map((f) => [f.name, { sha256: f.sha256, size: f.size }])),
    license: governingLicense(licenses),
    licenses,
  };
}

export interface VerifyOptions extends CatalogOption {
  packId: string;
  modelsDir: string;
}

export interface VerifyResult {
  pack_id: string;
  dir: string;
  files: { name: string; sha256: string; size: number }[];
}

/** Re-hashes every file against the catalog and pack.json; throws model_not_installed / model_invalid. */
export async function verifyPack(opts: VerifyOptions): Promise<VerifyResult> {
  const catalog = await resolveCatalog(opts.catalog);
  const state = await inspectPack(catalog, opts.modelsDir, opts.packId);
  assertInstalled(state, opts.modelsDir);
  const files = Object.entries(state.files).map(([name, d]) => ({ name, sha256: d.sha256, size: d.size }));
  return { pack_id: opts.packId, dir: state.dir, files };
}

export interface ListOptions extends CatalogOption {
  modelsDir: string;
}

export type PackStatus = 'installed' | 'not installed' | 'corrupt';

export interface PackListing {
  id: string;
  description: string;
  is_default: boolean;
  status: PackStatus;
  detector: string;
  recognizer: string;
  commercial_use: boolean;
  problems: PackProblem[];
}

export async function listPacks(opts: ListOptions): Promise<PackListing[]> {
  const catalog = await resolveCatalog(opts.catalog);
  const listings: PackListing[] = [];
  for (const [id, pack] of Object.entries(catalog.packs)) {
    const state = await inspectPack(catalog, opts.modelsDir, id);
    listings.push({
      id,
      description: pack.description,
      is_default: id === catalog.default_pack,
      status: state.status === 'not_installed' ? 'not installed' : state.status,
      detector: pack.detector.file,
      recognizer: pack.recognizer.file,
      commercial_use: governingLicense(packLicenses(catalog, pack)).commercial_use,
      problems: state.status === 'corrupt' ? state.problems : [],
    });
  }
  return listings;
}

/** Catalog packs that have a pack.json under `modelsDir` (installed, possibly corrupt). */
export async function installedPackIds(opts: ListOptions): Promise<string[]> {
  const catalog = await resolveCatalog(opts.catalog);
  const present = new Set(await readdir(opts.modelsDir).catch(() => [] as string[]));
  const ids: string[] = [];
  for (const id of Object.keys(catalog.packs)) {
    if (!present.has(id)) continue;
    const state = await inspectPack(catalog, opts.modelsDir, id);
    if (state.status !== 'not_installed') ids.push(id);
  }
  return ids;
}

export interface InfoOptions extends CatalogOption {
  packId: string;
  /** When given, the pack's install status there is included. */
  modelsDir?: string;
  env?: NodeJS.ProcessEnv;
}

export interface PackFileInfo {
  name: string;
  roles: ('detector' | 'recognizer')[];
  sha256: string;
  size: number;
  license: string;
  sources: string[];
}

export interface PackInfo {
  id: string;
  description: string;
  is_default: boolean;
  detector: DetectorSpec;
  recognizer: RecognizerSpec;
  files: PackFileInfo[];
  license: LicenseEntry;
  licenses: (LicenseEntry & { files: string[] })[];
  status?: PackStatus;
}

export async function packInfo(opts: InfoOptions): Promise<PackInfo> {
  const catalog = await resolveCatalog(opts.catalog);
  const pack = getPack(catalog, opts.packId);
  const env = opts.env ?? process.env;
  const files = packFileNames(pack).map((name): PackFileInfo => {
    const spec = getFile(catalog, name);
    const roles = (['detector', 'recognizer'] as const).filter((role) => pack[role].file === name);
    return {
      name,
      roles,
      sha256: spec.sha256,
      size: spec.size,
      license: spec.license,
      sources: spec.sources.map((s) => describeSource(s, env)),
    };
  });
  const licenses = packLicenses(catalog, pack);
  const info: PackInfo = {
    id: opts.packId,
    description: pack.description,
    is_default: opts.packId === catalog.default_pack,
    detector: pack.detector,
    recognizer: pack.recognizer,
    files,
    license: governingLicense(licenses),
    licenses,
  };
  if (opts.modelsDir !== undefined) {
    const state = await inspectPack(catalog, opts.modelsDir, opts.packId);
    info.status = state.status === 'not_installed' ? 'not installed' : state.status;
  }
  return info;
}
