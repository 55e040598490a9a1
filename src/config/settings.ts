/**
 * The settings catalogue: every key of server.toml by its dotted name (`mqtt.url`), which of them the
 * settings API and `vigil config set` may change, and how a change takes effect (at once, or at the next
 * start). Pure rules and lookups; the writer (settingsWriter.ts) and the daemon's SettingsService use them.
 */
import { z } from 'zod';
import { Errors } from '../contract/errors.js';
import { ConfigSchema } from './schema.js';

/** How a change of a key reaches the running daemon. */
export type SettingApply = 'live' | 'restart';

export interface SettingRule {
  editable: boolean;
  apply: SettingApply;
  /** Never returned by the API (only whether it is set). */
  secret: boolean;
  /** Why the key cannot be changed here (not editable), for the error and the listing. */
  why: string | null;
}

/** A key of the configuration: its JSON Schema (type, range, enum, default, description) from the zod schema. */
export interface SettingKey {
  key: string;
  section: string;
  schema: Record<string, unknown>;
  description: string;
  /** The default, or null for an optional key that is absent by default. */
  default: unknown;
}

/** Credentials: environment or files only (never written by the API, never returned). */
const SECRETS = new Set([
  'auth.api_key',
  'mqtt.password',
  'metrics.token',
  'scrapers.forum.client_secret',
  'scrapers.places.cookie',
  'scrapers.places.proxy_url',
]);

/**
 * Keys a change applies to at once, by the group one applier of the daemon takes (src/cli/daemonSettings.ts;
 * SettingsService refuses to start when a live key has no applier). Prefixes end in a dot. Everything else
 * editable waits for a restart.
 */
export const LIVE_GROUPS = {
  log: ['server.log_level'],
  // Every key the publisher takes (mqttOptions), listed: a key added to [mqtt] is restart-only until its
  // applier takes it (the same for the groups below).
  mqtt: [
    'mqtt.enabled',
    'mqtt.url',
    'mqtt.client_id',
    'mqtt.topic_prefix',
    'mqtt.qos',
    'mqtt.retain',
    'mqtt.ca_file',
    'mqtt.cert_file',
    'mqtt.key_file',
    'mqtt.tls_verify',
    'mqtt.discovery',
    'mqtt.discovery_prefix',
    'mqtt.snapshots',
    'mqtt.queue_max_messages',
    'mqtt.reconnect_delay_seconds',
    'mqtt.max_reconnect_delay_seconds',
    'mqtt.keepalive_seconds',
  ],
  retention: [
    'events.max_age_days',
    'events.max_events',
    'events.max_snapshot_bytes',
    'events.retention_interval_seconds',
    'events.snapshots',
  ],
  detection: ['detection.threshold', 'detection.nms_threshold', 'detection.single_face_selection'],
  registration: [
    'registration.min_score',
    'registration.min_quality',
    'registration.min_face_size',
    'registration.max_pose_degrees',
  ],
  collectionDefaults: [
    'collections.save_face_crops',
    'collections.default_search_profile',
    'collections.default_capacity_rows',
    'collections.default_max_faces_per_person',
    'collections.default_load_policy',
    'collections.default_search_index',
  ],
  // What a monitor session takes from [monitors] (monitorSessionSettings): applied by restarting the streams.
  monitors: [
    'monitors.max_streams',
    'monitors.preview_fps',
    'monitors.jpeg_quality',
    'monitors.open_timeout_seconds',
    'monitors.read_timeout_seconds',
    'monitors.reconnect_delay_seconds',
    'monitors.latency_ms',
    'monitors.frame_max_side',
    'monitors.reidentify_interval_seconds',
    'monitors.trim_letterbox',
    'monitors.pipeline',
    // Track identity and unknown grouping (SessionDeps.faces): new sessions use them; the unknown visitors'
    // threshold and crop count travel with each visit to the UnknownService.
    'monitors.track_identity',
    'monitors.track_frames',
    'monitors.track_hysteresis',
    'monitors.group_unknowns',
    'monitors.unknown_threshold',
    'monitors.unknown_crops',
  ],
} as const satisfies Record<string, readonly string[]>;
const LIVE: readonly string[] = Object.values(LIVE_GROUPS).flat();

