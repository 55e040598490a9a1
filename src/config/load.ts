import { readFileSync } from 'node:fs';
import { parse as parseToml, TomlError } from 'smol-toml';
import { Errors } from '../contract/errors.js';
import { ApiKeySchema, ConfigSchema, StoreConfigSchema, type VigilConfig } from './schema.js';

export interface LoadedConfig {
  config: VigilConfig;
  /** Absolute path of the file read, or null when running on defaults. */
  file: string | null;
  /** The environment the overrides came from (the settings service reads the file again with it). */
  env: NodeJS.ProcessEnv;
}

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

function envBool(name: string, value: string): boolean {
  const v = value.trim().toLowerCase();
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw Errors.configInvalid(`${name} must be one of 1/0/true/false/yes/no/on/off (got "${value}")`, name);
}

/**
 * Reads server.toml (path from the argument, else VIGIL_CONFIG; no file means defaults) and applies
 * environment overrides. Secrets (the API key) are meant to come from the environment, not the file.
 */
export function loadConfig(path?: string | null, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const file = path ?? env.VIGIL_CONFIG ?? null;
  let text = '';
  if (file) {
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw Errors.configUnreadable(file, (e as NodeJS.ErrnoException).code ?? String(e));
    }
  }
  return { config: configFromText(text, file, env), file, env };
}

/** The configuration a file's text gives with this environment, as `vigil serve` would start with it (throws config_invalid). */
export function configFromText(text: string, file: string | null, env: NodeJS.ProcessEnv): VigilConfig {
  let raw: Record<string, unknown> = {};
  try {
    raw = parseToml(text) as Record<string, unknown>;
  } catch (e) {
    const where = e instanceof TomlError ? ` (line ${e.line}, column ${e.column})` : '';
    throw Errors.configInvalid(
      `${file ?? 'configuration'} is not valid TOML${where}: ${(e as Error).message.split('\n')[0]}`,
    );
  }
  const parsed = ConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]].join('.') : issue.path.join('.');
    const what = issue.code === 'unrecognized_keys' ? `unknown key "${key}"` : `"${key}": ${issue.message}`;
    throw Errors.configInvalid(`${file ?? 'configuration'}: ${what}`, key);
  }
  return applyEnv(parsed.data, env);
}

/**
 * The environment variables that replace a key of the file (GET /v1/settings says where each value came
 * from; a change of such a key in the file has no effect while the variable is set).
 */
export const ENV_OVERRIDES: Readonly<Record<string, string>> = {
  'server.data_dir': 'VIGIL_DATA_DIR',
  'server.models_dir': 'VIGIL_MODELS_DIR',
  'server.host': 'VIGIL_HOST',
  'server.port': 'VIGIL_PORT',
  'server.log_level': 'VIGIL_LOG_LEVEL',
  'server.box_id': 'VIGIL_BOX_ID',
  'server.cors_origins': 'VIGIL_CORS_ORIGINS',
  'auth.enabled': 'VIGIL_AUTH_ENABLED',
  'auth.api_key': 'VIGIL_API_KEY',
  'scrapers.forum.client_id': 'VIGIL_REDDIT_CLIENT_ID',
  'scrapers.forum.client_secret': 'VIGIL_REDDIT_CLIENT_SECRET',
  'scrapers.places.cookie': 'VIGIL_PLACES_COOKIE',
  'scrapers.places.proxy_url': 'VIGIL_PLACES_PROXY_URL',
  'mqtt.username': 'VIGIL_MQTT_USERNAME',
  'mqtt.password': 'VIGIL_MQTT_PASSWORD',
  'metrics.token': 'VIGIL_METRICS_TOKEN',
  'store.backend': 'VIGIL_STORE_BACKEND',
  'store.url': 'VIGIL_STORE_URL',
};

/** The variable that replaces `key` in this environment, or null (VIGIL_CORS_ORIGINS counts even when empty). */
export function envOverride(key: string, env: NodeJS.ProcessEnv): string | null {
  const name = ENV_OVERRIDES[key];
  if (!name) return null;
  const v = env[name];
  return v !== undefined && (v !== '' || name === 'VIGIL_CORS_ORIGINS' || name === 'VIGIL_AUTH_ENABLED') ? name : null;
}

