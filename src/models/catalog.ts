/**
 * The model catalog: `models/manifest.json` parsed and cross-checked. It is the contract between the
 * installer (what to fetch, how to verify it) and the daemon (how to preprocess for each model).
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { Errors } from '../contract/errors.js';

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'expected a lowercase hex SHA-256');
const HttpUrl = z.url({ protocol: /^https?$/ });
/** A plain file name: the installed layout is flat, so no directories or dot tricks. */
const FileName = z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'expected a plain file name');
const PackId = z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'expected a pack id like edge_s');
const ChannelOrder = z.enum(['rgb', 'bgr']);

export const UrlSourceSchema = z.strictObject({ type: z.literal('url'), url: HttpUrl });

export const ArchiveSourceSchema = z.strictObject({
  type: z.literal('archive'),
  url: HttpUrl,
  format: z.literal('zip'),
  member: z.string().min(1),
  archive_sha256: Sha256.optional(),
});

export const NpmSourceSchema = z.strictObject({
  type: z.literal('npm'),
  package: z.string().regex(/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/, 'expected an npm package name'),
  version: z.string().regex(/^\d+\.\d+\.\d+([-+][\w.+-]*)?$/, 'expected an exact version'),
  /** Path inside the .tgz, e.g. `package/model/fr_feature.onnx`. */
  path: z.string().min(1),
});

export const SourceSchema = z.discriminatedUnion('type', [UrlSourceSchema, ArchiveSourceSchema, NpmSourceSchema]);

export const LicenseSchema = z.strictObject({
  name: z.string().min(1),
  url: z.string().min(1),
  commercial_use: z.boolean(),
  notice: z.string().min(1),
});

export const FileSpecSchema = z.strictObject({
  sha256: Sha256,
  size: z.int().positive(),
  license: z.string().min(1),
  sources: z.array(SourceSchema),
});

export const DetectorSpecSchema = z.strictObject({
  file: FileName,
  kind: z.enum(['scrfd', 'yunet']),
  channel_order: ChannelOrder,
  mean: z.number(),
  std: z.number().positive(),
  preprocessing_version: z.string().min(1),
});

export const RecognizerSpecSchema = z.strictObject({
  file: FileName,
  kind: z.literal('arcface'),
  input_size: z.tuple([z.int().positive(), z.int().positive()]),
  channel_order: ChannelOrder,
  mean: z.number(),
  std: z.number().positive(),
  embedding_dimension: z.int().positive(),
  preprocessing_version: z.string().min(1),
});

/** A pack's default match threshold, measured rather than inherited (bench/quality.ts). */
export const RecommendedThresholdSchema = z.strictObject({
  /** Cosine similarity; a match is similarity >= this value. */
  similarity: z.number().min(0).max(1),
  /** The false accept rate (per comparison) the value was read at. */
  far: z.number().gt(0).lt(1),
  /** How it was measured, so an operator can judge whether it applies to their cameras. */
  basis: z.string().min(1),
});

export const PackSpecSchema = z.strictObject({
  description: z.string(),
  detector: DetectorSpecSchema,
  recognizer: RecognizerSpecSchema,
  /** Absent for packs nobody could measure here: they keep the upstream default. */
  recommended_threshold: RecommendedThresholdSchema.optional(),
});

/** One model of a liveness addon: a box-context crop (Silent-Face style) classified into live/spoof classes. */
export const LivenessModelSpecSchema = z.strictObject({
  file: FileName,
  /** The crop is this many times the face box, centred on it. */
  context_scale: z.number().positive(),
  input_size: z.tuple([z.int().positive(), z.int().positive()]),
  channel_order: ChannelOrder,
  /** Index of the "real" class in the softmax output. */
  live_class: z.int().min(0),
});

export const AddonSpecSchema = z.strictObject({
  description: z.string(),
  /** Ensemble: the live score is the mean of the models' live-class probabilities. */
  models: z.array(LivenessModelSpecSchema).min(1),
});

