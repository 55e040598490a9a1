import { availableParallelism } from 'node:os';
import { PIPELINE_PRESETS } from './pipelinePresets.js';

/**
 * Cameras per CPU core when `[monitors] max_streams` is not set. Software decoding: 4, from the monitor bench
 * on 2-core VMs (docs/performance.md#cameras): 8 and 10 streams of 720p25 sustained at 5 inference fps with a
 * face always in every frame, so 4 per core leaves that busiest case its headroom (a quiet, motion-gated
 * camera costs far less: docs/performance.md#capacity). A hardware decoder takes decoding (about a third of a
 * busy camera's CPU in that bench) off the cores: 6 per core, derived from the same bench, not measured on
 * such hardware.
 */
export const STREAMS_PER_CORE = { software: 4, hardware: 6 } as const;

/** Whether the pipeline template decodes with one of the hardware presets' decoders. */
export function hardwareDecoded(pipeline: string): boolean {
  return PIPELINE_PRESETS.some((p) => p.id !== 'software' && pipeline.includes(p.decoder));
}

/** `[monitors] max_streams` as the daemon applies it: the configured number, else from the cores and the decoder. */
export function effectiveMaxStreams(
  m: { max_streams?: number | undefined; pipeline: string },
  cores: number = availableParallelism(),
): number {
  if (m.max_streams !== undefined) return m.max_streams;
  const perCore = STREAMS_PER_CORE[hardwareDecoded(m.pipeline) ? 'hardware' : 'software'];
  return Math.min(64, Math.max(1, Math.floor(cores * perCore)));
}
