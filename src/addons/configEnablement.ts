/**
 * Turning the liveness addon on in server.toml: append "liveness" to `inference.addons` and
 * `addons.auto_download`, keeping comments, formatting, inline and dotted tables and every other value;
 * the file is replaced atomically and only if nobody changed it meanwhile.
 */
import { constants } from 'node:fs';
import { access, lstat, open, readFile, realpath, rename, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parse as parsePreserving, patch } from '@decimalturn/toml-patch';
import { parse as parseToml } from 'smol-toml';
import { ConfigSchema } from '../config/schema.js';
import { type ApiError, Errors } from '../contract/errors.js';
import { fsyncDir, removeQuietly, tempPathFor } from '../models/fsutil.js';

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

/** Parses and validates a config text as the daemon would at startup; the message names the problem. */
export function configTextProblem(text: string): string | null {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (e) {
    return `not valid TOML: ${(e as Error).message.split('\n')[0]}`;
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (parsed.success) return null;
  const issue = parsed.error.issues[0]!;
  return `${issue.path.join('.') || 'config'}: ${issue.message}`;
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

/** A single-file bind mount (Docker `-v server.toml:/etc/...`): rename over it fails with EBUSY. */
async function isMountPoint(path: string): Promise<boolean> {
  const info = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const unescape = (s: string) => s.replace(/\\(\d{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
  return info.split('\n').some((line) => unescape(line.split(' ')[4] ?? '') === path);
}

const writable = (path: string) =>
  access(path, constants.W_OK).then(
    () => true,
    () => false,
  );

/** Why the config file cannot be edited by the service, or null. */
export async function configFileProblem(file: string | null): Promise<ApiError | null> {
  if (!file)
    return Errors.configFileMissing(
      'The daemon was started without a config file, so there is nothing to save the setting in.',
    );
  const info = await lstat(file).catch(() => null);
  if (!info) return Errors.configFileMissing(`The config file ${file} does not exist.`);
  if (!info.isFile())
    return Errors.configFileNotRegular(
      `The config file ${file} is not a regular file (a symlink or something else); edit it by hand.`,
    );
  if (await isMountPoint(await realpath(file)))
    return Errors.configFileMount(
      `The config file ${file} is a single-file mount and cannot be replaced atomically; mount its directory instead.`,
    );
  if (!(await writable(file)) || !(await writable(dirname(file))))
    return Errors.configNotWritable(`The config file ${file} or its directory is not writable by the service.`);
  const problem = configTextProblem(await readFile(file, 'utf8'));
  if (problem)
    return Errors.addonConfigInvalid(`The config file ${file} is invalid (${problem}); fix it first.`, { status: 409 });
  return null;
}

/**
 * Writes `next` over `file` if the file still holds `expected`: temp file in the same directory with the
 * same mode, fsync, re-validate, rename, fsync the directory. `stopping` is checked right before the
 * rename so a shutdown can never publish a half-confirmed change.
 */
export async function replaceConfig(
  file: string,
  expected: string,
  next: string,
  stopping: () => boolean,
): Promise<void> {
  const problem = configTextProblem(next);
  if (problem) throw Errors.addonConfigInvalid(`The edited config would not be valid (${problem}).`);
  const mode = (await stat(file)).mode & 0o7777;
  const temp = tempPathFor(file, 'tmp');
  try {
    const fh = await open(temp, 'w', mode);
    try {
      await fh.writeFile(next, 'utf8');
      await fh.chmod(mode);
      await fh.sync();
    } finally {
      await fh.close();
    }
    if (configTextProblem(await readFile(temp, 'utf8')) !== null)
      throw new Error('the written copy does not read back');
    if ((await readFile(file, 'utf8')) !== expected) {
      throw Errors.addonConfigSaveFailed(
        'The config file changed while liveness was being prepared; nothing was saved. Retry.',
        { status: 409 },
      );
    }
    if (stopping()) throw Errors.serverStopping('the config was not changed.');
    await rename(temp, file);
    await fsyncDir(dirname(file));
  } finally {
    await removeQuietly(temp);
  }
}