export const ADDON_NAMES = ['liveness'] as const;
export type AddonName = (typeof ADDON_NAMES)[number];

export const CatalogSchema = z
  .strictObject({
    manifest_version: z.literal(1),
    default_pack: PackId,
    licenses: z.record(z.string().min(1), LicenseSchema),
    files: z.record(FileName, FileSpecSchema),
    packs: z.record(PackId, PackSpecSchema),
    addons: z.partialRecord(z.enum(ADDON_NAMES), AddonSpecSchema).default({}),
  })
  .superRefine(checkReferences);

export type UrlSource = z.infer<typeof UrlSourceSchema>;
export type ArchiveSource = z.infer<typeof ArchiveSourceSchema>;
export type NpmSource = z.infer<typeof NpmSourceSchema>;
export type Source = z.infer<typeof SourceSchema>;
export type License = z.infer<typeof LicenseSchema>;
export type FileSpec = z.infer<typeof FileSpecSchema>;
export type DetectorSpec = z.infer<typeof DetectorSpecSchema>;
export type RecognizerSpec = z.infer<typeof RecognizerSpecSchema>;
export type PackSpec = z.infer<typeof PackSpecSchema>;
export type RecommendedThreshold = z.infer<typeof RecommendedThresholdSchema>;
export type LivenessModelSpec = z.infer<typeof LivenessModelSpecSchema>;
/** A verified liveness model file on disk. */
export type LivenessModelFile = LivenessModelSpec & { path: string; sha256: string };
export type AddonSpec = z.infer<typeof AddonSpecSchema>;
export type Catalog = z.infer<typeof CatalogSchema>;

/** A licence with its catalog id, as shown to users and stored in pack.json. */
export type LicenseEntry = License & { id: string };

/** Names that must resolve inside the manifest (a dangling one would only fail mid-install). */
function checkReferences(
  catalog: {
    default_pack: string;
    licenses: Record<string, unknown>;
    files: Record<string, FileSpec>;
    packs: Record<string, PackSpec>;
    addons: Partial<Record<AddonName, AddonSpec>>;
  },
  ctx: z.RefinementCtx,
): void {
  if (!(catalog.default_pack in catalog.packs)) {
    ctx.addIssue({ code: 'custom', path: ['default_pack'], message: `unknown pack ${catalog.default_pack}` });
  }
  for (const [name, file] of Object.entries(catalog.files)) {
    if (!(file.license in catalog.licenses)) {
      ctx.addIssue({ code: 'custom', path: ['files', name, 'license'], message: `unknown licence ${file.license}` });
    }
  }
  for (const [id, pack] of Object.entries(catalog.packs)) {
    for (const role of ['detector', 'recognizer'] as const) {
      if (!(pack[role].file in catalog.files)) {
        ctx.addIssue({ code: 'custom', path: ['packs', id, role, 'file'], message: `unknown file ${pack[role].file}` });
      }
    }
  }
  for (const [name, addon] of Object.entries(catalog.addons)) {
    addon.models.forEach((m, i) => {
      if (!(m.file in catalog.files))
        ctx.addIssue({
          code: 'custom',
          path: ['addons', name, 'models', i, 'file'],
          message: `unknown file ${m.file}`,
        });
    });
  }
}

/** `<repo>/models/manifest.json`: two levels up from both src/models/ (tsx) and dist/models/ (build). */
export const DEFAULT_MANIFEST_PATH = fileURLToPath(new URL('../../models/manifest.json', import.meta.url));

