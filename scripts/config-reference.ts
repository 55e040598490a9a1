/**
 * The configuration's two generated documents, both from the zod schema (src/config/schema.ts, its
 * `.describe()` / `.meta()` texts): the key reference of docs/configuration.md (between markers) and the whole
 * of config/server.example.toml. `npm run docs:generate` writes them; test/unit/generated-docs.test.ts fails when
 * either is stale.
 */
import { z } from 'zod';
import { ConfigSchema } from '../src/config/schema.js';

export interface ConfigKey {
  /** Dotted path, e.g. `scrapers.forum.burst`. */
  path: string;
  name: string;
  description: string;
  /** Type and allowed values in words, e.g. `integer, 0 to 65535`. */
  type: string;
  /** The default as a TOML value, or null for an optional key without one. */
  default: unknown;
  /** What the reference shows as the default (defaultText, or the value with a unit). */
  defaultShown: string;
  /** Shown commented out in the example file (optional keys, and keys marked `commented`). */
  commented: boolean;
  /** The value of the commented-out line for an optional key. */
  example: unknown;
}

export interface ConfigSection {
  /** `server`, `scrapers.forum`, … */
  path: string;
  description: string;
  keys: ConfigKey[];
}

interface JsonSchema {
  type?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema | false;
  prefixItems?: JsonSchema[];
  minItems?: number;
  maxItems?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  minLength?: number;
  pattern?: string;
  format?: string;
  examples?: unknown[];
  commented?: boolean;
  defaultText?: string;
}

const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/** Every section (objects nested in objects are sections of their own, after their parent) and its keys. */
export function configSections(): ConfigSection[] {
  const root = z.toJSONSchema(ConfigSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const sections: ConfigSection[] = [];
  const walk = (path: string, s: JsonSchema) => {
    const section: ConfigSection = { path, description: s.description ?? '', keys: [] };
    sections.push(section);
    const nested: [string, JsonSchema][] = [];
    for (const [name, k] of Object.entries(s.properties ?? {})) {
      if (k.type === 'object' && k.properties) nested.push([`${path}.${name}`, k]);
      else section.keys.push(configKey(`${path}.${name}`, name, k));
    }
    for (const [p, k] of nested) walk(p, k);
  };
  for (const [name, s] of Object.entries(root.properties ?? {})) walk(name, s);
  return sections;
}

function configKey(path: string, name: string, s: JsonSchema): ConfigKey {
  if (!s.description) throw new Error(`${path} has no description in src/config/schema.ts (.describe())`);
  const optional = s.default === undefined;
  if (optional && !s.examples?.length)
    throw new Error(`${path} is optional: give it an example value (.meta({ examples: [...] }))`);
  return {
    path,
    name,
    description: s.description,
    type: typeText(s),
    default: optional ? null : s.default,
    defaultShown: s.defaultText ?? (optional ? 'absent' : withUnit(name, s.default)),
    commented: optional || s.commented === true,
    example: optional ? s.examples![0] : s.default,
  };
}

/** `67108864` → `67108864 (64 MiB)` for byte sizes; every other default as its TOML value. */
function withUnit(name: string, v: unknown): string {
  const toml = tomlValue(v);
  if (!name.endsWith('_bytes') || typeof v !== 'number' || v < 1024) return toml;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let n = v / 1024,
    u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u++;
  }
  return `${toml} (${Number.isInteger(n) ? n : n.toFixed(1)} ${units[u]})`;
}

function rangeText(s: JsonSchema): string {
  const lo =
    s.exclusiveMinimum !== undefined ? `> ${s.exclusiveMinimum}` : s.minimum !== undefined ? `${s.minimum}` : null;
  const hi = s.maximum !== undefined && s.maximum < UNBOUNDED ? s.maximum : null;
  if (lo !== null && hi !== null) return lo.startsWith('>') ? `${lo}, at most ${hi}` : `${lo} to ${hi}`;
  if (lo !== null) return lo.startsWith('>') ? lo : `at least ${lo}`;
  if (hi !== null) return `at most ${hi}`;
  return '';
}

/** The type in words with its allowed values. */
export function typeText(s: JsonSchema): string {
  const join = (parts: string[]) => parts.filter(Boolean).join(', ');
  if (s.anyOf) return s.anyOf.map(typeText).join(' or ');
  if (s.const !== undefined) return tomlValue(s.const);
  if (s.enum) return s.enum.map(tomlValue).join(' | ');
  switch (s.type) {
    case 'integer':
      return join(['integer', rangeText(s)]);
    case 'number':
      return join(['number', rangeText(s)]);
    case 'boolean':
      return 'boolean';
    case 'string':
      return s.format === 'uri'
        ? 'URL'
        : s.pattern
          ? `string matching \`${s.pattern}\``
          : s.minLength
            ? 'string, not empty'
            : 'string';
    case 'array': {
      if (s.prefixItems) return `[${s.prefixItems.map((i) => i.type).join(', ')}]`;
      const count =
        s.minItems !== undefined && s.maxItems !== undefined
          ? `${s.minItems} to ${s.maxItems}`
          : s.minItems
            ? `at least ${s.minItems}`
            : '';
      return join([`array of ${s.items ? typeText(s.items) : 'values'}`, count]);
    }
    default:
      return s.type ?? 'value';
  }
}

