import test from 'ava';
import { readFile } from 'node:fs/promises';
import { ApiError } from '../../src/contract/errors.js';
import {
  DEFAULT_MANIFEST_PATH,
  loadCatalog,
  npmTarballUrl,
  parseCatalog,
  resolveDefaultThreshold,
  UPSTREAM_DEFAULT_THRESHOLD,
} from '../../src/models/catalog.js';

const manifest = async (): Promise<Record<string, any>> => JSON.parse(await readFile(DEFAULT_MANIFEST_PATH, 'utf8'));

test('the bundled manifest loads from the repo models/ folder', async (t) => {
  t.true(DEFAULT_MANIFEST_PATH.endsWith('/models/manifest.json'));
  const catalog = await loadCatalog();
  t.is(catalog.default_pack, 'edge_s');
  t.deepEqual(Object.keys(catalog.packs), ['edge_s', 'edge_open', 'buffalo_s', 'buffalo_l']);
  t.is(catalog.packs.edge_open!.detector.kind, 'yunet');
  t.deepEqual(catalog.packs.buffalo_l!.recognizer.input_size, [112, 112]);
});

test('unknown keys are rejected (strict objects)', async (t) => {
  const raw = await manifest();
  raw.packs.edge_s.detector.extra = 1;
  const err = t.throws(() => parseCatalog(raw), { instanceOf: ApiError });
  t.is(err?.code, 'model_catalog_invalid');
  t.regex(err!.message, /extra/);
});

test('dangling references are rejected', async (t) => {
  const raw = await manifest();
  raw.packs.edge_s.recognizer.file = 'nope.onnx';
  raw.files['det_500m.onnx'].license = 'nope';
  const err = t.throws(() => parseCatalog(raw), { instanceOf: ApiError });
  t.regex(err!.message, /unknown file nope\.onnx/);
  t.regex(err!.message, /unknown licence nope/);
});

test('source shapes are validated', async (t) => {
  const raw = await manifest();
  raw.files['det_500m.onnx'].sources = [{ type: 'archive', url: 'ftp://x/y.zip', format: 'zip', member: 'a' }];
  t.throws(() => parseCatalog(raw), { instanceOf: ApiError });
  raw.files['det_500m.onnx'].sources = [{ type: 'archive', url: 'https://x/y.tar', format: 'tar', member: 'a' }];
  t.throws(() => parseCatalog(raw), { instanceOf: ApiError });
});

test('npm tarball URLs follow the registry layout and honour npm_config_registry', (t) => {
  const src = {
    type: 'npm',
    package: 'faceplugin-face-recognition-js',
    version: '0.0.1',
    path: 'package/model/fr_feature.onnx',
  } as const;
  t.is(
    npmTarballUrl(src, {}),
    'https://registry.npmjs.org/faceplugin-face-recognition-js/-/faceplugin-face-recognition-js-0.0.1.tgz',
  );
  t.is(
    npmTarballUrl({ ...src, package: '@s/pkg' }, { npm_config_registry: 'http://127.0.0.1:4873/' }),
    'http://127.0.0.1:4873/@s/pkg/-/pkg-0.0.1.tgz',
  );
});

test('packs declare a measured recommended_threshold with its FAR; buffalo packs (not measurable here) declare none', async (t) => {
  const catalog = await loadCatalog();
  for (const id of ['edge_s', 'edge_open']) {
    const r = catalog.packs[id]!.recommended_threshold!;
    t.true(r.similarity > 0 && r.similarity < 1, id);
    t.true(r.far > 0 && r.far < 1e-2, id);
    t.regex(r.basis, /bench\/quality\.ts/);
  }
  t.is(catalog.packs.buffalo_s!.recommended_threshold, undefined);
  t.is(catalog.packs.buffalo_l!.recommended_threshold, undefined);
});

test('recommended_threshold is validated: similarity in [0, 1], FAR in (0, 1), no unknown keys', async (t) => {
  for (const bad of [
    { similarity: 1.2, far: 1e-3, basis: 'x' },
    { similarity: 0.4, far: 0, basis: 'x' },
    { similarity: 0.4, far: 1e-3, basis: 'x', extra: 1 },
    { similarity: 0.4, basis: 'x' },
  ]) {
    const raw = await manifest();
    raw.packs.edge_s.recommended_threshold = bad;
    const err = t.throws(() => parseCatalog(raw), { instanceOf: ApiError }, JSON.stringify(bad));
    t.is(err?.code, 'model_catalog_invalid');
  }
});

test('the default threshold: configured wins, then the pack, then the upstream 0.4', async (t) => {
  const catalog = await loadCatalog();
  const edge = catalog.packs.edge_s!;
  t.deepEqual(resolveDefaultThreshold(undefined, edge), {
    value: edge.recommended_threshold!.similarity,
    source: 'pack',
  });
  t.deepEqual(
    resolveDefaultThreshold(0.4, edge),
    { value: 0.4, source: 'config' },
    "an explicit 0.4 is the operator's, not the pack's",
  );
  t.deepEqual(resolveDefaultThreshold(0, edge), { value: 0, source: 'config' });
  t.deepEqual(resolveDefaultThreshold(undefined, catalog.packs.buffalo_l), {
    value: UPSTREAM_DEFAULT_THRESHOLD,
    source: 'upstream',
  });
  t.deepEqual(resolveDefaultThreshold(undefined, undefined), { value: 0.4, source: 'upstream' });
});
