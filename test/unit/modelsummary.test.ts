import test from 'ava';
import { createHash } from 'node:crypto';
import type { InstalledPack } from '../../src/models/installed.js';
import { describePack, modelDigest } from '../../src/inference/modelSummary.js';

const SHA_DET = 'a'.repeat(64);
const SHA_REC = 'b'.repeat(64);

function pack(): InstalledPack {
  return {
    id: 'edge_s',
    dir: '/models/edge_s',
    installed_at: '2025-01-01T00:00:00.000Z',
    detector: {
      file: 'det_500m.onnx',
      kind: 'scrfd',
      channel_order: 'rgb',
      mean: 127.5,
      std: 128,
      preprocessing_version: 'scrfd-v1',
      path: '/models/edge_s/det_500m.onnx',
      sha256: SHA_DET,
    },
    recognizer: {
      file: 'w600k_mbf.onnx',
      kind: 'arcface',
      input_size: [112, 112],
      channel_order: 'rgb',
      mean: 127.5,
      std: 127.5,
      embedding_dimension: 512,
      preprocessing_version: 'arcface-v1',
      path: '/models/edge_s/w600k_mbf.onnx',
      sha256: SHA_REC,
    },
    license: {
      id: 'insightface',
      name: 'InsightFace non-commercial',
      url: 'https://example.org/license',
      commercial_use: false,
      notice: 'Research only.',
    },
    licenses: [
      {
        id: 'insightface',
        name: 'InsightFace non-commercial',
        url: 'https://example.org/license',
        commercial_use: false,
        notice: 'Research only.',
        files: ['det_500m.onnx', 'w600k_mbf.onnx'],
      },
    ],
  } as InstalledPack;
}

test('modelDigest is a sha256 hex string and deterministic', (t) => {
  const d = modelDigest(pack());
  t.regex(d, /^[0-9a-f]{64}$/);
  t.is(modelDigest(pack()), d);
});

test('modelDigest equals sha256 of the sorted-key compact JSON (Python json.dumps(sort_keys=True))', (t) => {
  const expected =
    '[{"input_mean":127.5,"input_size":null,"input_std":128,"preprocessing_version":"scrfd-v1","sha256":"' +
    SHA_DET +
    '"},' +
    '{"input_mean":127.5,"input_size":[112,112],"input_std":127.5,"preprocessing_version":"arcface-v1","sha256":"' +
    SHA_REC +
    '"}]';
  t.is(modelDigest(pack()), createHash('sha256').update(expected).digest('hex'));
});

const mutations: [string, (p: InstalledPack) => void][] = [
  [
    'detector.sha256',
    (p) => {
      p.detector.sha256 = 'c'.repeat(64);
    },
  ],
  [
    'recognizer.sha256',
    (p) => {
      p.recognizer.sha256 = 'c'.repeat(64);
    },
  ],
  [
    'detector.mean',
    (p) => {
      p.detector.mean = 127;
    },
  ],
  [
    'detector.std',
    (p) => {
      p.detector.std = 1;
    },
  ],
  [
    'recognizer.mean',
    (p) => {
      p.recognizer.mean = 0;
    },
  ],
  [
    'recognizer.std',
    (p) => {
      p.recognizer.std = 128;
    },
  ],
  [
    'detector.preprocessing_version',
    (p) => {
      p.detector.preprocessing_version = 'scrfd-v2';
    },
  ],
  [
    'recognizer.preprocessing_version',
    (p) => {
      p.recognizer.preprocessing_version = 'arcface-v2';
    },
  ],
  [
    'recognizer.input_size',
    (p) => {
      p.recognizer.input_size = [128, 128];
    },
  ],
];

for (const [what, mutate] of mutations) {
  test(`modelDigest changes when ${what} changes`, (t) => {
    const p = pack();
    mutate(p);
    t.not(modelDigest(p), modelDigest(pack()));
  });
}

test('modelDigest swapping detector and recognizer hashes changes it', (t) => {
  const p = pack();
  p.detector.sha256 = SHA_REC;
  p.recognizer.sha256 = SHA_DET;
  t.not(modelDigest(p), modelDigest(pack()));
});

test('modelDigest ignores fields outside the digest (paths, id, licence, install time)', (t) => {
  const p = pack();
  p.id = 'other';
  p.dir = '/elsewhere';
  p.detector.path = '/elsewhere/det.onnx';
  p.recognizer.path = '/elsewhere/rec.onnx';
  p.installed_at = '2030-01-01T00:00:00.000Z';
  p.license = { ...p.license, notice: 'changed' };
  t.is(modelDigest(p), modelDigest(pack()));
});

test('modelDigest is stable across key order', (t) => {
  const base = pack();
  const reorder = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).reverse()) as T;
  const shuffled = reorder({ ...base, detector: reorder(base.detector), recognizer: reorder(base.recognizer) });
  t.notDeepEqual(Object.keys(shuffled.detector), Object.keys(base.detector));
  t.is(modelDigest(shuffled), modelDigest(base));
});

test('describePack fields', (t) => {
  const p = pack();
  const info = describePack(p, 'cuda');
  t.is(info.model_id, 'edge_s');
  t.is(info.model_digest, modelDigest(p));
  t.is(info.embedding_dimension, 512);
  t.is(info.preprocessing_version, 'arcface-v1');
  t.is(info.provider, 'cuda');
  t.deepEqual(info.models, [
    {
      model_id: 'det_500m',
      task: 'face_detection',
      sha256: SHA_DET,
      file: 'det_500m.onnx',
      input_size: null,
      embedding_dimension: null,
      preprocessing_version: 'scrfd-v1',
    },
    {
      model_id: 'w600k_mbf',
      task: 'face_recognition',
      sha256: SHA_REC,
      file: 'w600k_mbf.onnx',
      input_size: [112, 112],
      embedding_dimension: 512,
      preprocessing_version: 'arcface-v1',
    },
  ]);
  t.deepEqual(info.license, {
    id: 'insightface',
    name: 'InsightFace non-commercial',
    url: 'https://example.org/license',
    commercial_use: false,
    notice: 'Research only.',
    components: p.licenses,
  });
});

test('describePack copies input_size rather than aliasing the pack', (t) => {
  const p = pack();
  const info = describePack(p, 'cpu');
  info.models[1]!.input_size!.push(3);
  t.deepEqual(p.recognizer.input_size, [112, 112]);
});

test('describePack model_id strips directories and only the .onnx extension', (t) => {
  const p = pack();
  p.detector.file = 'sub/dir/yunet_2023mar.onnx';
  p.recognizer.file = 'glintr100.model.onnx';
  const info = describePack(p, 'cpu');
  t.is(info.models[0]!.model_id, 'yunet_2023mar');
  t.is(info.models[1]!.model_id, 'glintr100.model');
});
