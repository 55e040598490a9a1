import { createReadStream, createWriteStream, fchmodSync, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface GalleryImportArgs {
  url: string;
  key: string | null;
  collection: string;
  file: string;
  contractId: string | null;
  batchSize: number;
  requestPersons?: number;
  /** skip: resume an import that was cut off (see POST /v1/collections/{id}/import, on_conflict). */
  onConflict?: 'error' | 'skip';
}

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
export async function runGalleryImport(
  a: GalleryImportArgs,
  out: NodeJS.WritableStream = process.stdout,
): Promise<number> {
  const headers: Record<string, string> = a.key ? { Authorization: `Bearer ${a.key}` } : {};
  const base = a.url.replace(/\/$/, '');
  const col = `${base}/v1/collections/${encodeURIComponent(a.collection)}`;
  let contract = a.contractId;
  const header = await readHeader(a.file);
  if (!contract || header) {
    const res = await fetch(col, { headers });
    const body = (await res.json()) as {
      collection?: { embedding_contract_id: string };
      error?: { code: string; message: string };
    };
    if (!res.ok || !body.collection) {
      out.write(errorLine(res.status, body));
      return 1;
    }
    const target = body.collection.embedding_contract_id;
    // A gallery export from a box with another model: its embeddings mean nothing here, re-embed from the crops.
    if (header && header.embedding_contract_id !== target) {
      out.write(
        `${JSON.stringify({ type: 'info', message: `the export's embedding contract ${header.embedding_contract_id} differs from the collection's ${target}: re-embedding from face crops` })}\n`,
      );
      return reembedImport(a, headers, out, header.persons);
    }
    contract = header ? header.embedding_contract_id! : (contract ?? target);
  }
  const lines = createInterface({ input: createReadStream(a.file), crlfDelay: Infinity })[Symbol.asyncIterator]();
  const perRequest = a.requestPersons ?? REQUEST_PERSONS;
  let ended = false;
  let last: {
    type?: string;
    batches?: number;
    persons?: number;
    faces?: number;
    skipped?: number;
    conflicts?: number;
  } = {};
  const skip = a.onConflict === 'skip';
  const total = { batches: 0, persons: 0, faces: 0, requests: 0, ...(skip ? { skipped: 0, conflicts: 0 } : {}) };
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
    const res = await fetch(
      `${col}/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=${a.batchSize}${skip ? '&on_conflict=skip' : ''}`,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/x-ndjson' },
        body,
        duplex: 'half',
      } as RequestInit,
    );
    if (!res.ok || !res.body) {
      // An empty last request (the file ended exactly at a request boundary) is not an error.
      const body = await res.text().catch(() => '');
      if (sent === 0 && ended && total.requests > 0) break;
      out.write(errorLine(res.status, body));
      return 1;
    }
    // Read after the status check: a refused request's body is its error envelope.
    const text = res.body.pipeThrough(new TextDecoderStream());
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
    if (total.skipped !== undefined) total.skipped += last.skipped ?? 0;
    if (total.conflicts !== undefined) total.conflicts += last.conflicts ?? 0;
  }
  out.write(
    `${JSON.stringify({ type: 'done', ...total, faces_per_second: Math.round(total.faces / Math.max(1e-3, (performance.now() - started) / 1000)) })}\n`,
  );
  // A person left as it is (a conflict line each) is a partial import.
  return total.conflicts ? 1 : 0;
}

/** `vigil gallery export COLLECTION FILE`: streams GET /v1/collections/{id}/export into FILE. */
export async function runGalleryExport(
  a: { url: string; key: string | null; collection: string; file: string },
  out: NodeJS.WritableStream = process.stdout,
): Promise<number> {
  const headers: Record<string, string> = a.key ? { Authorization: `Bearer ${a.key}` } : {};
  const res = await fetch(`${a.url.replace(/\/$/, '')}/v1/collections/${encodeURIComponent(a.collection)}/export`, {
    headers,
  });
  if (!res.ok || !res.body) {
    out.write(errorLine(res.status, await res.text().catch(() => '')));
    return 1;
  }
  let persons = 0;
  const counter = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, ctl) {
      for (const b of chunk) if (b === 10) persons++;
      ctl.enqueue(chunk);
    },
  });
  // The export holds every embedding and face crop: 0600 whatever the umask (an existing file keeps its mode on open).
  const fd = openSync(a.file, 'w', 0o600);
  fchmodSync(fd, 0o600);
  await pipeline(Readable.fromWeb(res.body.pipeThrough(counter) as never), createWriteStream('', { fd }));
  out.write(`exported ${Math.max(0, persons - 1)} persons of ${a.collection} to ${a.file}\n`);
  return 0;
}

