import test from 'ava';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { monitorSessionSettings, mqttOptions, reviewGates } from '../../src/cli/daemonSettings.js';
import { replacementMode } from '../../src/config/configFile.js';
import { ENV_OVERRIDES, loadConfig } from '../../src/config/load.js';
import { PIPELINE_PRESETS, expandPipeline, presetOf } from '../../src/config/pipelinePresets.js';
import { ConfigSchema, DEFAULT_MONITOR_PIPELINE, pipelineProblem } from '../../src/config/schema.js';
import {
  closestKey,
  coerceSettingValue,
  LIVE_GROUPS,
  parseSettingKey,
  setValueAt,
  settingKeys,
  settingRule,
  valueAt,
  withoutCredentials,
} from '../../src/config/settings.js';
import { checkedChanges, editConfigText, settingsTextProblem, writeSettings } from '../../src/config/settingsWriter.js';
import { isVigilError, type VigilError } from '../../src/contract/errors.js';
import { tempDir } from '../helpers/tempDir.js';

function vigilError(t: import('ava').ExecutionContext, fn: () => unknown, code: string): VigilError {
  const e = t.throws(fn);
  t.true(isVigilError(e), String(e));
  t.is((e as VigilError).code, code, (e as Error).message);
  return e as VigilError;
}

test('dotted keys: every leaf of the schema, sections refused with their keys, typos get the nearest key', (t) => {
  const keys = settingKeys();
  t.true(keys.has('mqtt.url'));
  t.true(keys.has('scrapers.forum.burst'), 'nested tables are walked');
  t.false(keys.has('mqtt'), 'a section is not a key');
  t.is(parseSettingKey(' mqtt.url ').key, 'mqtt.url');
  t.is(parseSettingKey('events.max_age_days').section, 'events');
  t.is(parseSettingKey('events.max_age_days').default, 30);
  t.is(parseSettingKey('mqtt.client_id').default, null, 'an optional key has no default');
  const typo = vigilError(t, () => parseSettingKey('mqtt.ulr'), 'setting_unknown');
  t.is(typo.details.suggestion, 'mqtt.url');
  t.regex(vigilError(t, () => parseSettingKey('mqtt'), 'setting_unknown').message, /section\.name/);
  t.regex(vigilError(t, () => parseSettingKey('scrapers.forum'), 'setting_unknown').message, /scrapers\.forum\.burst/);
  t.is(vigilError(t, () => parseSettingKey('nothing.like.this.at_all'), 'setting_unknown').details.suggestion, null);
  t.is(closestKey('detection.treshold'), 'detection.threshold');
});

test('values typed on the command line are coerced to the key type; the schema judges ranges', (t) => {
  t.is(coerceSettingValue('mqtt.enabled', 'true'), true);
  t.is(coerceSettingValue('mqtt.enabled', 'OFF'), false);
  t.is(coerceSettingValue('mqtt.enabled', '1'), true);
  t.is(coerceSettingValue('mqtt.enabled', 'maybe'), 'maybe', 'left for the schema to refuse');
  t.is(coerceSettingValue('events.max_age_days', '7.5'), 7.5);
  t.is(coerceSettingValue('events.max_age_days', '-1'), -1);
  t.is(coerceSettingValue('mqtt.qos', '2'), 2, 'a union of number literals');
  t.is(coerceSettingValue('inference.max_concurrency', 'auto'), 'auto');
  t.is(coerceSettingValue('inference.max_concurrency', '4'), 4);
  t.deepEqual(coerceSettingValue('detection.input_sizes', '[[96,96],[640,640]]'), [
    [96, 96],
    [640, 640],
  ]);
  t.deepEqual(coerceSettingValue('server.cors_origins', '["http://kiosk.lan:8080"]'), ['http://kiosk.lan:8080']);
  vigilError(t, () => coerceSettingValue('detection.input_sizes', '96x96'), 'settings_invalid');
  t.is(coerceSettingValue('mqtt.url', 'mqtt://broker.lan:1883'), 'mqtt://broker.lan:1883');
  t.is(coerceSettingValue('mqtt.topic_prefix', '"cams"'), 'cams', 'a JSON string is unquoted');
  t.is(coerceSettingValue('mqtt.client_id', '123'), '123', 'a string key keeps digits as text');
});

