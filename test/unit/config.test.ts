import test from 'ava';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OperatorError } from '../../src/contract/errors.js';
import { loadConfig } from '../../src/config/load.js';
import { inputSizesProblem } from '../../src/config/schema.js';
import { fileTempDir } from '../helpers/tempDir.js';

const dir = fileTempDir('vigil-config-test-');

let n = 0;
function tomlFile(text: string): string {
  const p = join(dir, `server-${n++}.toml`);
  writeFileSync(p, text);
  return p;
}

function configError(t: import('ava').ExecutionContext, fn: () => unknown): OperatorError {
  const err = t.throws(fn);
  t.true(err instanceof OperatorError, `not an OperatorError: ${String(err)}`);
  return err as OperatorError;
}

test('defaults without a file', (t) => {
  const { config, file } = loadConfig(null, {});
  t.is(file, null);
  t.is(config.server.port, 8080);
  t.is(config.server.host, '0.0.0.0');
  t.is(config.server.data_dir, '/var/lib/vigil');
  t.true(config.auth.enabled);
  t.is(config.auth.api_key, undefined);
  t.deepEqual(config.detection.input_sizes, [
    [96, 96],
    [512, 512],
  ]);
  t.is(config.detection.threshold, 0.5);
  t.is(config.detection.nms_threshold, 0.4);
  t.is(config.detection.single_face_selection, 'largest');
  t.is(config.inference.model_pack, 'edge_s');
  t.deepEqual(config.inference.execution_providers, ['cpu']);
  t.is(config.inference.max_concurrency, 'auto');
  t.false(config.web.disabled);
});

test('VIGIL_CONFIG is used when no path is given', (t) => {
  const p = tomlFile('[server]\nport = 9001\n');
  const { config, file } = loadConfig(undefined, { VIGIL_CONFIG: p });
  t.is(file, p);
  t.is(config.server.port, 9001);
});

test('a file overrides only the keys it sets', (t) => {
  const p = tomlFile('[detection]\nthreshold = 0.7\ninput_sizes = [[640, 640]]\n[inference]\nmax_concurrency = 4\n');
  const { config } = loadConfig(p, {});
  t.is(config.detection.threshold, 0.7);
  t.deepEqual(config.detection.input_sizes, [[640, 640]]);
  t.is(config.detection.nms_threshold, 0.4);
  t.is(config.inference.max_concurrency, 4);
  t.is(config.server.port, 8080);
});

test('unknown key in a section -> config_invalid naming detection.foo', (t) => {
  const p = tomlFile('[detection]\nthreshold = 0.5\nfoo = 1\n');
  const err = configError(t, () => loadConfig(p, {}));
  t.is(err.code, 'config_invalid');
  t.regex(err.message, /detection\.foo/);
  t.is(err.details.key, 'detection.foo');
});

test('unknown section is named', (t) => {
  const p = tomlFile('[detektion]\nthreshold = 0.5\n');
  const err = configError(t, () => loadConfig(p, {}));
  t.is(err.code, 'config_invalid');
  t.regex(err.message, /detektion/);
});

test('wrong value type names the key', (t) => {
  const p = tomlFile('[server]\nport = "eighty"\n');
  const err = configError(t, () => loadConfig(p, {}));
  t.is(err.code, 'config_invalid');
  t.regex(err.message, /server\.port/);
});

test('input_sizes not a multiple of 32 is rejected', (t) => {
  const err = configError(t, () => loadConfig(tomlFile('[detection]\ninput_sizes = [[100, 96]]\n'), {}));
  t.is(err.code, 'config_invalid');
  t.regex(err.message, /detection\.input_sizes/);
  t.regex(err.message, /multiples of 32/);
});

test('duplicate input_sizes are rejected', (t) => {
  const err = configError(t, () => loadConfig(tomlFile('[detection]\ninput_sizes = [[320, 320], [320, 320]]\n'), {}));
  t.is(err.code, 'config_invalid');
  t.regex(err.message, /duplicate input size 320x320/);
});

test('more than 4 input_sizes are rejected', (t) => {
  const err = configError(t, () =>
    loadConfig(tomlFile('[detection]\ninput_sizes = [[96, 96], [128, 128], [160, 160], [192, 192], [224, 224]]\n'), {}),
  );
  t.is(err.code, 'config_invalid');
  t.regex(err.message, /detection\.input_sizes/);
  t.notThrows(() =>
    loadConfig(tomlFile('[detection]\ninput_sizes = [[96, 96], [128, 128], [160, 160], [192, 192]]\n'), {}),
  );
});

test('inputSizesProblem bounds and area', (t) => {
  t.is(
    inputSizesProblem([
      [32, 32],
      [2048, 1024],
    ]),
    null,
  );
  t.regex(inputSizesProblem([[0, 32]]) ?? '', /multiples of 32/);
  t.regex(inputSizesProblem([[2080, 32]]) ?? '', /multiples of 32/);
  t.regex(
    inputSizesProblem([
      [2048, 2048],
      [32, 32],
    ]) ?? '',
    /4\*1024\*1024/,
  );
  t.is(
    inputSizesProblem([
      [320, 640],
      [640, 320],
    ]),
    null,
  ); // different orientations are distinct
});

