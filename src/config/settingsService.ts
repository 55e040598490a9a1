/**
 * The running daemon's settings: what it runs with and where each value came from (GET /v1/settings), and
 * changes (PATCH /v1/settings, a SIGHUP after `vigil config set` or a hand edit) applied without a restart
 * where the daemon registered an applier for the key, else reported as waiting for a restart.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseToml } from 'smol-toml';
import { isVigilError, type ApiError } from '../contract/errors.js';
import { configFileProblem } from './configFile.js';
import { configFromText, envOverride, type LoadedConfig } from './load.js';
import type { VigilConfig } from './schema.js';
import {
  sameValue,
  setValueAt,
  settingKeys,
  settingRule,
  valueAt,
  withoutCredentials,
  type SettingApply,
} from './settings.js';
import { writeSettings, type SettingChanges } from './settingsWriter.js';

/** Applies a group of live keys to the running daemon. */
export interface SettingsApplier {
  /** The live keys it applies: dotted keys, or prefixes ending in a dot (`mqtt.`); a group of LIVE_GROUPS. */
  keys: readonly string[];
  /** Takes the new effective configuration; `changed` are the keys of its own that differ from the running ones. */
  apply(next: VigilConfig, changed: string[]): void | Promise<void>;
}

/** What happened to one key of a change. */
export interface SettingOutcome {
  applied: boolean;
  restart_required: boolean;
  reason: string | null;
}

export interface SettingEntry {
  key: string;
  section: string;
  description: string;
  /** JSON Schema of the value (type, enum, minimum/maximum, …), for a form. */
  schema: Record<string, unknown>;
  default: unknown;
  /** The value the daemon runs with (null for a secret, see `is_set`; URLs without credentials). */
  value: unknown;
  source: 'file' | 'env' | 'default';
  /** The environment variable that overrides the key, when it is set. */
  env: string | null;
  secret: boolean;
  is_set: boolean;
  editable: boolean;
  apply: SettingApply;
  /** Why it is not editable here. */
  reason: string | null;
  /** The file (and environment) hold another value than the running one: it waits for a restart. */
  restart_pending: boolean;
  configured_value?: unknown;
}

export interface SettingsView {
  config_file: string | null;
  /** Whether changes can be saved (else `problem` says why). */
  writable: boolean;
  problem: { code: string; message: string } | null;
  settings: SettingEntry[];
}

export interface SettingsChange {
  results: Record<string, SettingOutcome>;
  restart_required: boolean;
}

interface ChangeLog {
  info(o: object, msg: string): void;
  warn(o: object, msg: string): void;
  error(o: object, msg: string): void;
}

/**
 * Every key with the value `running` has, where it comes from and what a change does; the file is read
 * again, so a value waiting for a restart shows as restart_pending (`vigil config get` passes the file's
 * own configuration as `running`).
 */
export async function describeSettings(
  file: string | null,
  running: VigilConfig,
  env: NodeJS.ProcessEnv,
): Promise<SettingsView> {
  const problem = await configFileProblem(file);
  let raw: Record<string, unknown> = {};
  let configured: VigilConfig | null = null;
  if (file) {
    const text = await readFile(file, 'utf8').catch(() => null);
    if (text !== null) {
      try {
        raw = parseToml(text) as Record<string, unknown>;
        configured = configFromText(text, file, env);
      } catch {
        // An invalid file: `problem` says so; the running values are shown.
      }
    }
  }
  const settings: SettingEntry[] = [];
  for (const k of settingKeys().values()) {
    const rule = settingRule(k.key);
    const envVar = envOverride(k.key, env);
    const value = valueAt(running, k.key);
    const next = configured ? valueAt(configured, k.key) : value;
    const pending = !sameValue(value, next);
    const shown = (v: unknown) => (rule.secret ? null : typeof v === 'string' ? withoutCredentials(v) : (v ?? null));
    settings.push({
      key: k.key,
      section: k.section,
      description: k.description,
      schema: k.schema,
      default: k.default,
      value: shown(value),
      source: envVar ? 'env' : valueAt(raw, k.key) !== undefined ? 'file' : 'default',
      env: envVar,
      secret: rule.secret,
      is_set: value !== undefined && value !== null,
      editable: rule.editable,
      apply: rule.apply,
      reason: rule.why,
      restart_pending: pending,
      ...(pending ? { configured_value: shown(next) } : {}),
    });
  }
  return {
    config_file: file,
    writable: problem === null,
    problem: problem ? { code: problem.code, message: problem.message } : null,
    settings,
  };
}

const covers = (pattern: string, key: string) => (pattern.endsWith('.') ? key.startsWith(pattern) : key === pattern);
const RESTART_REASON = 'read at start: restart the service to use it (systemctl restart vigil)';

