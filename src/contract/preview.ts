import { z } from 'zod';
import { formField, formNumber, schemaId as id } from './common.js';

/**
 * The MJPEG preview's per-client parameters and the faces its parts carry (Vigil extension). Each part has
 * `X-Frame-Seq` (the session's frame number); with `boxes=true` the frames that were analysed carry their
 * own faces in `X-Faces`, so a client draws a frame's boxes on that frame and on no other.
 */
export const MonitorPreviewQuery = z.object({
  fps: formNumber(z.number().min(0.1).max(30)).describe(
    'Frames per second at most for this client (the server never sends more than [monitors] preview_fps).',
  ),
  width: formNumber(z.int().min(64).max(7680)).describe(
    'Width in pixels at most (never upscaled); rounded up to a multiple of 160 so clients share encodes.',
  ),
  boxes: formField(
    z
      .enum(['true', 'false', '1', '0'])
      .transform((v) => v === 'true' || v === '1')
      .optional(),
  ).describe(
    'Draw boxes: while faces are in view the stream sends the analysed frames (at the inference rate), each with its faces in X-Faces.',
  ),
});
export type MonitorPreviewQueryT = z.infer<typeof MonitorPreviewQuery>;

/** One face of an analysed preview frame (the X-Faces header is a JSON array of these, ASCII only). */
export const PreviewFace = z
  .object({
    status: z.enum(['matched', 'unknown', 'liveness_blocked']),
    box: z
      .object({ left: z.number(), top: z.number(), width: z.number(), height: z.number() })
      .describe('Normalised 0..1 in the frame.'),
    person: z.object({ id: z.string(), name: z.string().nullable() }).nullable(),
    similarity: z.number().nullable(),
  })
  .meta(id('PreviewFace'));
export type PreviewFaceT = z.infer<typeof PreviewFace>;
