import { PassThrough, Readable } from 'node:stream';
import { z } from 'zod';
import { IMPORT_ON_CONFLICT, type ImportTotals } from '../../collections/galleryImport.js';
import { importContract, takeExportHeader } from '../../collections/importHeader.js';
import { parseImportStream } from '../../collections/importStream.js';
import { ApiError, Errors, isApiError } from '../../contract/errors.js';
import { readQuery } from '../input.js';
import type { AppContext, RouteSpec } from '../route.js';
import type { Runtime } from '../runtime.js';

const ImportQuery = z.strictObject({
  embedding_contract_id: z.string().max(256).optional(),
  batch_size: z.coerce.number().int().min(1).max(100_000).default(1000),
  /** skip: resume an import that was cut off (persons already there with the file's faces are skipped). */
  on_conflict: z.enum(IMPORT_ON_CONFLICT).default('error'),
});

/** The path is exempt from [server].max_request_bytes: the stream is bounded per line and per batch instead. */
export const GALLERY_IMPORT_PATH = /^\/v1\/collections\/[^/]+\/import$/;

/**
 * POST /v1/collections/{id}/import (Vigil extension): NDJSON persons in, NDJSON progress out. The
 * first batch is committed before the status is chosen, so a request that fails at once gets the usual
 * error envelope and status; after that every committed batch is acknowledged by a progress line, and a
 * later failure ends the stream with an error line naming what was committed (nothing of the failed batch).
 */
