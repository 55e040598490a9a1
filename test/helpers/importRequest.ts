import type { TestDaemon } from './daemon.js';

/** An embedding as the bulk import takes it: base64 of its float32 little-endian bytes. */
export const b64 = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
/** One JSON line per person. */
export const ndjson = (persons: unknown[]) => persons.map((p) => JSON.stringify(p)).join('\n') + '\n';

/**
 * POST /v1/collections/{id}/import?{query} with an NDJSON body: the answer's NDJSON lines (progress, conflict,
 * done or error), or its error envelope as `json` when the import was refused before it began.
 */
export async function postImport(d: TestDaemon, collection: string, body: string, query: string) {
  const res = await fetch(`${d.url}/v1/collections/${collection}/import?${query}`, {
    method: 'POST',
    headers: { ...d.auth, 'content-type': 'application/x-ndjson' },
    body,
  });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  return {
    status: res.status,
    lines: type.includes('ndjson')
      ? text
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, any>)
      : [],
    json: type.includes('json') && !type.includes('ndjson') ? (JSON.parse(text) as Record<string, any>) : null,
  };
}