export function parseCatalog(raw: unknown, origin = 'catalog'): Catalog {
  const parsed = CatalogSchema.safeParse(raw);
  if (!parsed.success) {
    throw Errors.modelCatalogInvalid(`${origin} is invalid: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

export async function loadCatalog(path: string = DEFAULT_MANIFEST_PATH): Promise<Catalog> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw Errors.modelCatalogInvalid(`cannot read model catalog ${path}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw Errors.modelCatalogInvalid(`model catalog ${path} is not JSON: ${(err as Error).message}`);
  }
  return parseCatalog(raw, path);
}

/** Accepts what callers have at hand: nothing (the bundled manifest), a path, or a parsed catalog. */
export async function resolveCatalog(catalog?: Catalog | string): Promise<Catalog> {
  if (catalog === undefined) return loadCatalog();
  if (typeof catalog === 'string') return loadCatalog(catalog);
  return catalog;
}

export function getPack(catalog: Catalog, packId: string): PackSpec {
  const pack = Object.hasOwn(catalog.packs, packId) ? catalog.packs[packId] : undefined;
  if (!pack) {
    throw Errors.modelPackUnknown(packId, Object.keys(catalog.packs));
  }
  return pack;
}

/** InsightFace Server's INSIGHTFACE_DEFAULT_THRESHOLD, calibrated for its ArcFace models. */
export const UPSTREAM_DEFAULT_THRESHOLD = 0.4;

export interface DefaultThreshold {
  value: number;
  source: 'config' | 'pack' | 'upstream';
}

/**
 * The default match threshold of compare and of new collections: `[inference] default_threshold` when
 * the operator set it, else the active pack's measured recommendation, else the upstream 0.4. A client
 * that sends a threshold is never affected by any of this.
 */
export function resolveDefaultThreshold(configured: number | undefined, pack: PackSpec | undefined): DefaultThreshold {
  if (configured !== undefined) return { value: configured, source: 'config' };
  if (pack?.recommended_threshold) return { value: pack.recommended_threshold.similarity, source: 'pack' };
  return { value: UPSTREAM_DEFAULT_THRESHOLD, source: 'upstream' };
}

/** The pack's distinct files, detector first (edge packs may share one file in both roles). */
export function packFileNames(pack: PackSpec): string[] {
  return [...new Set([pack.detector.file, pack.recognizer.file])];
}

export function getAddon(catalog: Catalog, name: AddonName): AddonSpec {
  const addon = catalog.addons[name];
  if (!addon) throw Errors.modelCatalogInvalid(`the model catalog defines no ${name} addon`);
  return addon;
}

export function getFile(catalog: Catalog, name: string): FileSpec {
  const file = catalog.files[name];
  if (!file) throw Errors.modelCatalogInvalid(`catalog has no file ${name}`);
  return file;
}

/** Distinct licences covering the pack's files, in file order. */
export function packLicenses(catalog: Catalog, pack: PackSpec): (LicenseEntry & { files: string[] })[] {
  const byId = new Map<string, LicenseEntry & { files: string[] }>();
  for (const name of packFileNames(pack)) {
    const id = getFile(catalog, name).license;
    const license = catalog.licenses[id];
    if (!license) throw Errors.modelCatalogInvalid(`catalog has no licence ${id}`);
    const entry = byId.get(id) ?? { id, ...license, files: [] };
    entry.files.push(name);
    byId.set(id, entry);
  }
  return [...byId.values()];
}

/**
 * The licence that governs the pack as a whole: the most restrictive one (no commercial use wins),
 * because a pack is only as usable as its most restricted file.
 */
export function governingLicense(licenses: LicenseEntry[]): LicenseEntry {
  const chosen = licenses.find((l) => !l.commercial_use) ?? licenses[0];
  if (!chosen) throw Errors.modelCatalogInvalid('pack has no licence');
  const { id, name, url, commercial_use, notice } = chosen;
  return { id, name, url, commercial_use, notice };
}

export function npmRegistry(env: NodeJS.ProcessEnv = process.env): string {
  const registry = env.npm_config_registry || env.NPM_CONFIG_REGISTRY || 'https://registry.npmjs.org/';
  return registry.replace(/\/+$/, '');
}

/** `<registry>/<pkg>/-/<basename>-<version>.tgz`; scoped packages keep the scope in the path only. */
export function npmTarballUrl(source: NpmSource, env: NodeJS.ProcessEnv = process.env): string {
  const basename = source.package.split('/').pop() ?? source.package;
  return `${npmRegistry(env)}/${source.package}/-/${basename}-${source.version}.tgz`;
}