/** A TOML value (the example file's values, the reference's defaults). */
export function tomlValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  throw new Error(`no TOML form for ${JSON.stringify(v)}`);
}

/** docs/… mentions in the schema's texts, as links relative to a page in docs/. */
const linked = (text: string) =>
  text.replace(/\bdocs\/([\w/.-]+?\.md)(#[\w-]+)?/g, (_m, page: string, anchor = '') => `[${page}](${page}${anchor})`);
const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

export const REFERENCE_START =
  '<!-- config-reference:start (generated by `npm run docs:generate` from src/config/schema.ts) -->';
export const REFERENCE_END = '<!-- config-reference:end -->';

/** The key reference of docs/configuration.md: one table per section. */
export function configReference(): string {
  const out: string[] = [];
  for (const s of configSections()) {
    out.push(`### \`[${s.path}]\``, '');
    if (s.description) out.push(linked(s.description), '');
    if (!s.keys.length) continue;
    out.push('| key | type | default | what |', '|---|---|---|---|');
    for (const k of s.keys)
      out.push(`| \`${k.name}\` | ${cell(k.type)} | \`${cell(k.defaultShown)}\` | ${cell(linked(k.description))} |`);
    out.push('');
  }
  return out.join('\n').trimEnd();
}

const WIDTH = 118;

/** `text` as `# ` comment lines of at most WIDTH characters; `tail` (a type in brackets) is never broken. */
export function commentLines(text: string, tail?: string): string[] {
  const lines: string[] = [];
  let line = '#';
  for (const word of [...text.split(/\s+/).filter(Boolean), ...(tail ? [tail] : [])]) {
    if (line.length + 1 + word.length > WIDTH && line !== '#') {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  if (line !== '#') lines.push(line);
  return lines;
}

const HEADER = `Vigil daemon configuration (server.toml): every key, with its default. Generated from src/config/schema.ts by \`npm run docs:generate\`; docs/configuration.md is the same reference with types and ranges.
Read once at startup: restart the daemon after a change. An unknown key, a wrong value or a section given twice stops the start with exit code 10, naming the key: edit a section in place, never append a second one.
Keys commented out are optional (absent means what their comment says); uncomment one to set it.
Secrets come from the environment (under systemd /etc/vigil/vigil.env), not from this file: VIGIL_API_KEY (the API key, at least 16 characters; a different value on a later start rotates it), VIGIL_MQTT_USERNAME / VIGIL_MQTT_PASSWORD, VIGIL_STORE_PASSWORD, VIGIL_METRICS_TOKEN, VIGIL_REDDIT_CLIENT_ID / VIGIL_REDDIT_CLIENT_SECRET, VIGIL_PLACES_COOKIE, VIGIL_PLACES_PROXY_URL. Other overrides: VIGIL_CONFIG (this file), VIGIL_DATA_DIR, VIGIL_MODELS_DIR, VIGIL_HOST, VIGIL_PORT, VIGIL_LOG_LEVEL, VIGIL_AUTH_ENABLED, VIGIL_CORS_ORIGINS (comma-separated), VIGIL_BOX_ID, VIGIL_STORE_BACKEND, VIGIL_STORE_URL.`;

/** config/server.example.toml: every section and key, each with its description as comments. */
export function exampleToml(): string {
  const out: string[] = [];
  for (const paragraph of HEADER.split('\n')) out.push(...commentLines(paragraph));
  for (const s of configSections()) {
    out.push('', `# ${'-'.repeat(WIDTH - 2)}`);
    if (s.description) out.push(...commentLines(s.description));
    out.push(`[${s.path}]`);
    for (const k of s.keys) {
      const comment = commentLines(k.description, `[${k.type}]`);
      // A comment line that reads like a commented-out key would be taken for one.
      const keyLike = comment.find((l) => /^# [a-z_][a-z0-9_]* = /.test(l));
      if (keyLike) throw new Error(`${k.path}: reword its description, "${keyLike}" reads like a key`);
      out.push('', ...comment);
      if (k.commented && k.default !== null) out.push(...commentLines(`Default: ${k.defaultShown}.`));
      out.push(`${k.commented ? '# ' : ''}${k.name} = ${tomlValue(k.example)}`);
    }
  }
  return `${out.join('\n')}\n`;
}
