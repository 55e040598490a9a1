import test from 'ava';
import { importContract, takeExportHeader } from '../../src/collections/importHeader.js';
import { parseImportPerson } from '../../src/collections/importLines.js';

/**
 * What a gallery import reads before its batches: the export header on the first line (the contract it
 * brings) with the body given back whole, and the crops of an export line, one per face.
 */
async function* chunks(...parts: string[]): AsyncGenerator<Buffer> {
  for (const p of parts) yield Buffer.from(p);
}
async function text(body: AsyncIterable<Buffer>): Promise<string> {
  let s = '';
  for await (const c of body) s += c.toString();
  return s;
}
const HEADER = JSON.stringify({ type: 'vigil_gallery_export', format: 2, embedding_contract_id: 'edge_s:512:v1' });

test('the header is found across chunks, and the body comes back byte for byte', async (t) => {
  const lines = `${HEADER}\n{"id":"p1"}\n{"id":"p2"}\n`;
  for (const parts of [[lines], [HEADER.slice(0, 10), HEADER.slice(10), '\n{"id":"p1"}\n', '{"id":"p2"}\n']]) {
    const { header, body } = await takeExportHeader(chunks(...parts));
    t.is(header?.embedding_contract_id, 'edge_s:512:v1');
    t.is(await text(body), lines);
  }
});

test('no header: a person line first, an empty body, a first line without newline', async (t) => {
  for (const input of ['{"id":"p1","embeddings":[]}\n', '', '{"id":"p1"}']) {
    const { header, body } = await takeExportHeader(chunks(input));
    t.is(header, null);
    t.is(await text(body), input);
  }
  const broken = takeExportHeader(chunks('{"type":"vigil_gallery_export", oops\n'));
  await t.throwsAsync(broken, { message: /Line 1: the gallery export header is not valid JSON/ });
});

test("the contract: the query's, else the header's; both different is import_contract_conflict; neither is missing", (t) => {
  const header = { embedding_contract_id: 'a:512:v1' };
  t.is(importContract(undefined, header), 'a:512:v1');
  t.is(importContract('a:512:v1', header), 'a:512:v1');
  t.is(importContract('q:512:v1', null), 'q:512:v1');
  t.is(importContract('q:512:v1', { embedding_contract_id: null }), 'q:512:v1');
  t.like(
    t.throws(() => importContract('b:512:v1', header)),
    { code: 'import_contract_conflict', status: 400 } as never,
  );
  t.like(
    t.throws(() => importContract(undefined, { embedding_contract_id: null })),
    { code: 'missing_embedding_contract_id' } as never,
  );
});

test('crops of an export line: one per embedding, null for none, JPEG only', (t) => {
  const v = Array.from({ length: 4 }, (_, i) => (i === 0 ? 1 : 0));
  const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]).toString('base64');
  const line = (crops: unknown) => JSON.stringify({ id: 'p', embeddings: [v, v], crops });
  const p = parseImportPerson(line([jpeg, null]), 2, 4);
  t.deepEqual(
    p.crops?.map((c) => c && Buffer.from(c).toString('base64')),
    [jpeg, null],
  );
  t.is(parseImportPerson(line([]), 2, 4).crops, undefined);
  t.is(parseImportPerson(JSON.stringify({ id: 'p', embeddings: [v] }), 2, 4).crops, undefined);
  t.throws(() => parseImportPerson(line([jpeg, jpeg, jpeg]), 2, 4), { message: /at most one crop per embedding/ });
  t.throws(() => parseImportPerson(line([Buffer.from('GIF89a').toString('base64')]), 2, 4), {
    message: /crops\[0\] must be a base64 JPEG/,
  });
  t.throws(() => parseImportPerson(line('x'), 2, 4), { message: /crops must be an array/ });
});
