/**
 * The config file as the service edits it (the settings API, `vigil config set`, the liveness enable job):
 * checks that it can be replaced, and the atomic replacement itself, only if nobody changed it meanwhile.
 */
import { constants } from 'node:fs';
import { access, lstat, open, readFile, realpath, rename, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { type ApiError, Errors } from '../contract/errors.js';
import { fsyncDir, removeQuietly, tempPathFor } from './durableFile.js';
import { ConfigSchema } from './schema.js';
import { secretsIn } from './settings.js';

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
  const key = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]].join('.') : issue.path.join('.');
  return `${key || 'config'}: ${issue.message}`;
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

/**
 * Why the config file cannot be edited by this process, or null. `invalid` makes the error for a file that
 * does not validate now (the settings API: config_file_invalid; the liveness job keeps its addon_config_invalid).
 */
export async function configFileProblem(
  file: string | null,
  invalid: (message: string) => ApiError = Errors.configFileInvalid,
): Promise<ApiError | null> {
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
    return Errors.configNotWritable(`The config file ${file} or its directory is not writable by this user.`);
  const problem = configTextProblem(await readFile(file, 'utf8'));
  if (problem) return invalid(`The config file ${file} is invalid (${problem}); fix it first.`);
  return null;
}

export interface ReplaceOptions {
  /** Checked right before the rename, so a shutdown never publishes a half-confirmed change. */
  stopping: () => boolean;
  /** The error for `next` not validating (never expected: callers validate first). */
  invalid: (message: string) => ApiError;
  /** The error for a file that no longer holds `expected`. */
  changed: () => ApiError;
}

/**
 * The mode the new file gets: the old one's, without any bits for other users when the file holds a
 * credential (the group keeps its access: the packaged file is root:vigil 0660 and the service reads it).
 */
export function replacementMode(oldMode: number, text: string): number {
  const mode = oldMode & 0o7777;
  let raw: Record<string, unknown> = {};
  try {
    raw = parseToml(text) as Record<string, unknown>;
  } catch {
    /* validated before; nothing to judge */
  }
  return secretsIn(raw).length ? mode & ~0o007 : mode;
}

/**
 * Writes `next` over `file` if the file still holds `expected`: a temp file in the same directory with the
 * old file's mode (see replacementMode) and owner (as far as this user may: root keeps root:vigil; the
 * service keeps the group and becomes the owner), fsync, re-validate, rename, fsync the directory.
 */
export async function replaceConfigFile(
  file: string,
  expected: string,
  next: string,
  o: ReplaceOptions,
): Promise<void> {
  const problem = configTextProblem(next);
  if (problem) throw o.invalid(`The edited config would not be valid (${problem}).`);
  const info = await stat(file);
  const mode = replacementMode(info.mode, next);
  const temp = tempPathFor(file, 'tmp');
  try {
    const fh = await open(temp, 'wx', mode);
    try {
      await fh.writeFile(next, 'utf8');
      await fh.chmod(mode);
      await keepOwner(fh, info.uid, info.gid);
      await fh.sync();
    } finally {
      await fh.close();
    }
    if (configTextProblem(await readFile(temp, 'utf8')) !== null)
      throw new Error('the written copy does not read back');
    if ((await readFile(file, 'utf8')) !== expected) throw o.changed();
    if (o.stopping()) throw Errors.serverStopping('the config was not changed.');
    await rename(temp, file);
    await fsyncDir(dirname(file));
  } finally {
    await removeQuietly(temp);
  }
}

/** The old owner and group where this user may set them (chown needs root; chgrp to one of our groups does not). */
async function keepOwner(fh: import('node:fs/promises').FileHandle, uid: number, gid: number): Promise<void> {
  if (process.getuid?.() === uid && process.getgid?.() === gid) return;
  try {
    await fh.chown(uid, gid);
  } catch {
    await fh.chown(-1, gid).catch(() => undefined);
  }
}
