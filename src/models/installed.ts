/**
 * Installed packs on disk: `<modelsDir>/<packId>/pack.json` plus the pack's files. The daemon loads
 * packs from here at startup and never downloads; `vigil models verify|list` inspect the same way.
 */
import { isDeepStrictEqual } from 'node:util';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { Errors } from '../contract/errors.js';
import {
  DetectorSpecSchema,
  getFile,
  getPack,
  LicenseSchema,
  packFileNames,
  RecognizerSpecSchema,
  resolveCatalog,
  type Catalog,
  type DetectorSpec,
  type LicenseEntry,
  type PackSpec,
  type RecognizerSpec,
  type RecommendedThreshold,
} from './catalog.js';
import { hashFile, type Digest } from './fsutil.js';

export const PACK_JSON = 'pack.json';

const LicenseEntrySchema = z.object({ ...LicenseSchema.shape, id: z.string() });

/** Tolerant of extra keys, so a pack installed by a newer vigil still loads in an older daemon. */
export const PackJsonSchema = z.object({
  pack_id: z.string(),
  installed_at: z.string(),
  detector: DetectorSpecSchema,
  recognizer: RecognizerSpecSchema,
  files: z.record(z.string(), z.object({ sha256: z.string(), size: z.number() })),
  license: LicenseEntrySchema,
  licenses: z.array(LicenseEntrySchema.extend({ files: z.array(z.string()) })).optional(),
});

export type PackJson = z.infer<typeof PackJsonSchema>;

export interface InstalledPack {
  id: string;
  dir: string;
  detector: DetectorSpec & { path: string; sha256: string };
  recognizer: RecognizerSpec & { path: string; sha256: string };
  license: LicenseEntry;
  licenses: (LicenseEntry & { files: string[] })[];
  installed_at: string;
  /** From the catalog, not pack.json: a re-measured threshold needs no reinstall. */
  recommended_threshold?: RecommendedThreshold;
}

export interface PackProblem {
  file: string;
  problem: string;
}

export type PackState =
  | { status: 'not_installed'; id: string; dir: string }
  | { status: 'corrupt'; id: string; dir: string; problems: PackProblem[] }
  | { status: 'installed'; id: string; dir: string; packJson: PackJson; files: Record<string, Digest> };

export function packDir(modelsDir: string, packId: string): string {
  return join(modelsDir, packId);
}

/** The command users are told to run; kept in one place so every message agrees. */
export function installCommand(packId: string, modelsDir: string): string {
  return `vigil models install ${packId} --accept-license --from <mirror> --models-dir ${modelsDir}`;
}

/**
 * Reads pack.json, checks it against the catalog, and hashes every file. Never throws for a broken
 * install: it reports it, so `list` can show every pack's state.
 */
export async function inspectPack(catalog: Catalog, modelsDir: string, packId: string): Promise<PackState> {
  const pack = getPack(catalog, packId);
  const dir = packDir(modelsDir, packId);
  const text = await readFile(join(dir, PACK_JSON), 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined;
    throw err;
  });
  if (text === undefined) return { status: 'not_installed', id: packId, dir };

  const packJson = parsePackJson(text);
  const problems: PackProblem[] = packJson.ok
    ? catalogProblems(catalog, packId, pack, packJson.value)
    : [packJson.problem];
  const files: Record<string, Digest> = {};
  for (const name of packFileNames(pack)) {
    const result = await checkFile(dir, name, getFile(catalog, name));
    if ('problem' in result) problems.push(result);
    else files[name] = result;
  }
  if (problems.length > 0 || !packJson.ok) return { status: 'corrupt', id: packId, dir, problems };
  return { status: 'installed', id: packId, dir, packJson: packJson.value, files };
}

function parsePackJson(text: string): { ok: true; value: PackJson } | { ok: false; problem: PackProblem } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, problem: { file: PACK_JSON, problem: 'not valid JSON' } };
  }
  const parsed = PackJsonSchema.safeParse(raw);
  if (!parsed.success)
    return { ok: false, problem: { file: PACK_JSON, problem: `invalid (${z.prettifyError(parsed.error)})` } };
  return { ok: true, value: parsed.data };
}

/** A pack.json from another catalog version means the files or preprocessing changed: reinstall. */
function catalogProblems(catalog: Catalog, packId: string, pack: PackSpec, packJson: PackJson): PackProblem[] {
  const problems: PackProblem[] = [];
  const differs = (what: string): void =>
    void problems.push({ file: PACK_JSON, problem: `${what} differs from the catalog` });
  if (packJson.pack_id !== packId) differs('pack_id');
  if (!isDeepStrictEqual(packJson.detector, pack.detector)) differs('detector');
  if (!isDeepStrictEqual(packJson.recognizer, pack.recognizer)) differs('recognizer');
  const expected = Object.fromEntries(
    packFileNames(pack).map((name) => {
      const { sha256, size } = getFile(catalog, name);
      return [name, { sha256, size }];
    }),
  );
  if (!isDeepStrictEqual(packJson.files, expected)) differs('file list');
  return problems;
}

async function checkFile(
  dir: string,
  name: string,
  spec: { sha256: string; size: number },
): Promise<Digest | PackProblem> {
  let digest: Digest;
  try {
    digest = await hashFile(join(dir, name));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { file: name, problem: code === 'ENOENT' ? 'missing' : `unreadable (${code ?? (err as Error).message})` };
  }
  if (digest.size !== spec.size) return { file: name, problem: `size is ${digest.size}, expected ${spec.size}` };
  if (digest.sha256 !== spec.sha256)
    return { file: name, problem: `sha256 is ${digest.sha256}, expected ${spec.sha256}` };
  return digest;
}

export function describeProblems(problems: PackProblem[]): string {
  return problems.map((p) => `${p.file}: ${p.problem}`).join('; ');
}

/** Throws the error a caller should surface when a pack is not usable as installed. */
export function assertInstalled(
  state: PackState,
  modelsDir: string,
): asserts state is Extract<PackState, { status: 'installed' }> {
  const command = installCommand(state.id, modelsDir);
  if (state.status === 'not_installed') {
    throw Errors.modelNotInstalled(state.id, state.dir, command);
  }
  if (state.status === 'corrupt') {
    throw Errors.modelInvalid(state.id, state.dir, state.problems, describeProblems(state.problems), command);
  }
}

/** For the daemon at startup: the verified pack, or an ApiError saying how to fix it. Never downloads. */
export async function loadInstalledPack(
  modelsDir: string,
  packId: string,
  catalog?: Catalog | string,
): Promise<InstalledPack> {
  const resolved = await resolveCatalog(catalog);
  const state = await inspectPack(resolved, modelsDir, packId);
  assertInstalled(state, modelsDir);
  const pack = getPack(resolved, packId);
  const withFile = <T extends { file: string }>(spec: T): T & { path: string; sha256: string } => ({
    ...spec,
    path: join(state.dir, spec.file),
    sha256: getFile(resolved, spec.file).sha256,
  });
  return {
    id: packId,
    dir: state.dir,
    detector: withFile(pack.detector),
    recognizer: withFile(pack.recognizer),
    license: state.packJson.license,
    licenses: state.packJson.licenses ?? [{ ...state.packJson.license, files: packFileNames(pack) }],
    installed_at: state.packJson.installed_at,
    ...(pack.recommended_threshold ? { recommended_threshold: pack.recommended_threshold } : {}),
  };
}
