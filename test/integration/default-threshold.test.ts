import test from 'ava';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  call,
  face,
  form,
  modelsDirWith,
  packThreshold,
  post,
  REPO,
  startTestDaemon,
  type TestDaemon,
} from '../helpers/daemon.js';
import { tempDir } from '../helpers/tempDir.js';

/**
 * The default match threshold follows the active pack's measured recommended_threshold unless the
 * operator configured one; an explicit client threshold is used exactly as sent (upstream behaviour).
 */
const OBAMA = ['identities/obama/1.jpg', 'identities/obama/4.jpg'] as const;

async function defaults(d: TestDaemon) {
  const models = await call(d, 'GET', '/v1/models');
  const system = await call(d, 'GET', '/v1/system');
  const created = await call(d, 'POST', '/v1/collections', { id: 'c', name: 'C' });
  const compare = await post(d, '/v1/compare', form({ source: face(OBAMA[0]), target: face(OBAMA[1]) }));
  return {
    models: models.json,
    safe: system.json.safe_config,
    systemModel: system.json.model,
    collection: created.json.collection,
    compare: compare.json,
  };
}

test('edge_s with no default_threshold configured: /v1/models reports the pack value and compare and collections use it', async (t) => {
  const d = await startTestDaemon();
  try {
    const expected = packThreshold('edge_s');
    t.not(expected, 0.4, 'the manifest declares a measured value for edge_s');
    const r = await defaults(d);
    t.is(r.models.recommended_threshold.similarity, expected);
    t.is(r.models.recommended_threshold.far, 2e-4);
    t.regex(r.models.recommended_threshold.basis, /bench\/quality\.ts/);
    t.is(r.models.default_threshold, expected);
    t.is(r.models.default_threshold_source, 'pack');
    t.deepEqual(r.systemModel.recommended_threshold, r.models.recommended_threshold);
    t.is(r.safe.default_similarity_threshold, expected);
    t.is(r.collection.default_threshold, expected);
    t.is(r.compare.threshold, expected);
    t.is(r.compare.matched, r.compare.similarity >= expected);

    // An explicit client threshold is honoured exactly, including the upstream 0.4, inclusively.
    const explicit = await post(
      d,
      '/v1/compare',
      form({ source: face(OBAMA[0]), target: face(OBAMA[1]), threshold: '0.4' }),
    );
    t.is(explicit.json.threshold, 0.4);
    const atSimilarity = await post(
      d,
      '/v1/compare',
      form({ source: face(OBAMA[0]), target: face(OBAMA[1]), threshold: String(r.compare.similarity) }),
    );
    t.true(atSimilarity.json.matched);
    const pinned = await call(d, 'POST', '/v1/collections', { id: 'pinned', name: 'Pinned', threshold: 0.4 });
    t.is(pinned.json.collection.default_threshold, 0.4);
    // Search defaults to the collection's stored threshold, and an explicit one overrides it.
    t.is((await post(d, '/v1/collections/c/persons', form({ id: 'obama', images: face(OBAMA[0]) }))).res.status, 201);
    const s = await post(d, '/v1/collections/c/search', form({ image: face(OBAMA[1]) }));
    t.is(s.json.threshold, expected);
    t.is(s.json.matches[0]?.person.id, 'obama');
    const strict = await post(d, '/v1/collections/c/search', form({ image: face(OBAMA[1]), threshold: '0.99' }));
    t.is(strict.json.threshold, 0.99);
    t.deepEqual(strict.json.matches, []);
  } finally {
    await d.close();
  }
});

test('edge_open follows its own measured threshold', async (t) => {
  const d = await startTestDaemon({ pack: 'edge_open', toml: '[inference]\nmodel_pack = "edge_open"' });
  try {
    const expected = packThreshold('edge_open');
    const r = await defaults(d);
    t.is(r.models.model_id, 'edge_open');
    t.is(r.models.default_threshold, expected);
    t.is(r.collection.default_threshold, expected);
    t.is(r.compare.threshold, expected);
  } finally {
    await d.close();
  }
});

test('a configured default_threshold wins over the pack, which is still reported', async (t) => {
  const d = await startTestDaemon({ toml: '[inference]\ndefault_threshold = 0.45' });
  try {
    const r = await defaults(d);
    t.is(r.models.default_threshold, 0.45);
    t.is(r.models.default_threshold_source, 'config');
    t.is(r.models.recommended_threshold.similarity, packThreshold('edge_s'));
    t.is(r.safe.default_similarity_threshold, 0.45);
    t.is(r.collection.default_threshold, 0.45);
    t.is(r.compare.threshold, 0.45);
  } finally {
    await d.close();
  }
});

test('a pack without a measured threshold (as buffalo_* here) keeps the upstream 0.4', async (t) => {
  const dir = tempDir(t, 'vigil-threshold-');
  const catalog = JSON.parse(readFileSync(join(REPO, 'models/manifest.json'), 'utf8'));
  delete catalog.packs.edge_s.recommended_threshold;
  writeFileSync(join(dir, 'catalog.json'), JSON.stringify(catalog));
  const d = await startTestDaemon({
    dir,
    modelsDir: await modelsDirWith('edge_s'),
    server: [`model_catalog = ${JSON.stringify(join(dir, 'catalog.json'))}`],
  });
  try {
    const r = await defaults(d);
    t.is(r.models.recommended_threshold, null);
    t.is(r.models.default_threshold, 0.4);
    t.is(r.models.default_threshold_source, 'upstream');
    t.is(r.collection.default_threshold, 0.4);
    t.is(r.compare.threshold, 0.4);
  } finally {
    await d.close();
  }
});