export class SettingsService {
  private queue: Promise<unknown> = Promise.resolve();
  /** The configuration the file gave at the last apply (what is new in the file is logged and told once). */
  private lastSeen: VigilConfig;
  private readonly listeners: ((e: { keys: string[]; via: 'api' | 'reload' }) => void)[] = [];

  constructor(
    private readonly loaded: LoadedConfig,
    private readonly appliers: SettingsApplier[],
    private readonly o: { env: NodeJS.ProcessEnv; log: ChangeLog; stopping: () => boolean },
  ) {
    // A key the catalogue calls live must have an applier, or the API would claim what it does not do.
    const orphans = [...settingKeys().keys()].filter((k) => settingRule(k).apply === 'live' && !this.applierOf(k));
    if (orphans.length) throw new Error(`live settings without an applier: ${orphans.join(', ')}`);
    this.lastSeen = structuredClone(loaded.config);
  }

  /** Told of every change applied or written (the audit log). */
  onChange(listener: (e: { keys: string[]; via: 'api' | 'reload' }) => void): void {
    this.listeners.push(listener);
  }

  private applierOf(key: string): SettingsApplier | undefined {
    return this.appliers.find((a) => a.keys.some((p) => covers(p, key)));
  }

  /** One change at a time (two PATCHes, or a PATCH and a SIGHUP, never interleave). */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The running values, their defaults and sources, and what a change of each does. */
  view(): Promise<SettingsView> {
    return describeSettings(this.loaded.file, this.loaded.config, this.o.env);
  }

  /** PATCH: validates and writes every change (or none), then applies what can be applied now. */
  patch(changes: SettingChanges): Promise<SettingsChange> {
    return this.serial(async () => {
      const written = await writeSettings(this.loaded.file, changes, { env: this.o.env, stopping: this.o.stopping });
      const outcomes = await this.applyFile('api');
      const results: Record<string, SettingOutcome> = {};
      for (const key of written.changes.keys()) {
        const env = envOverride(key, this.o.env);
        results[key] = env
          ? {
              applied: false,
              restart_required: false,
              reason: `${env} is set in the service's environment and takes precedence over the file`,
            }
          : (outcomes.get(key) ?? { applied: true, restart_required: false, reason: null });
      }
      return { results, restart_required: Object.values(results).some((r) => r.restart_required) };
    });
  }

  /** SIGHUP: reads the file again and applies what changed (an invalid file changes nothing and is logged). */
  reload(): Promise<Map<string, SettingOutcome>> {
    return this.serial(() => this.applyFile('reload'));
  }

  /**
   * Compares the file (with the environment) to the running configuration: live keys go to their appliers
   * and the running configuration takes their values; the others are reported as waiting for a restart.
   */
  private async applyFile(via: 'api' | 'reload'): Promise<Map<string, SettingOutcome>> {
    const outcomes = new Map<string, SettingOutcome>();
    const file = this.loaded.file;
    if (!file) return outcomes;
    let next: VigilConfig;
    try {
      next = configFromText(await readFile(file, 'utf8'), file, this.o.env);
    } catch (e) {
      this.o.log.error(
        { config_file: file, err: isVigilError(e) ? e.message : String(e) },
        'the config file was not applied: it does not validate (the service keeps running with its settings)',
      );
      throw e;
    }
    const running = this.loaded.config;
    const changed = [...settingKeys().keys()].filter((k) => !sameValue(valueAt(running, k), valueAt(next, k)));
    const groups = new Map<SettingsApplier, string[]>();
    for (const key of changed) {
      const applier = settingRule(key).apply === 'live' ? this.applierOf(key) : undefined;
      if (applier) groups.set(applier, [...(groups.get(applier) ?? []), key]);
      else outcomes.set(key, { applied: false, restart_required: true, reason: RESTART_REASON });
    }
    for (const [applier, keys] of groups) {
      try {
        await applier.apply(next, keys);
        for (const k of keys) setValueAt(running as never, k, structuredClone(valueAt(next, k)));
        for (const k of keys) outcomes.set(k, { applied: true, restart_required: false, reason: null });
      } catch (e) {
        const why = isVigilError(e) ? (e as ApiError).message : e instanceof Error ? e.message : String(e);
        this.o.log.error({ keys, err: why }, 'a setting could not be applied; it is used at the next start');
        for (const k of keys)
          outcomes.set(k, {
            applied: false,
            restart_required: true,
            reason: `applying it failed (${why}); the file has the new value, a restart uses it`,
          });
      }
    }
    const fresh = [...settingKeys().keys()].filter((k) => !sameValue(valueAt(this.lastSeen, k), valueAt(next, k)));
    this.lastSeen = next;
    if (fresh.length) {
      const applied = fresh.filter((k) => outcomes.get(k)?.applied);
      const waiting = fresh.filter((k) => outcomes.get(k)?.restart_required);
      this.o.log.info({ via, applied, restart_required: waiting }, 'settings changed');
      for (const l of this.listeners) l({ keys: fresh, via });
    }
    return outcomes;
  }
}
