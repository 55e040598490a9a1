import { z } from 'zod';

/**
 * The wire vocabulary every layer shares (InsightFace Server 0.3.x names). Each `.meta({id})` becomes a
 * component in /openapi.json, and the same objects validate requests, so the two cannot drift.
 * Responses are loose objects (additionalProperties: true), as upstream. Nothing here imports our code.
 */
export const schemaId = (name: string) => ({ id: name });
export const requestId = z.uuid();
export const looseRecord = z.record(z.string(), z.unknown());
export const nextCursor = z.string().nullable();

export const ErrorEnvelope = z
  .object({
    error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()) }),
    request_id: z.uuid(),
  })
  .meta(schemaId('ErrorEnvelope'));

// ---- multipart and query fields: text fields are validated by these; file fields are documented. ----

/** A file part, as FastAPI documents UploadFile. Validation of files happens in the multipart parser. */
export const filePart = (title: string) => z.string().meta({ contentMediaType: 'application/octet-stream', title });
/** Multipart text fields arrive as strings; an empty string means "not sent", as in HTML forms. */
const emptyAsUndefined = (v: unknown) => (v === '' ? undefined : v);
/** A form/query text field: empty means absent, then `s` validates. */
export const formField = <S extends z.ZodType>(s: S) => z.preprocess(emptyAsUndefined, s);
/** Numeric text becomes a number before the typed schema validates it (so /openapi.json keeps type and bounds). */
const numericText = (v: unknown) => {
  const e = emptyAsUndefined(v);
  return typeof e === 'string' && e.trim() !== '' && Number.isFinite(Number(e)) ? Number(e) : e;
};
export const formNumber = (s: z.ZodNumber) => z.preprocess(numericText, s.nullish());
export const formString = (s: z.ZodString = z.string()) => formField(s.nullish());
/** An integer form/query field with bounds and a default. */
export const formInt = (min: number, max: number, def: number) =>
  z.preprocess(numericText, z.int().min(min).max(max).default(def));

/** Bodies that take exactly `{}` (actions). */
export const EmptyBody = z.strictObject({});
