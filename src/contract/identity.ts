import { z } from 'zod';
import { schemaId as id } from './common.js';

/**
 * Why a monitor face has its identity (Vigil extension, issue 42). With [monitors] track_identity on, a track
 * keeps the best frames it has seen by quality and is identified on the quality-weighted mean of their
 * embeddings (one template), re-decided as better frames arrive; a change of identity must clear the previous
 * decision by track_hysteresis. Off: every frame is identified on its own (method frame).
 */
export const IdentityBasis = z
  .looseObject({
    method: z
      .enum(['track', 'frame'])
      .describe('track: decided on the pooled template of the track bank; frame: on this frame alone.'),
    frames: z.int().describe('Frames whose embeddings made the decision (the bank, best quality first; 1 for frame).'),
    frames_seen: z.int().describe('Frames of this track embedded so far.'),
    best_quality: z.number().describe('The best quality.score among the frames used.'),
    similarity: z.number().nullable().describe('Of the decided person (null: unknown).'),
    runner_up: z
      .looseObject({ person_id: z.string(), similarity: z.number() })
      .nullable()
      .describe('The most similar other person (unknown: the most similar person, below the threshold).'),
    margin: z.number().nullable().describe('similarity minus the runner-up similarity (null when either is missing).'),
  })
  .meta(id('IdentityBasis'));
export type IdentityBasisT = z.infer<typeof IdentityBasis>;
