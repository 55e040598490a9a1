import type { RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';
import { Errors } from '../../contract/errors.js';
import { parseMultipart } from '../multipart.js';
import { requireInference } from '../ready.js';
import {
  CompareBody,
  CompareResponse,
  DetectBody,
  DetectResponse,
  EmbeddingsBody,
  EmbeddingsResponse,
} from '../../contract/faces.js';
import { faceObservation, processingMs } from '../../inference/observation.js';

// The form fields besides the files, built once: a zod schema made per request is compiled again each time.
const DetectFields = DetectBody.omit({ image: true });
const CompareFields = CompareBody.omit({ source: true, target: true });
const EmbeddingsFields = EmbeddingsBody.omit({ image: true });

export function faceRoutes(rt: Runtime): RouteSpec[] {
  const s = rt.loaded.config.server;
  const limits = (files: string[]) => ({
    requiredFiles: files,
    maxFileBytes: s.max_image_bytes,
    maxFiles: files.length,
  });
  return [
    {
      method: 'post',
      path: '/v1/detect',
      operationId: 'detect_v1_detect_post',
      summary: 'Detect',
      tags: ['faces'],
      role: 'operator',
      audit: false,
      description: 'Detect faces without generating recognition embeddings. Faces are sorted by descending box area.',
      body: { contentType: 'multipart/form-data', schema: DetectBody },
      success: { status: 200, schema: DetectResponse },
      handler: async (ctx) => {
        const inf = requireInference(rt);
        const { fields, files } = await parseMultipart(ctx, { fields: DetectFields, ...limits(['image']) });
        if (fields.min_score !== undefined && fields.min_score !== null)
          throw Errors.requestDetectionOverrideNotSupported(
            'min_score',
            'set the detection threshold in the server or collection detection profile.',
          );
        const t0 = performance.now();
        const r = await inf.faces.detect(
          {
            image: files[0]!.bytes,
            maxFaces: fields.max_faces,
            profile: rt.collections.detectionProfile(fields.collection_id),
          },
          ctx.state.signal,
        );
        ctx.body = {
          request_id: ctx.state.requestId,
          faces: r.faces.map((f) => faceObservation(f, r.width, r.height)),
          processing_ms: processingMs(t0),
        };
      },
    },
    {
      method: 'post',
      path: '/v1/compare',
      operationId: 'compare_v1_compare_post',
      summary: 'Compare',
      tags: ['faces'],
      role: 'operator',
      audit: false,
      description:
        'Compare the selected face of two images. similarity is the raw cosine; matched is similarity >= threshold.',
      body: { contentType: 'multipart/form-data', schema: CompareBody },
      success: { status: 200, schema: CompareResponse },
      handler: async (ctx) => {
        const inf = requireInference(rt);
        const { fields, files } = await parseMultipart(ctx, { fields: CompareFields, ...limits(['source', 'target']) });
        const file = (name: string) => files.find((f) => f.field === name)!.bytes;
        const t0 = performance.now();
        const r = await inf.faces.compare(
          {
            source: file('source'),
            target: file('target'),
            threshold: fields.threshold,
            profile: rt.collections.detectionProfile(fields.collection_id),
          },
          ctx.state.signal,
        );
        ctx.body = {
          request_id: ctx.state.requestId,
          matched: r.matched,
          similarity: r.similarity,
          threshold: r.threshold,
          source_face: faceObservation(r.source.face, r.source.width, r.source.height),
          target_face: faceObservation(r.target.face, r.target.width, r.target.height),
          processing_ms: processingMs(t0),
        };
      },
    },
    {
      method: 'post',
      path: '/v1/embeddings',
      operationId: 'embeddings_v1_embeddings_post',
      summary: 'Embeddings',
      tags: ['faces'],
      role: 'operator',
      audit: false,
      description: 'The L2-normalised embedding of the selected face (exactly one face).',
      body: { contentType: 'multipart/form-data', schema: EmbeddingsBody },
      success: { status: 200, schema: EmbeddingsResponse },
      handler: async (ctx) => {
        const inf = requireInference(rt);
        const { fields, files } = await parseMultipart(ctx, { fields: EmbeddingsFields, ...limits(['image']) });
        if (fields.face_selection !== undefined && fields.face_selection !== null)
          throw Errors.requestDetectionOverrideNotSupported(
            'face_selection',
            'the collection or server detection profile selects the face.',
          );
        const t0 = performance.now();
        const r = await inf.faces.embedOne(
          { image: files[0]!.bytes, profile: rt.collections.detectionProfile(fields.collection_id) },
          ctx.state.signal,
        );
        ctx.body = {
          request_id: ctx.state.requestId,
          faces: [faceObservation(r.face, r.width, r.height, { embedding: true })],
          model: inf.model,
          processing_ms: processingMs(t0),
        };
      },
    },
  ];
}