test('rules: credentials are secret, listening and data are not editable, the rest is live or restart', (t) => {
  for (const k of ['auth.api_key', 'mqtt.password', 'metrics.token', 'scrapers.places.proxy_url'])
    t.like(settingRule(k), { secret: true, editable: false }, k);
  t.like(settingRule('mqtt.username'), { secret: false, editable: false });
  t.like(settingRule('server.port'), { editable: false });
  t.like(settingRule('server.log_level'), { editable: true, apply: 'live' });
  t.like(settingRule('mqtt.url'), { editable: true, apply: 'live' });
  t.like(settingRule('events.max_age_days'), { editable: true, apply: 'live' });
  t.like(settingRule('events.jpeg_quality'), { editable: true, apply: 'restart' });
  t.like(settingRule('detection.input_sizes'), { editable: true, apply: 'restart' });
  t.like(settingRule('detection.threshold'), { editable: true, apply: 'live' });
  t.like(settingRule('inference.default_threshold'), { editable: true, apply: 'restart' });
  t.like(settingRule('inference.model_pack'), { editable: false });
  t.regex(settingRule('inference.addons').why!, /addons\/liveness\/enable/);
  t.like(settingRule('monitors.pipeline'), { editable: true, apply: 'live' });
  t.like(settingRule('store.url'), { editable: false });
  // Every key has a rule; every editable key is reachable from the catalogue.
  for (const k of settingKeys().keys()) t.truthy(settingRule(k));
});

test('dotted paths read and write nested objects', (t) => {
  const o: Record<string, unknown> = { a: { b: 1 } };
  setValueAt(o, 'a.c.d', 2);
  t.deepEqual(o, { a: { b: 1, c: { d: 2 } } });
  t.is(valueAt(o, 'a.c.d'), 2);
  t.is(valueAt(o, 'a.b.x'), undefined);
  setValueAt(o, 'a.b', undefined);
  t.deepEqual(o, { a: { c: { d: 2 } } });
  setValueAt(o, 'x.y', undefined);
  t.false('x' in o, 'removing under a missing table creates nothing');
  t.is(withoutCredentials('mqtt://user:secret@broker:1883'), 'mqtt://broker:1883');
  t.is(withoutCredentials('mqtt://broker:1883'), 'mqtt://broker:1883');
});

const FILE = `# Vigil, edited by hand
[server]
port = 8080 # the API

# The broker of the house
[mqtt]
enabled = false   # off until Home Assistant is set up
url = "mqtt://old:1883"

[events]
# a month of history
max_age_days = 30
`;

