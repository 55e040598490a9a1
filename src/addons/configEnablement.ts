/**
 * Turning the liveness addon on in server.toml: append "liveness" to `inference.addons` and
 * `addons.auto_download`, keeping comments, formatting, inline and dotted tables and every other value;
 * the file is replaced atomically and only if nobody changed it meanwhile.
 */
import { readFile } from 'node:fs/promises';
import { parse as parsePreserving, patch } from '@decimalturn/toml-patch';
import { parse as parseToml } from 'smol-toml';
import { configFileProblem as editableProblem, replaceConfigFile } from '../config/configFile.js';
import { ConfigSchema } from '../config/schema.js';
import { type ApiError, Errors } from '../contract/errors.js';

export { configTextProblem } from '../config/configFile.js';

type TomlTable = Record<string, unknown>;

const table = (v: unknown): TomlTable => (v && typeof v === 'object' && !Array.isArray(v) ? (v as TomlTable) : {});
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The config text with the addon in both lists (unchanged when it already is). Pure. */
export function withAddonEnabled(text: string, addon: string): string {
  const doc = parsePreserving(text) as TomlTable;
  const inference = table(doc.inference);
  const addons = table(doc.addons);
  const running = list(inference.addons),
    download = list(addons.auto_download);
  if (running.includes(addon) && download.includes(addon)) return text;
  if (!running.includes(addon)) inference.addons = [...running, addon];
  if (!download.includes(addon)) addons.auto_download = [...download, addon];
  doc.inference = inference;
  doc.addons = addons;
  return patch(text, doc);
}

/** Whether the on-disk config enables the addon for the next start (false when unreadable or invalid). */
export async function configuredAddons(file: string | null): Promise<string[]> {
  if (!file) return [];
  try {
    const parsed = ConfigSchema.safeParse(parseToml(await readFile(file, 'utf8')));
    return parsed.success ? parsed.data.inference.addons : [];
  } catch {
    return [];
  }
}

/** Why the config file cannot be edited by the service, or null (an invalid file: addon_config_invalid, 409). */
export function configFileProblem(file: string | null): Promise<ApiError | null> {
  return editableProblem(file, (message) => Errors.addonConfigInvalid(message, { status: 409 }));
}

/**
 * Writes `next` over `file` if the file still holds `expected` (configFile.ts: same mode and owner, fsync,
 * re-validate, rename). `stopping` is checked right before the rename so a shutdown can never publish a
 * half-confirmed change.
 */
export function replaceConfig(file: string, expected: string, next: string, stopping: () => boolean): Promise<void> {
  return replaceConfigFile(file, expected, next, {
    stopping,
    invalid: (message) => Errors.addonConfigInvalid(message),
    changed: () =>
      Errors.addonConfigSaveFailed(
        'The config file changed while liveness was being prepared; nothing was saved. Retry.',
        {
          status: 409,
        },
      ),
  });
}
