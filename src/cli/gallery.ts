import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';

export interface GalleryImportArgs { url: string; key: string | null; collection: string; file: string; contractId: string | null; batchSize: number }

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
  const res = await fetch(`${col}/import?embedding_contract_id=${encodeURIComponent(contract)}&batch_size=${a.batchSize}`, {
    method: 'POST', headers: { ...headers, 'content-type': 'application/x-ndjson' }, body: Readable.toWeb(createReadStream(a.file)) as ReadableStream, duplex: 'half',
  } as RequestInit);
  const text = res.body ? res.body.pipeThrough(new TextDecoderStream()) : null;
  if (!res.ok || !text) {
    out.write(`error: ${res.status} ${await res.text().catch(() => '')}\n`);
    return 1;
  }
  let last: { type?: string } = {};
  let buf = '';
  for await (const chunk of text as unknown as AsyncIterable<string>) {
    buf += chunk;
    const lines = buf.split('\n');
    buf = lines.pop()!;
    for (const l of lines.filter(Boolean)) {
      out.write(`${l}\n`);
      last = JSON.parse(l) as { type?: string };
    }
  }
  return last.type === 'done' ? 0 : 1;
}
