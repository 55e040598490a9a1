import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import type { RecommendedThreshold } from '../models/catalog.js';
import type { InstalledPack } from '../models/installed.js';
import type { LivenessModelFile } from '../models/catalog.js';

/** Compact JSON with sorted keys (Python's json.dumps(sort_keys=True, separators=(",", ":"))). */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The model digest binds collections to the exact files and preprocessing (§3.7): any change to the
 * detector, recognizer or alignment inputs changes it. Hashes come from the files actually loaded.
 */
export function modelDigest(pack: InstalledPack): string {
  const parts = [
    {
      sha256: pack.detector.sha256,
      input_size: null,
      input_mean: pack.detector.mean,
      input_std: pack.detector.std,
      preprocessing_version: pack.detector.preprocessing_version,
    },
    {
      sha256: pack.recognizer.sha256,
      input_size: pack.recognizer.input_size,
      input_mean: pack.recognizer.mean,
      input_std: pack.recognizer.std,
      preprocessing_version: pack.recognizer.preprocessing_version,
    },
  ];
  return createHash('sha256').update(canonicalJson(parts)).digest('hex');
}

export interface ModelComponentInfo {
  model_id: string;
  task: string;
  sha256: string;
  file: string;
  input_size: number[] | null;
  embedding_dimension: number | null;
  preprocessing_version: string;
}

export interface ModelInfo {
  model_id: string;
  model_digest: string;
  embedding_dimension: number;
  preprocessing_version: string;
  provider: string;
  models: ModelComponentInfo[];
  license: Record<string, unknown> | null;
  /** Active addons, listed apart from the base files (they never change model_digest). */
  addons?: ModelComponentInfo[];
  /** The pack's measured default match threshold; null when the pack has none (upstream 0.4 applies). */
  recommended_threshold: RecommendedThreshold | null;
}

const stem = (file: string) => basename(file).replace(/\.onnx$/, '');

export function describePack(pack: InstalledPack, provider: string, liveness?: LivenessModelFile[]): ModelInfo {
  return {
    model_id: pack.id,
    model_digest: modelDigest(pack),
    embedding_dimension: pack.recognizer.embedding_dimension,
    preprocessing_version: pack.recognizer.preprocessing_version,
    provider,
    models: [
      {
        model_id: stem(pack.detector.file),
        task: 'face_detection',
        sha256: pack.detector.sha256,
        file: pack.detector.file,
        input_size: null,
        embedding_dimension: null,
        preprocessing_version: pack.detector.preprocessing_version,
      },
      {
        model_id: stem(pack.recognizer.file),
        task: 'face_recognition',
        sha256: pack.recognizer.sha256,
        file: pack.recognizer.file,
        input_size: [...pack.recognizer.input_size],
        embedding_dimension: pack.recognizer.embedding_dimension,
        preprocessing_version: pack.recognizer.preprocessing_version,
      },
    ],
    license: { ...pack.license, components: pack.licenses },
    recommended_threshold: pack.recommended_threshold ? { ...pack.recommended_threshold } : null,
    ...(liveness
      ? {
          addons: liveness.map((m) => ({
            model_id: 'liveness',
            task: 'liveness',
            sha256: m.sha256,
            file: `addons/liveness/${m.file}`,
            input_size: [...m.input_size],
            embedding_dimension: null,
            preprocessing_version: `silent-face-${m.context_scale}x-${m.channel_order}`,
          })),
        }
      : {}),
  };
}
