import { chownSync, existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../config/load.js';
import { coerceSettingValue, parseSettingKey, settingRule } from '../config/settings.js';
import { describeSettings, type SettingEntry } from '../config/settingsService.js';
import { writeSettings } from '../config/settingsWriter.js';
import { Errors } from '../contract/errors.js';
import { openDatabase } from '../store/database.js';
import { dataDirHolder } from '../store/dataDirLock.js';
import { AuditLog, cliActor } from '../users/auditLog.js';
import { parseCommandLine } from './commandLine.js';
import type { CliIo } from './workspaces.js';

export const CONFIG_USAGE = `Usage:
  vigil config get [KEY]          the configured value of KEY (dotted: mqtt.url), or of every key, with its
                                  source (file, env, default) and whether a change applies live or at restart
  vigil config set KEY VALUE      validate VALUE and save it in server.toml (comments kept), then tell a
                                  running daemon to apply it (SIGHUP); says when a restart is needed
  vigil config unset KEY          remove KEY from server.toml: its default applies again
Values: true/false, numbers, strings as they are, arrays as JSON ('[[96,96],[640,640]]'); monitors.pipeline
also takes a pipeline id (software, jetson, vaapi, v4l2).
Common: --config FILE (default VIGIL_CONFIG, else /etc/vigil/server.toml), --json, -h/--help
The daemon's PATCH /v1/settings is the same writer: the same keys, the same validation.
`;

/** How a set/unset reached the service. */
export type Delivery = { running: true; pid: number; signalled: boolean; error: string | null } | { running: false };

/** Tells the daemon holding `dataDir` to read its config file again (SIGHUP), if one runs. */
export function signalDaemon(dataDir: string): Delivery {
  const pid = dataDirHolder(dataDir);
  if (pid === null) return { running: false };
  if (pid < 0) return { running: true, pid, signalled: false, error: 'its pid file is missing' };
  try {
    process.kill(pid, 'SIGHUP');
    return { running: true, pid, signalled: true, error: null };
  } catch (e) {
    return { running: true, pid, signalled: false, error: (e as NodeJS.ErrnoException).code ?? String(e) };
  }
}

/**
 * The change in the daemon's audit log (source cli), as PATCH /v1/settings would be: only into a database
 * that exists (a box never started has no log yet). Run as root, the database's side files keep their owner
 * (SQLite creates -wal and -shm when no daemon has them open), so the service can still open it.
 */
export function auditConfigChange(dataDir: string, detail: Record<string, unknown>): boolean {
  const file = join(dataDir, 'vigil.db');
  if (!existsSync(file)) return false;
  const owner = statSync(file);
  const db = openDatabase(dataDir, undefined, { lock: false });
  try {
    new AuditLog(db.db).record({
      source: 'cli',
      actor_type: 'cli',
      actor: cliActor(),
      action: 'patch_settings_v1_settings_patch',
      detail,
    });
  } finally {
    db.close();
    for (const f of [file, `${file}-wal`, `${file}-shm`])
      if (existsSync(f) && statSync(f).uid !== owner.uid) chownSync(f, owner.uid, owner.gid);
  }
  return true;
}

/** One line per changed key: saved, and applied by the daemon or waiting for a (re)start. */
export function describeDelivery(key: string, delivery: Delivery): string {
  const live = settingRule(key).apply === 'live';
  if (!delivery.running) return `${key}: saved; the service is not running and uses it when it starts`;
  if (!delivery.signalled)
    return `${key}: saved; the running daemon (pid ${delivery.pid}) could not be told (${delivery.error}): run \`systemctl reload vigil\`${live ? '' : ' and restart it'}`;
  return live
    ? `${key}: saved and applied by the running daemon (pid ${delivery.pid})`
    : `${key}: saved; restart required: it is read at start (systemctl restart vigil)`;
}

const shown = (v: unknown) => (v === null || v === undefined ? '(absent)' : JSON.stringify(v));

function entryLine(s: SettingEntry): string {
  const value = s.secret ? (s.is_set ? '(set, hidden)' : '(absent)') : shown(s.value);
  const notes = [s.source === 'env' ? `env ${s.env}` : s.source, s.editable ? s.apply : 'not editable here'];
  return `${s.key} = ${value}  (${notes.join(', ')})\n`;
}

/** `vigil config get|set|unset`: the settings writer from a shell, the daemon running or not. */
export async function runConfigCommand(
  argv: string[],
  configFile: string | undefined,
  io: CliIo = process,
): Promise<number> {
  // A negative number is a value, not an option (`vigil config set detection.threshold -1` is refused by the
  // schema, not by the parser): it passes the parser with a leading space, which is taken off again.
  const NEGATIVE = /^-\d/;
  const parsed = parseCommandLine('config', {
    args: argv.map((a) => (NEGATIVE.test(a) ? ` ${a}` : a)),
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const { values } = parsed;
  const positionals = parsed.positionals.map((p) => (NEGATIVE.test(p.slice(1)) && p[0] === ' ' ? p.slice(1) : p));
  const [action, ...rest] = positionals;
  if (values.help || !action) {
    io.stdout.write(CONFIG_USAGE);
    return values.help ? 0 : 2;
  }
  const loaded = loadConfig(values.config ?? configFile);
  const file = loaded.file ? resolve(loaded.file) : null;
  const out = (json: unknown, text: string) =>
    io.stdout.write(values.json ? `${JSON.stringify(json, null, 2)}\n` : text);
  switch (action) {
    case 'get': {
      if (rest.length > 1) throw Errors.usageError('usage: vigil config get [KEY]');
      const view = await describeSettings(file, loaded.config, process.env);
      if (rest.length === 1) {
        const { key } = parseSettingKey(rest[0]!);
        const entry = view.settings.find((s) => s.key === key)!;
        out(entry, values.json ? '' : entryLine(entry));
        return 0;
      }
      out(
        view,
        `# ${file ?? 'no config file: built-in defaults'}${view.problem ? ` (${view.problem.code}: ${view.problem.message})` : ''}\n${view.settings.map(entryLine).join('')}`,
      );
      return 0;
    }
    case 'set':
    case 'unset': {
      if (action === 'set' && rest.length !== 2) throw Errors.usageError('usage: vigil config set KEY VALUE');
      if (action === 'unset' && rest.length !== 1) throw Errors.usageError('usage: vigil config unset KEY');
      const { key } = parseSettingKey(rest[0]!);
      const value = action === 'set' ? coerceSettingValue(key, rest[1]!) : null;
      const written = await writeSettings(file, { [key]: value }, { env: process.env });
      const changed = written.after !== written.before;
      const dataDir = loaded.config.server.data_dir;
      if (changed) auditConfigChange(dataDir, { keys: [key], config_file: file });
      const delivery: Delivery = changed ? signalDaemon(dataDir) : { running: false };
      const line = changed ? describeDelivery(key, delivery) : `${key}: unchanged (the file already has that value)`;
      const restartRequired = changed && delivery.running && settingRule(key).apply === 'restart';
      out(
        {
          key,
          value: written.changes.get(key),
          config_file: file,
          changed,
          daemon: delivery.running ? { pid: delivery.pid, signalled: delivery.signalled, error: delivery.error } : null,
          restart_required: restartRequired,
          message: line,
        },
        `${line}\n`,
      );
      return 0;
    }
    default:
      throw Errors.usageError(`unknown action "${action}" (see vigil config --help)`);
  }
}