test('edits keep comments and layout, add missing tables, and null removes a key', (t) => {
  const next = editConfigText(
    FILE,
    checkedChanges({
      'mqtt.enabled': true,
      'mqtt.url': 'mqtt://broker.lan:1883',
      'events.max_age_days': null,
      'detection.threshold': 0.6,
    }),
  );
  for (const line of ['# Vigil, edited by hand', 'port = 8080 # the API', '# The broker of the house'])
    t.true(next.includes(line), line);
  t.false(next.includes('# a month of history'), "a removed key's own comment goes with it");
  t.regex(next, /enabled = true {3}# off until Home Assistant is set up/);
  const raw = parseToml(next) as Record<string, any>;
  t.deepEqual(raw.mqtt, { enabled: true, url: 'mqtt://broker.lan:1883' });
  t.deepEqual(raw.events, {});
  t.is(raw.detection.threshold, 0.6);
  // Dotted keys at the top stay dotted.
  t.regex(editConfigText('mqtt.enabled = false\n', checkedChanges({ 'mqtt.enabled': true })), /^mqtt\.enabled = true/);
});

test('changes are checked against the whitelist and a pipeline id becomes its template', (t) => {
  t.is(checkedChanges({ 'monitors.pipeline': 'software' }).get('monitors.pipeline'), DEFAULT_MONITOR_PIPELINE);
  t.is(checkedChanges({ 'monitors.pipeline': 'vaapi' }).get('monitors.pipeline'), expandPipeline('vaapi'));
  t.is(
    vigilError(t, () => checkedChanges({ 'mqtt.password': 'x' }), 'setting_not_editable').details.key,
    'mqtt.password',
  );
  vigilError(t, () => checkedChanges({ 'server.data_dir': '/tmp' }), 'setting_not_editable');
  vigilError(t, () => checkedChanges({ 'mqtt.urll': 'x' }), 'setting_unknown');
  vigilError(t, () => checkedChanges({}), 'settings_invalid');
});

test('a value the daemon would refuse is settings_invalid with its key, including the environment rules', (t) => {
  const bad = settingsTextProblem(editConfigText(FILE, checkedChanges({ 'events.max_age_days': -1 })), null, {});
  t.is(bad?.code, 'settings_invalid');
  t.is(bad?.details.key, 'events.max_age_days');
  t.true((bad?.details.issues as unknown[]).length >= 1);
  const url = settingsTextProblem(editConfigText(FILE, checkedChanges({ 'mqtt.url': 'http://x' })), null, {});
  t.is(url?.details.key, 'mqtt.url');
  t.regex(url!.message, /mqtt:\/\//);
  // [metrics] auth = "token" needs a token the file cannot hold here: only the environment can give it.
  const token = editConfigText(FILE, checkedChanges({ 'metrics.auth': 'token' }));
  t.is(settingsTextProblem(token, null, {})?.details.key, 'metrics.token');
  t.is(settingsTextProblem(token, null, { VIGIL_METRICS_TOKEN: 'a-metrics-token-of-16+' }), null);
  t.is(settingsTextProblem(FILE, null, {}), null);
});

test('every environment override the table names replaces its key', (t) => {
  const samples: Record<string, Record<string, string>> = {
    VIGIL_PORT: { VIGIL_PORT: '9090' },
    VIGIL_AUTH_ENABLED: { VIGIL_AUTH_ENABLED: 'false' },
    VIGIL_API_KEY: { VIGIL_API_KEY: 'an-api-key-of-16-chars' },
    VIGIL_METRICS_TOKEN: { VIGIL_METRICS_TOKEN: 'a-metrics-token-of-16+' },
    VIGIL_LOG_LEVEL: { VIGIL_LOG_LEVEL: 'debug' },
    VIGIL_STORE_BACKEND: { VIGIL_STORE_BACKEND: 'postgres', VIGIL_STORE_URL: 'postgres://vigil@db/vigil' },
    VIGIL_STORE_URL: { VIGIL_STORE_URL: 'postgres://vigil@db/vigil' },
    VIGIL_PLACES_PROXY_URL: { VIGIL_PLACES_PROXY_URL: 'http://proxy:3128' },
    VIGIL_CORS_ORIGINS: { VIGIL_CORS_ORIGINS: 'http://a.lan' },
  };
  const base = loadConfig(null, {}).config;
  for (const [key, name] of Object.entries(ENV_OVERRIDES)) {
    const changed = loadConfig(null, samples[name] ?? { [name]: 'box-1' }).config;
    t.notDeepEqual(valueAt(changed, key), valueAt(base, key), `${name} changes ${key}`);
  }
});

test('a file holding a credential loses every bit for other users; others keep their mode', (t) => {
  t.is(replacementMode(0o100664, '[mqtt]\nurl = "mqtt://x:1883"\n'), 0o664);
  t.is(replacementMode(0o100664, '[mqtt]\npassword = "s3cret"\n'), 0o660);
  t.is(replacementMode(0o100600, '[auth]\napi_key = "a-development-key-of-16"\n'), 0o600);
});

test('writeSettings: all or nothing, same mode, and the file never holds an invalid value', async (t) => {
  const dir = tempDir(t, 'vigil-settings-');
  const file = join(dir, 'server.toml');
  writeFileSync(file, FILE, { mode: 0o640 });
  const refused = await t.throwsAsync(
    writeSettings(file, { 'mqtt.enabled': true, 'events.max_age_days': 'soon' }, { env: {} }),
  );
  t.is((refused as VigilError).code, 'settings_invalid');
  t.is((refused as VigilError).details.key, 'events.max_age_days');
  t.is(readFileSync(file, 'utf8'), FILE, 'nothing written');
  const ok = await writeSettings(file, { 'mqtt.enabled': true }, { env: {} });
  t.is(ok.before, FILE);
  t.is(readFileSync(file, 'utf8'), ok.after);
  t.is(statSync(file).mode & 0o777, 0o640);
  t.true(ok.after.includes('# off until Home Assistant is set up'));
  const missing = await t.throwsAsync(writeSettings(join(dir, 'none.toml'), { 'mqtt.enabled': true }, { env: {} }));
  t.is((missing as VigilError).code, 'config_file_missing');
  writeFileSync(file, '[mqtt]\nenabled = "yes"\n');
  const invalid = await t.throwsAsync(writeSettings(file, { 'mqtt.url': 'mqtt://x:1883' }, { env: {} }));
  t.is((invalid as VigilError).code, 'config_file_invalid', 'a broken file is reported, not blamed on the change');
});

test('pipeline presets validate as [monitors] pipeline and are recognised back', (t) => {
  for (const p of PIPELINE_PRESETS) {
    t.is(pipelineProblem(p.pipeline), null, p.id);
    t.is(presetOf(p.pipeline)?.id, p.id);
    t.true(p.pipeline.includes(p.decoder));
    t.true(p.pipeline.includes('videorate name=rate drop-only=true max-rate={max_fps}'), p.id);
  }
  t.is(presetOf(`${DEFAULT_MONITOR_PIPELINE} `)?.id, 'software');
  t.is(presetOf('rtspsrc name=src ! fakesink'), null);
  t.is(expandPipeline('rtspsrc name=src ! x'), 'rtspsrc name=src ! x');
});

test('every key called live is really taken by its applier: the MQTT options and the monitor sessions change', (t) => {
  const base = loadConfig(null, {}).config;
  /** A different valid value for a key: the other boolean, the next number in range, another string. */
  const other = (key: string): unknown => {
    const { schema } = parseSettingKey(key);
    const v = valueAt(base, key);
    if (typeof v === 'boolean') return !v;
    if (typeof v === 'number') {
      const consts = ((schema.anyOf as { const?: number }[] | undefined) ?? []).map((s) => s.const);
      if (consts.length) return consts.find((c) => c !== v);
      return typeof schema.maximum === 'number' && v + 1 > schema.maximum ? v / 2 : v + 1;
    }
    if (key === 'mqtt.url') return 'mqtt://other.lan:1883';
    if (key === 'monitors.pipeline') return expandPipeline('vaapi');
    return typeof v === 'string' ? `${v}x` : '/etc/vigil/x.pem';
  };
  const changed = (key: string) => {
    const raw = {};
    setValueAt(raw, key, other(key));
    return ConfigSchema.parse(raw);
  };
  for (const key of LIVE_GROUPS.mqtt.filter((k) => k !== 'mqtt.enabled'))
    t.notDeepEqual(mqttOptions(changed(key).mqtt), mqttOptions(base.mqtt), key);
  for (const key of LIVE_GROUPS.monitors.filter((k) => k !== 'monitors.max_streams'))
    t.notDeepEqual(monitorSessionSettings(changed(key).monitors), monitorSessionSettings(base.monitors), key);
  for (const key of LIVE_GROUPS.registration)
    t.notDeepEqual(reviewGates(changed(key).registration), reviewGates(base.registration), key);
});
