import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';

export interface GalleryImportArgs { url: string; key: string | null; collection: string; file: string; contractId: string | null; batchSize: number; requestPersons?: number }

/**
 * Persons per HTTP request: the daemon's server must receive a whole request body within
 * `[server] request_timeout_seconds` + 5 s (Node's requestTimeout), so a million-face file goes as
 * several requests (20,000 persons = 100,000 faces of 5: ~5-20 s on a 2-core box).
 */
const REQUEST_PERSONS = 20_000;

/**
 * `vigil gallery import`: streams an NDJSON file to the running daemon's import endpoint (the daemon
 * owns the database) and prints its progress lines. The contract id is read from the collection when
 * not given. Exit 0 when the daemon says done, 1 when it stopped (what was committed is printed).
 */
export async function runGalleryImport(a: GalleryImportArgs, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const headers: Record<string, string> = a.key ? { Authorization: `Bearer ${a.key}` } : {};
  const base = a.url.replace(/\/$/, '');
  const col = `${base}/v1/collections/${encodeURIComponent(a.collection)}`;
  let contract = a.contractId;
  if (!contract) {
    const res = await fetch(col, { headers });
    const body = (await res.json()) as { collection?: { embedding_contract_id: string }; error?: { code: string; message: string } };
    if (!res.ok || !body.collection) {
      out.write(`error: ${body.error?.code ?? res.status}: ${body.error?.message ?? 'collection not readable'}\n`);
      return 1;
    }
    contract = body.collection.embedding_contract_id;
  }
  const lines = createInterface({ input: createReadStream(a.file), crlfDelay: Infinity })[Symbol.asyncIterator]();
  const perRequest = a.requestPersons ?? REQUEST_PERSONS;
  let ended = false;
  let last: { type?: string; batches?: number; persons?: number; faces?: number } = {};
  const total = { batches: 0, persons: 0, faces: 0, requests: 0 };
  const started = performance.now();
  while (!ended) {
    // One request streams the next `perRequest` lines of the file.
    let sent = 0;
    const enc = new TextEncoder();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        let chunk = '';
        while (sent < perRequest && chunk.length < 1 << 20) {
          const next = await lines.next();
          if (next.done) {
            ended = true;
            break;
          }
          if (next.value.trim() === '') continue;
          chunk += `${next.value}\n`;
          sent++;
        }
        if (chunk) controller.enqueue(enc.encode(chunk));
        if (ended || sent >= perRequest) controller.close();
      },
    });
    const res = await fetch(`${col}/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=${a.batchSize}`, {
      method: 'POST', headers: { ...headers, 'content-type': 'application/x-ndjson' }, body, duplex: 'half',
    } as RequestInit);
    const text = res.body ? res.body.pipeThrough(new TextDecoderStream()) : null;
    if (!res.ok || !text) {
      // An empty last request (the file ended exactly at a request boundary) is not an error.
      const body = await res.text().catch(() => '');
      if (sent === 0 && ended && total.requests > 0) break;
      out.write(`error: ${res.status} ${body}\n`);
      return 1;
    }
    let buf = '';
    for await (const chunk of text as unknown as AsyncIterable<string>) {
      buf += chunk;
      const parts = buf.split('\n');
      buf = parts.pop()!;
      for (const l of parts.filter(Boolean)) {
        last = JSON.parse(l) as typeof last;
        // Progress and error lines as the daemon wrote them (counts are per request); one done line at the end.
        if (last.type !== 'done') out.write(`${l}\n`);
      }
    }
    if (last.type !== 'done') return 1;
    total.requests++;
    total.batches += last.batches ?? 0;
    total.persons += last.persons ?? 0;
    total.faces += last.faces ?? 0;
  }
  out.write(`${JSON.stringify({ type: 'done', ...total, faces_per_second: Math.round(total.faces / Math.max(1e-3, (performance.now() - started) / 1000)) })}\n`);
  return 0;
}