/** What the settings API may change besides the live keys (restart-only). */
const RESTART_EDITABLE = [
  'events.',
  'detection.',
  'inference.default_threshold',
  'inference.liveness_mode',
  'inference.liveness_threshold',
  'inference.liveness_compare_scope',
  'inference.liveness_on_registration',
  'collections.',
  'registration.',
  'monitors.',
  'webhooks.',
  'web.',
  'metrics.enabled',
  'metrics.auth',
  'auth.max_failures',
  'auth.failure_window_seconds',
];

/** Not editable though not secret, with the reason (checked in order; the first matching prefix wins). */
const PROTECTED: [string, string][] = [
  ['mqtt.username', 'a broker credential: set VIGIL_MQTT_USERNAME in the environment (/etc/vigil/vigil.env)'],
  ['inference.addons', 'the liveness addon is turned on by POST /v1/addons/liveness/enable (it installs its models)'],
  [
    'inference.',
    'the model pack, providers and workers: change them in server.toml and check with `vigil doctor` before a restart',
  ],
  ['addons.', 'change it in server.toml'],
  [
    'server.',
    'where the service listens and keeps its data: change it in server.toml (a wrong value stops the service from starting)',
  ],
  ['store.', 'the gallery store: change it in server.toml (see docs/operations/fleet-postgresql.md)'],
  ['auth.', 'authentication: change it in server.toml or the environment'],
  ['scrapers.', 'change the scrapers in server.toml'],
];

const matches = (key: string, pattern: string) => (pattern.endsWith('.') ? key.startsWith(pattern) : key === pattern);

/** The rule of a known key. */
export function settingRule(key: string): SettingRule {
  if (SECRETS.has(key))
    return {
      editable: false,
      apply: 'restart',
      secret: true,
      why: 'a credential: set it in the environment or a file, never through the API',
    };
  // An exact protected key (mqtt.username) wins over a live section; a protected section does not over a live key.
  const live = LIVE.some((p) => matches(key, p)) && !PROTECTED.some(([p]) => p === key);
  if (live) return { editable: true, apply: 'live', secret: false, why: null };
  if (RESTART_EDITABLE.some((p) => matches(key, p)))
    return { editable: true, apply: 'restart', secret: false, why: null };
  const reason = PROTECTED.find(([p]) => matches(key, p))?.[1] ?? 'change it in server.toml';
  return { editable: false, apply: 'restart', secret: false, why: reason };
}

type JsonSchema = Record<string, unknown> & { properties?: Record<string, JsonSchema>; type?: unknown };

let keys: Map<string, SettingKey> | null = null;

/** Every leaf key of the configuration (objects nested in sections are walked), in schema order. */
export function settingKeys(): Map<string, SettingKey> {
  if (keys) return keys;
  const root = z.toJSONSchema(ConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const out = new Map<string, SettingKey>();
  const walk = (path: string[], s: JsonSchema) => {
    for (const [name, k] of Object.entries(s.properties ?? {})) {
      const at = [...path, name];
      if (k.type === 'object' && k.properties) walk(at, k);
      else {
        const { default: def, description, ...schema } = k;
        out.set(at.join('.'), {
          key: at.join('.'),
          section: path.join('.'),
          schema: stripUnbounded(schema),
          description: typeof description === 'string' ? description : '',
          default: def ?? null,
        });
      }
    }
  };
  walk([], root);
  keys = out;
  return out;
}

/** zod marks plain integers with ±MAX_SAFE_INTEGER bounds; they say nothing to a form. */
function stripUnbounded(node: unknown): Record<string, unknown> {
  if (Array.isArray(node)) return node.map(stripUnbounded) as never;
  if (!node || typeof node !== 'object') return node as never;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if ((k === 'minimum' || k === 'maximum') && Math.abs(v as number) === Number.MAX_SAFE_INTEGER) continue;
    out[k] = typeof v === 'object' ? stripUnbounded(v) : v;
  }
  return out;
}

const KEY_SYNTAX = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