function applyEnv(config: VigilConfig, env: NodeJS.ProcessEnv): VigilConfig {
  const c = structuredClone(config);
  if (env.VIGIL_DATA_DIR) c.server.data_dir = env.VIGIL_DATA_DIR;
  if (env.VIGIL_MODELS_DIR) c.server.models_dir = env.VIGIL_MODELS_DIR;
  if (env.VIGIL_HOST) c.server.host = env.VIGIL_HOST;
  if (env.VIGIL_PORT) {
    const port = Number(env.VIGIL_PORT);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw Errors.configInvalid(`VIGIL_PORT must be a port number (got "${env.VIGIL_PORT}")`, 'VIGIL_PORT');
    c.server.port = port;
  }
  if (env.VIGIL_LOG_LEVEL)
    c.server.log_level = ConfigSchema.shape.server.unwrap().shape.log_level.parse(env.VIGIL_LOG_LEVEL);
  if (env.VIGIL_AUTH_ENABLED !== undefined) c.auth.enabled = envBool('VIGIL_AUTH_ENABLED', env.VIGIL_AUTH_ENABLED);
  if (env.VIGIL_API_KEY) {
    const key = ApiKeySchema.safeParse(env.VIGIL_API_KEY);
    if (!key.success) throw Errors.configInvalid(`VIGIL_API_KEY: ${key.error.issues[0]!.message}`, 'VIGIL_API_KEY');
    c.auth.api_key = key.data;
  }
  if (env.VIGIL_REDDIT_CLIENT_ID) c.scrapers.forum.client_id = env.VIGIL_REDDIT_CLIENT_ID;
  if (env.VIGIL_REDDIT_CLIENT_SECRET) c.scrapers.forum.client_secret = env.VIGIL_REDDIT_CLIENT_SECRET;
  if (env.VIGIL_PLACES_COOKIE) c.scrapers.places.cookie = env.VIGIL_PLACES_COOKIE;
  if (env.VIGIL_PLACES_PROXY_URL) {
    const proxy = ConfigSchema.shape.scrapers
      .unwrap()
      .shape.places.unwrap()
      .shape.proxy_url.unwrap()
      .safeParse(env.VIGIL_PLACES_PROXY_URL);
    if (!proxy.success)
      throw Errors.configInvalid('VIGIL_PLACES_PROXY_URL must be an http(s):// proxy URL.', 'VIGIL_PLACES_PROXY_URL');
    c.scrapers.places.proxy_url = proxy.data;
  }
  if (env.VIGIL_MQTT_USERNAME) c.mqtt.username = env.VIGIL_MQTT_USERNAME;
  if (env.VIGIL_MQTT_PASSWORD) c.mqtt.password = env.VIGIL_MQTT_PASSWORD;
  if (env.VIGIL_METRICS_TOKEN) {
    const token = ApiKeySchema.safeParse(env.VIGIL_METRICS_TOKEN);
    if (!token.success)
      throw Errors.configInvalid(`VIGIL_METRICS_TOKEN: ${token.error.issues[0]!.message}`, 'VIGIL_METRICS_TOKEN');
    c.metrics.token = token.data;
  }
  if (c.metrics.enabled && c.metrics.auth === 'token' && !c.metrics.token) {
    throw Errors.configInvalid(
      '[metrics] auth = "token" needs a token: set [metrics] token or VIGIL_METRICS_TOKEN (at least 16 characters).',
      'metrics.token',
    );
  }
  if (env.VIGIL_STORE_BACKEND)
    c.store.backend = StoreConfigSchema.shape.backend.unwrap().parse(env.VIGIL_STORE_BACKEND);
  if (env.VIGIL_STORE_URL) c.store.url = env.VIGIL_STORE_URL;
  if (env.VIGIL_BOX_ID) c.server.box_id = env.VIGIL_BOX_ID;
  if (c.store.backend === 'postgres' && !c.store.url)
    throw Errors.configInvalid(
      'store.url (or VIGIL_STORE_URL) is required when the store backend is "postgres"',
      'store.url',
    );
  if (env.VIGIL_CORS_ORIGINS !== undefined)
    c.server.cors_origins = env.VIGIL_CORS_ORIGINS.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  return c;
}