/** One line for a refused request: the API's error code and message (the status only when the body has none). */
export function errorLine(status: number, body: string | { error?: { code?: string; message?: string } }): string {
  let parsed: { error?: { code?: string; message?: string } } | null = null;
  try {
    parsed = typeof body === 'string' ? (JSON.parse(body) as typeof parsed) : body;
  } catch {
    // not JSON: a proxy's page, an empty body
  }
  const e = parsed?.error;
  if (e?.code) return `error: ${e.code}: ${e.message ?? ''}\n`;
  const text = typeof body === 'string' ? body.trim().slice(0, 200) : '';
  return `error: HTTP ${status}${text ? `: ${text}` : ''}\n`;
}

/** The export header of a file, when its first line is one. */
async function readHeader(file: string): Promise<{ embedding_contract_id: string | null; persons: number } | null> {
  const rl = createInterface({ input: createReadStream(file), crlfDelay: Infinity });
  try {
    for await (const line of rl) {
      return line.startsWith('{"type":"vigil_gallery_export"')
        ? (JSON.parse(line) as { embedding_contract_id: string | null; persons: number })
        : null;
    }
    return null;
  } finally {
    rl.close();
  }
}

/**
 * Import of a gallery export into a collection whose embedding contract differs (another model): each
 * person is registered anew from its face crops through POST /v1/collections/{id}/persons, so the
 * target model computes the embeddings. Persons without crops cannot move between models and are listed.
 */
async function reembedImport(
  a: GalleryImportArgs,
  headers: Record<string, string>,
  out: NodeJS.WritableStream,
  total: number,
): Promise<number> {
  const col = `${a.url.replace(/\/$/, '')}/v1/collections/${encodeURIComponent(a.collection)}`;
  let done = 0,
    failed = 0,
    noCrops = 0,
    existing = 0;
  const rl = createInterface({ input: createReadStream(a.file), crlfDelay: Infinity });
  let first = true;
  for await (const line of rl) {
    if (first) {
      first = false;
      continue;
    } // the header
    if (!line.trim()) continue;
    const p = JSON.parse(line) as {
      id: string;
      name: string | null;
      external_id: string | null;
      metadata: Record<string, unknown>;
      crops?: (string | null)[];
    };
    const crops = (p.crops ?? []).filter((c): c is string => typeof c === 'string');
    if (!crops.length) {
      noCrops++;
      out.write(
        `${JSON.stringify({ type: 'skipped', id: p.id, reason: 'no face crops in the export (the source collection did not save crops), so it cannot be re-embedded' })}\n`,
      );
      continue;
    }
    const fd = new FormData();
    fd.append('id', p.id);
    if (p.name) fd.append('name', p.name);
    if (p.external_id) fd.append('external_id', p.external_id);
    fd.append('metadata', JSON.stringify(p.metadata ?? {}));
    crops.forEach((c, i) =>
      fd.append('images', new Blob([Buffer.from(c, 'base64')], { type: 'image/jpeg' }), `${p.id}-${i}.jpg`),
    );
    const res = await fetch(`${col}/persons`, { method: 'POST', headers, body: fd });
    if (res.status === 201) done++;
    else {
      const body = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string } };
      // A re-run of a re-embedding import that was cut off: the persons it registered are there (their
      // embeddings come from this box's model, so only their presence can be checked).
      if (a.onConflict === 'skip' && body.error?.code === 'person_exists') {
        existing++;
        out.write(
          `${JSON.stringify({ type: 'skipped', id: p.id, reason: 'already in the collection (on_conflict=skip)' })}\n`,
        );
        continue;
      }
      failed++;
      out.write(`${JSON.stringify({ type: 'failed', id: p.id, status: res.status, error: body.error ?? null })}\n`);
    }
    if ((done + failed) % 10 === 0)
      out.write(`${JSON.stringify({ type: 'progress', reembedded: done, failed, skipped: noCrops, of: total })}\n`);
  }
  out.write(
    `${JSON.stringify({ type: 'done', mode: 'reembedded', persons: done, failed, skipped: noCrops, ...(a.onConflict === 'skip' ? { existing } : {}) })}\n`,
  );
  return failed === 0 && noCrops === 0 ? 0 : 1;
}
