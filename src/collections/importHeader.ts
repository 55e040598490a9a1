import { Errors } from '../contract/errors.js';
import type { ExportHeader } from './galleryImport.js';
import { isExportHeader } from './importLines.js';

/** How far the first line is looked at for an export header (a header is a few hundred bytes). */
const MAX_HEADER_BYTES = 64 * 1024;

/**
 * The export header of an import body, when its first line is one, and the body to parse: the bytes read
 * to find the line are given back in front of the rest (the line parser skips the header itself). A body
 * whose first line is longer than MAX_HEADER_BYTES has no header (it is a person line).
 */
export async function takeExportHeader(
  source: AsyncIterable<Buffer>,
): Promise<{ header: ExportHeader | null; body: AsyncIterable<Buffer> }> {
  const it = source[Symbol.asyncIterator]();
  const taken: Buffer[] = [];
  let bytes = 0,
    newline = -1,
    ended = false;
  while (newline < 0 && bytes < MAX_HEADER_BYTES) {
    const next = await it.next();
    if (next.done) {
      ended = true;
      break;
    }
    const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
    const at = chunk.indexOf(10);
    if (at >= 0) newline = bytes + at;
    taken.push(chunk);
    bytes += chunk.length;
  }
  const head = Buffer.concat(taken);
  const first = head.subarray(0, newline >= 0 ? newline : ended ? head.length : 0).toString('utf8');
  let header: ExportHeader | null = null;
  if (isExportHeader(first)) {
    try {
      header = JSON.parse(first) as ExportHeader;
    } catch {
      throw Errors.invalidImportLine(1, 'the gallery export header is not valid JSON');
    }
  }
  const body = (async function* () {
    if (head.length) yield head;
    if (ended) return;
    for (let next = await it.next(); !next.done; next = await it.next()) yield next.value;
  })();
  return { header, body };
}

/**
 * The contract an import's embeddings are checked against: the query's, else the export header's. Both
 * given and different is import_contract_conflict; neither is missing_embedding_contract_id.
 */
export function importContract(query: string | undefined, header: Pick<ExportHeader, 'embedding_contract_id'> | null) {
  const fromHeader = header?.embedding_contract_id ?? null;
  if (query && fromHeader && query !== fromHeader) throw Errors.importContractConflict(query, fromHeader);
  const contract = query || fromHeader;
  if (!contract) throw Errors.missingEmbeddingContractId();
  return contract;
}
