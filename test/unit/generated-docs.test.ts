import test from 'ava';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { ConfigSchema } from '../../src/config/schema.js';
import { MQTT_TOPICS, topics } from '../../src/events/homeAssistant.js';
import { configSections, tomlValue, typeText } from '../../scripts/config-reference.js';
import { GENERATED_DOCUMENTS } from '../../scripts/docs-generate.js';
import { REPO } from '../helpers/shared.js';
import { fileTempDir } from '../helpers/tempDir.js';

const read = (file: string) => readFileSync(join(REPO, file), 'utf8');
const EXAMPLE = 'config/server.example.toml';

for (const doc of GENERATED_DOCUMENTS) {
  test(`${doc.file} is generated from the code (npm run docs:generate)`, (t) => {
    const current = read(doc.file);
    t.true(doc.render(current) === current, `${doc.file} is stale: run npm run docs:generate and commit the result`);
  });
}

/** [section] -> the keys the example file sets or shows commented out (`# key = value`). */
function exampleKeys(text: string): Map<string, Set<string>> {
  const keys = new Map<string, Set<string>>();
  let section = '';
  for (const line of text.split('\n')) {
    const header = /^\[([\w.]+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      if (keys.has(section)) throw new Error(`[${section}] appears twice`);
      keys.set(section, new Set());
      continue;
    }
    const key = /^(?:# )?([a-z_][a-z0-9_]*) = /.exec(line);
    if (key && section) keys.get(section)!.add(key[1]!);
  }
  return keys;
}

test('the example file has every section and key of the schema, [store], box_id and seen_items_per_kind included', (t) => {
  const inFile = exampleKeys(read(EXAMPLE));
  const missing: string[] = [];
  for (const s of configSections())
    for (const k of s.keys) if (!inFile.get(s.path)?.has(k.name)) missing.push(`[${s.path}] ${k.name}`);
  t.deepEqual(missing, [], `${EXAMPLE} lacks these keys`);
  const known = new Set(configSections().flatMap((s) => s.keys.map((k) => k.path)));
  const unknown = [...inFile].flatMap(([s, ks]) => [...ks].map((k) => `${s}.${k}`)).filter((p) => !known.has(p));
  t.deepEqual(unknown, [], 'keys the schema does not have');
});

test('the example file loads to exactly the defaults, and its commented-out values are valid', (t) => {
  const dir = fileTempDir('vigil-example-toml-');
  const text = read(EXAMPLE);
  const asIs = join(dir, 'as-is.toml');
  writeFileSync(asIs, text);
  t.deepEqual(loadConfig(asIs, {}).config, loadConfig(null, {}).config);
  // Every commented-out key uncommented: each example value passes the schema.
  const uncommented = join(dir, 'uncommented.toml');
  writeFileSync(uncommented, text.replace(/^# ([a-z_][a-z0-9_]*) = /gm, '$1 = '));
  const { config } = loadConfig(uncommented, {});
  t.is(config.server.box_id, 'frontdoor-1');
  t.is(config.store.url, 'postgres://vigil@db.lan:5432/vigil');
  t.is(config.scrapers.seen_items_per_kind, 100_000);
});

test('every key has a description, and the reference lists each with its type and default', (t) => {
  const page = read('docs/configuration.md');
  for (const s of configSections()) {
    t.true(page.includes(`### \`[${s.path}]\``), s.path);
    for (const k of s.keys) {
      t.true(k.description.length > 5, k.path);
      t.true(page.includes(`| \`${k.name}\` | ${k.type.replaceAll('|', '\\|')} |`), k.path);
    }
  }
  t.is(
    configSections()
      .find((s) => s.path === 'scrapers.forum')
      ?.keys.find((k) => k.name === 'burst')?.type,
    'integer, 1 to 1000',
  );
});

test('types and values in words', (t) => {
  t.is(typeText({ type: 'integer', minimum: 0, maximum: 65535 }), 'integer, 0 to 65535');
  t.is(typeText({ type: 'number', exclusiveMinimum: 0, maximum: 3600 }), 'number, > 0, at most 3600');
  t.is(typeText({ type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), 'integer, at least 1');
  t.is(
    typeText({ anyOf: [{ const: 'auto' }, { type: 'integer', minimum: 1, maximum: 4 }] }),
    '"auto" or integer, 1 to 4',
  );
  t.is(typeText({ type: 'string', enum: ['a', 'b'] }), '"a" | "b"');
  t.is(
    tomlValue([
      [96, 96],
      [512, 512],
    ]),
    '[[96, 96], [512, 512]]',
  );
  t.is(tomlValue('say "hi"'), '"say \\"hi\\""');
  t.throws(() => tomlValue({}));
});

test('the generated reference matches what the schema accepts', (t) => {
  // A range in the reference is the range the daemon enforces: one past each end is refused.
  const port = configSections()
    .find((s) => s.path === 'server')!
    .keys.find((k) => k.name === 'port')!;
  t.is(port.type, 'integer, 0 to 65535');
  t.false(ConfigSchema.safeParse({ server: { port: 65536 } }).success);
  t.true(ConfigSchema.safeParse({ server: { port: 65535 } }).success);
});

test('the MQTT topics are built from the table the docs are generated from', (t) => {
  const t1 = topics('site');
  t.is(t1.availability, 'site/available');
  t.is(t1.state('door'), 'site/door/state');
  t.is(t1.person('door', 'ada'), 'site/door/person/ada');
  t.is(MQTT_TOPICS.state.pattern, '{prefix}/{monitor}/state');
  const page = read('docs/integrations/mqtt.md');
  for (const topic of Object.values(MQTT_TOPICS)) {
    const shown = topic.pattern
      .replace('{prefix}', 'vigil')
      .replace('{discovery}', 'homeassistant')
      .replace(/\{(\w+)\}/g, '<$1>');
    t.true(page.includes(`| \`${shown}\` |`), shown);
  }
});