export function galleryImportRoutes(rt: Runtime): RouteSpec[] {
  const imports = rt.galleryImport;
  return [
    {
      method: 'get',
      path: '/v1/collections/{collection_id}/export',
      operationId: 'export_gallery_v1_collections__collection_id__export_get',
      summary: 'Export Gallery',
      tags: ['collections'],
      role: 'admin',
      audit: true,
      description:
        'The collection as streamed NDJSON: a header line {"type":"vigil_gallery_export","embedding_contract_id",...,"persons","faces"}, then one person per line ' +
        'in the import format (embeddings as base64 float32-LE) plus "crops" (base64 JPEG face crops, when the collection saved them). POST it to /import of a collection ' +
        'with the same embedding_contract_id; for another contract, `vigil gallery import` re-embeds from the crops.',
      success: {
        status: 200,
        schema: null,
        media: 'application/x-ndjson',
        description: 'Header line, then one person per line.',
      },
      handler: async (ctx: AppContext) => {
        const collectionId = ctx.params.collection_id!;
        const lines = imports.export(collectionId);
        const first = lines.next(); // a missing collection is a 404 envelope, before the stream starts
        ctx.set('Content-Type', 'application/x-ndjson; charset=utf-8');
        ctx.set('Content-Disposition', `attachment; filename="${collectionId}.gallery.ndjson"`);
        ctx.body = Readable.from(
          (function* () {
            if (!first.done) yield first.value;
            yield* lines;
          })(),
        );
      },
    },
    {
      method: 'post',
      path: '/v1/collections/{collection_id}/import',
      operationId: 'import_gallery_v1_collections__collection_id__import_post',
      summary: 'Import Gallery',
      tags: ['collections'],
      role: 'operator',
      description:
        'Bulk import of persons with trusted embeddings (external_trusted semantics). embedding_contract_id comes from the query or, for a gallery export, from its header line ' +
        '(both given and different: 400 import_contract_conflict); an export line\'s "crops" (crops[i]: the base64 JPEG of embeddings[i], or null) are kept with their faces when the collection saves crops ' +
        '("crops" and "crops_dropped" in the progress lines count them). Body: application/x-ndjson, one person per line: ' +
        '{"id","name"?,"external_id"?,"metadata"?,"embeddings":[[...512 numbers] or "base64 of little-endian float32"]}. Batches of batch_size persons commit ' +
        'all-or-nothing and are searchable before their progress line {"type":"progress",...} is written; the stream ends with {"type":"done",...} or {"type":"error","error":{...},"committed":{...}}. ' +
        'on_conflict=skip resumes an import that was cut off: a person the collection has with the same faces is skipped (counted in "skipped"), one with other faces or a new person whose external_id is taken ' +
        'is left as it is and reported on a {"type":"conflict","person_id",...,"error":{"code":"import_person_conflict",...}} line (counted in "conflicts"); the default (error) stops at the first existing person (person_exists).',
      query: ImportQuery,
      success: {
        status: 200,
        schema: null,
        media: 'application/x-ndjson',
        description: 'Progress lines, one per committed batch, then done or error.',
      },
      handler: async (ctx: AppContext) => {
        const q = readQuery(ctx, ImportQuery);
        const collectionId = ctx.params.collection_id!;
        // The contract: the query's, else the one in the export header on the body's first line (read first).
        const { header, body } = await takeExportHeader(ctx.req as AsyncIterable<Buffer>);
        const contract = importContract(q.embedding_contract_id, header);
        const c = imports.begin(collectionId, contract);
        const releaseBuilds = imports.holdIndexBuilds(collectionId);
        const totals: ImportTotals = { batches: 0, persons: 0, faces: 0, crops: 0, crops_dropped: 0 };
        const skipping = q.on_conflict === 'skip';
        const resumed = { skipped: 0, conflicts: 0 };
        const started = performance.now();
        const progress = () => ({
          ...totals,
          ...(skipping ? resumed : {}),
          faces_per_second: Math.round(totals.faces / Math.max(1e-3, (performance.now() - started) / 1000)),
        });
        const out = new PassThrough();
        const write = (o: unknown) => out.write(`${JSON.stringify(o)}\n`);
        /** The conflicts of the last batch, written before its progress line (the first one once the status is sent). */
        let conflictLines: unknown[] = [];
        const writeProgress = () => {
          for (const c of conflictLines) write(c);
          conflictLines = [];
          write({ type: 'progress', ...progress() });
        };
        // Lines are parsed and checked in a worker thread, one batch ahead of the commits (parseImportStream).
        const input = parseImportStream(body, c.embedding_dimension, q.batch_size);
        /** Commits the next batch (true) or finds the input ended (false). */
        const step = async (): Promise<boolean> => {
          const next = await input.next();
          if (next.done) return false;
          const r = await imports.commitBatch(collectionId, contract, next.value, q.on_conflict);
          totals.batches++;
          totals.persons += r.persons;
          totals.faces += r.faces;
          totals.crops += r.crops;
          totals.crops_dropped += r.crops_dropped;
          resumed.skipped += r.skipped;
          resumed.conflicts += r.conflicts.length;
          for (const e of r.conflicts)
            conflictLines.push({
              type: 'conflict',
              person_id: (e.details as { person_id: string }).person_id,
              error: { code: e.code, message: e.message, details: e.details },
            });
          return true;
        };
        // Errors here are ordinary responses (status + envelope): nothing was acknowledged yet.
        let more: boolean;
        try {
          more = await step();
        } catch (e) {
          releaseBuilds();
          await input.return(undefined);
          throw e;
        }
        ctx.status = 200;
        ctx.type = 'application/x-ndjson';
        ctx.body = out;
        writeProgress();
        const finish = async () => {
          try {
            if (more) while (await step()) writeProgress();
            write({ type: 'done', ...progress() });
          } catch (e) {
            const err: ApiError = isApiError(e) ? e : Errors.internalError();
            rt.log.warn({ collection_id: collectionId, code: err.code, committed: totals }, 'gallery import stopped');
            write({
              type: 'error',
              error: { code: err.code, message: err.message, details: err.details },
              status: err.status,
              committed: progress(),
              request_id: ctx.state.requestId,
            });
            ctx.req.resume();
          }
          await input.return(undefined);
          releaseBuilds();
          out.end();
        };
        void finish();
      },
    },
  ];
}