/** A dotted key (`mqtt.url`) checked against the configuration; 400 setting_unknown names the closest key. */
export function parseSettingKey(raw: string): SettingKey {
  const key = raw.trim();
  const found = settingKeys().get(key);
  if (found) return found;
  if (!KEY_SYNTAX.test(key)) throw Errors.settingUnknown(key, null, 'a key is section.name, e.g. mqtt.url');
  const within = [...settingKeys().keys()].filter((k) => k.startsWith(`${key}.`));
  if (within.length) throw Errors.settingUnknown(key, null, `${key} is a section; its keys: ${within.join(', ')}`);
  throw Errors.settingUnknown(key, closestKey(key), null);
}

/** The known key nearest to a mistyped one (edit distance on the name within its section first). */
export function closestKey(key: string): string | null {
  let best: string | null = null,
    bestScore = Infinity;
  for (const k of settingKeys().keys()) {
    const d = editDistance(key, k);
    if (d < bestScore) {
      bestScore = d;
      best = k;
    }
  }
  return best !== null && bestScore <= Math.max(2, Math.floor(key.length / 4)) ? best : null;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++)
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

const TRUE = new Set(['true', 'yes', 'on', '1']);
const FALSE = new Set(['false', 'no', 'off', '0']);

/** The JSON Schema types a key accepts (a union lists several). */
function typesOf(schema: Record<string, unknown>): string[] {
  const anyOf = schema.anyOf as Record<string, unknown>[] | undefined;
  if (anyOf) return anyOf.flatMap(typesOf);
  if (schema.const !== undefined) return [typeof schema.const === 'number' ? 'number' : typeof schema.const];
  if (Array.isArray(schema.enum)) return [...new Set(schema.enum.map((v) => typeof v))];
  return typeof schema.type === 'string' ? [schema.type] : [];
}

/**
 * A value typed on the command line, as the key's type wants it: booleans (true/false, yes/no, on/off, 1/0),
 * numbers, arrays and tables as JSON (`[[96,96],[640,640]]`, `["http://a"]`), strings as they are (a JSON
 * string in quotes is unquoted). Only the form is coerced here; ranges and rules are the schema's.
 */
export function coerceSettingValue(key: string, raw: string): unknown {
  const types = typesOf(parseSettingKey(key).schema);
  const text = raw.trim();
  if (types.includes('boolean')) {
    if (TRUE.has(text.toLowerCase())) return true;
    if (FALSE.has(text.toLowerCase())) return false;
  }
  if ((types.includes('number') || types.includes('integer')) && text !== '' && Number.isFinite(Number(text)))
    return Number(text);
  if (types.includes('array') || types.includes('object')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw Errors.settingsInvalid(
        key,
        `expected JSON for ${key}, e.g. ${JSON.stringify(parseSettingKey(key).default)}`,
      );
    }
  }
  if (types.includes('string')) {
    if (/^".*"$/s.test(text)) {
      try {
        return JSON.parse(text) as string;
      } catch {
        /* not a JSON string: taken as it is */
      }
    }
    return raw;
  }
  // A boolean or number key given something else: the schema says what it wanted.
  return raw;
}

/** The value at a dotted key of a (parsed or effective) configuration object; undefined when absent. */
export function valueAt(obj: unknown, key: string): unknown {
  let at: unknown = obj;
  for (const part of key.split('.')) {
    if (!at || typeof at !== 'object' || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/** Sets (or with undefined removes) the value at a dotted key, creating tables on the way; mutates `obj`. */
export function setValueAt(obj: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let at = obj;
  for (const part of parts.slice(0, -1)) {
    const next = at[part];
    if (!next || typeof next !== 'object' || Array.isArray(next)) {
      if (value === undefined) return;
      at[part] = {};
    }
    at = at[part] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1]!;
  if (value === undefined) delete at[last];
  else at[last] = value;
}

/** The names of the secret keys a parsed file holds (the file is then kept from other users). */
export function secretsIn(raw: Record<string, unknown>): string[] {
  return [...SECRETS].filter((k) => valueAt(raw, k) !== undefined);
}

/** A URL without the user and password it may carry (shown values never hold credentials). */
export function withoutCredentials(value: string): string {
  return value.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/\s]*@/i, '$1');
}

/** Equality of two configuration values (scalars, arrays, tables). */
export const sameValue = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