test('VIGIL_API_KEY overrides the file', (t) => {
  const p = tomlFile('[auth]\napi_key = "file-key-0123456789"\n');
  t.is(loadConfig(p, {}).config.auth.api_key, 'file-key-0123456789');
  t.is(loadConfig(p, { VIGIL_API_KEY: 'env-key-abcdefghijkl' }).config.auth.api_key, 'env-key-abcdefghijkl');
});

test('VIGIL_PORT overrides; invalid values are config_invalid', (t) => {
  t.is(loadConfig(null, { VIGIL_PORT: '9090' }).config.server.port, 9090);
  t.is(loadConfig(null, { VIGIL_PORT: '0' }).config.server.port, 0);
  for (const bad of ['http', '70000', '-1', '80.5']) {
    const err = configError(t, () => loadConfig(null, { VIGIL_PORT: bad }));
    t.is(err.code, 'config_invalid', bad);
    t.regex(err.message, /VIGIL_PORT/);
  }
});

test('VIGIL_AUTH_ENABLED accepts yes/no/1/0 and rejects other values', (t) => {
  const off = tomlFile('[auth]\nenabled = false\n');
  t.true(loadConfig(off, { VIGIL_AUTH_ENABLED: 'yes' }).config.auth.enabled);
  t.true(loadConfig(off, { VIGIL_AUTH_ENABLED: '1' }).config.auth.enabled);
  t.true(loadConfig(off, { VIGIL_AUTH_ENABLED: ' TRUE ' }).config.auth.enabled);
  t.false(loadConfig(null, { VIGIL_AUTH_ENABLED: 'no' }).config.auth.enabled);
  t.false(loadConfig(null, { VIGIL_AUTH_ENABLED: '0' }).config.auth.enabled);
  t.false(loadConfig(off, {}).config.auth.enabled);
  for (const bad of ['maybe', '', '2']) {
    const err = configError(t, () => loadConfig(null, { VIGIL_AUTH_ENABLED: bad }));
    t.is(err.code, 'config_invalid', JSON.stringify(bad));
    t.regex(err.message, /VIGIL_AUTH_ENABLED/);
  }
});

test('other env overrides: data dir, host, CORS origins', (t) => {
  const { config } = loadConfig(null, {
    VIGIL_DATA_DIR: '/srv/v',
    VIGIL_HOST: '127.0.0.1',
    VIGIL_CORS_ORIGINS: 'https://a.example, ,https://b.example',
  });
  t.is(config.server.data_dir, '/srv/v');
  t.is(config.server.host, '127.0.0.1');
  t.deepEqual(config.server.cors_origins, ['https://a.example', 'https://b.example']);
});

test('[scrapers.places]: defaults, strict keys, secrets from the environment', (t) => {
  const { config } = loadConfig(null, {});
  t.like(config.scrapers.places, {
    enabled: true,
    base_url: 'https://www.google.com',
    requests_per_minute: 30,
    jitter_ms: 1000,
    max_search_pages: 10,
  });
  t.is(config.scrapers.places.proxy_url, undefined);
  t.is(config.scrapers.free_reviews_per_month, 10_000);
  const env = loadConfig(null, {
    VIGIL_PLACES_COOKIE: 'SOCS=abc',
    VIGIL_PLACES_PROXY_URL: 'http://u:p@proxy.example:3128',
  }).config.scrapers.places;
  t.is(env.cookie, 'SOCS=abc');
  t.is(env.proxy_url, 'http://u:p@proxy.example:3128');
  t.is(configError(t, () => loadConfig(null, { VIGIL_PLACES_PROXY_URL: 'socks9://x' })).code, 'config_invalid');
  const unknown = configError(t, () => loadConfig(tomlFile('[scrapers.places]\nproxy = "http://x"\n'), {}));
  t.is(unknown.code, 'config_invalid');
  t.regex(unknown.message, /proxy/);
  t.is(
    configError(t, () => loadConfig(tomlFile('[scrapers.places]\nproxy_url = "ftp://x"\n'), {})).code,
    'config_invalid',
  );
});

test('invalid TOML reports the line', (t) => {
  const p = tomlFile('[server]\nport = 8080\nhost = \n');
  const err = configError(t, () => loadConfig(p, {}));
  t.is(err.code, 'config_invalid');
  t.regex(err.message, /not valid TOML/);
  t.regex(err.message, /line 3/);
});

test('unreadable file -> config_unreadable', (t) => {
  const err = configError(t, () => loadConfig(join(dir, 'does-not-exist.toml'), {}));
  t.is(err.code, 'config_unreadable');
  t.regex(err.message, /ENOENT/);
});

test('a file api_key shorter than 16 characters is rejected', (t) => {
  const err = configError(t, () => loadConfig(tomlFile('[auth]\napi_key = "short"\n'), {}));
  t.is(err.code, 'config_invalid');
  t.regex(err.message, /auth\.api_key/);
});

// The file's api_key must be at least 16 characters (schema.ts) and serve.ts tells users to "set
// VIGIL_API_KEY (at least 16 characters)", but applyEnv() copies VIGIL_API_KEY without any check.
test('VIGIL_API_KEY shorter than 16 characters is rejected like a short file key', (t) => {
  const err = configError(t, () => loadConfig(null, { VIGIL_API_KEY: 'short' }));
  t.is(err.code, 'config_invalid');
});
