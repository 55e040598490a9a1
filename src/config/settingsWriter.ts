/**
 * The one writer of settings into server.toml, for the settings API, the web UI (through the API) and
 * `vigil config set`: whitelisted keys only, each change validated by the schema the daemon starts with
 * (and the environment's rules, e.g. metrics auth "token" needs a token) before anything is written, the
 * file edited in place keeping its comments and layout (@decimalturn/toml-patch, as the liveness enable job
 * does), then replaced atomically (configFile.ts). All or nothing: one bad value writes nothing.
 */
import { readFile } from 'node:fs/promises';
import { parse as parsePreserving, patch } from '@decimalturn/toml-patch';
import { parse as parseToml } from 'smol-toml';
import { type ApiError, Errors, isVigilError } from '../contract/errors.js';
import { configFileProblem, replaceConfigFile } from './configFile.js';
import { configFromText } from './load.js';
import { expandPipeline } from './pipelinePresets.js';
import { ConfigSchema } from './schema.js';
import { parseSettingKey, setValueAt, settingRule } from './settings.js';

/** One change: a value, or null to remove the key from the file (its default applies again). */
export type SettingChanges = Record<string, unknown>;

/** The changes checked against the whitelist and normalised (a pipeline preset id becomes its template). */
export function checkedChanges(changes: SettingChanges): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const entries = Object.entries(changes);
  if (!entries.length) throw Errors.settingsInvalid('settings', 'give at least one key to change');
  for (const [raw, value] of entries) {
    const { key } = parseSettingKey(raw);
    const rule = settingRule(key);
    if (!rule.editable) throw Errors.settingNotEditable(key, rule.why!);
    out.set(key, key === 'monitors.pipeline' && typeof value === 'string' ? expandPipeline(value) : value);
  }
  return out;
}

/** The config text with the changes applied, comments, order and formatting kept. Pure. */
export function editConfigText(text: string, changes: Map<string, unknown>): string {
  const doc = parsePreserving(text) as Record<string, unknown>;
  for (const [key, value] of changes) setValueAt(doc, key, value === null ? undefined : value);
  try {
    return patch(text, doc);
  } catch (e) {
    const key = [...changes.keys()].join(', ');
    throw Errors.settingsInvalid(key, `cannot be written as TOML (${(e as Error).message.split('\n')[0]})`);
  }
}

/**
 * Why a config text would not start the daemon, as settings_invalid naming the key (every schema issue in
 * details.issues), or null. `env` is the environment of the process that will read it.
 */
export function settingsTextProblem(text: string, file: string | null, env: NodeJS.ProcessEnv): ApiError | null {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (e) {
    return Errors.settingsInvalid('config', `not valid TOML: ${(e as Error).message.split('\n')[0]}`);
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({
      key: (i.code === 'unrecognized_keys' ? [...i.path, i.keys[0]] : i.path).join('.'),
      message: i.message,
    }));
    return Errors.settingsInvalid(issues[0]!.key, issues[0]!.message, issues);
  }
  try {
    configFromText(text, file, env);
  } catch (e) {
    if (isVigilError(e) && e.code === 'config_invalid')
      return Errors.settingsInvalid(String(e.details.key ?? 'config'), e.message);
    throw e;
  }
  return null;
}

export interface WriteResult {
  /** The keys written, normalised (monitors.pipeline presets expanded), null for removed ones. */
  changes: Map<string, unknown>;
  before: string;
  after: string;
}

/**
 * Validates the changes and writes them into `file`, or throws with nothing written: setting_unknown,
 * setting_not_editable, settings_invalid, config_file_* / config_not_writable, settings_conflict.
 */
export async function writeSettings(
  file: string | null,
  raw: SettingChanges,
  o: { env: NodeJS.ProcessEnv; stopping?: () => boolean },
): Promise<WriteResult> {
  const changes = checkedChanges(raw);
  const problem = await configFileProblem(file);
  if (problem) throw problem;
  const before = await readFile(file!, 'utf8');
  const after = editConfigText(before, changes);
  const invalid = settingsTextProblem(after, file, o.env);
  if (invalid) throw invalid;
  if (after !== before)
    await replaceConfigFile(file!, before, after, {
      stopping: o.stopping ?? (() => false),
      invalid: (message) => Errors.settingsInvalid('config', message),
      changed: () => Errors.settingsConflict(),
    });
  return { changes, before, after };
}
