import test from 'ava';
import { ImportLineBatcher, MAX_LINE_BYTES } from '../../src/collections/importLines.js';
import { parseImportStream } from '../../src/collections/importStream.js';
import { l2Normalize } from '../../src/inference/pipeline.js';

const DIM = 8;
/** A unit vector (norm within the import's 2e-4 but not exactly 1, so renormalising changes bits). */
function vec(seed: number): Float32Array {
  const v = Float32Array.from({ length: DIM }, (_, i) => Math.sin(seed * 7 + i * 3) + 0.1);
  const n = Math.hypot(...v) * (1 + 5e-5);
  return v.map((x) => x / n);
}
const b64 = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
const line = (id: string, faces: number[], extra: Record<string, unknown> = {}) =>
  `${JSON.stringify({ id, embeddings: faces.map((s, i) => (i % 2 ? Array.from(vec(s)) : b64(vec(s)))), ...extra })}\n`;

/** The body as chunks of `size` bytes (cutting lines, and multi-byte characters, anywhere). */
async function* chunks(text: string, size: number): AsyncGenerator<Buffer> {
  const bytes = Buffer.from(text);
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function collect(text: string, size: number, batch: number) {
  const out: { id: string; name: string | null; embeddings: Float32Array[] }[][] = [];
  try {
    for await (const b of parseImportStream(chunks(text, size), DIM, batch)) out.push(b);
    return { batches: out, error: null };
  } catch (e) {
    return { batches: out, error: e as { code: string; details: { line?: number; problem?: string } } };
  }
}

test('the parse worker batches persons in input order across any chunk boundary, skips blank lines and an export header, and renormalises like l2Normalize', async (t) => {
  const header = `${JSON.stringify({ type: 'vigil_gallery_export', format: 1, collection_id: 'x' })}\n`;
  const body =
    header +
    line('a', [1, 2], { name: 'Zoë Ünal 東京' }) +
    '\n' +
    line('b', [3]) +
    line('c', [4, 5, 6]) +
    '   \n' +
    line('d', [7]).trimEnd();
  for (const size of [1, 3, 7, 64, 1 << 20]) {
    const r = await collect(body, size, 2);
    t.is(r.error, null);
    t.deepEqual(
      r.batches.map((b) => b.map((p) => p.id)),
      [
        ['a', 'b'],
        ['c', 'd'],
      ],
      `chunks of ${size}`,
    );
    t.is(r.batches[0]![0]!.name, 'Zoë Ünal 東京', 'a character cut between chunks is decoded whole');
    const faces = r.batches.flat().flatMap((p) => p.embeddings);
    t.deepEqual(
      faces.map((f) => Array.from(f)),
      [1, 2, 3, 4, 5, 6, 7].map((s) => Array.from(l2Normalize(vec(s), DIM))),
    );
  }
});

test('a bad line is invalid_import_line with its line number, after the batches completed before it', async (t) => {
  const good = line('a', [1]) + line('b', [2]) + line('c', [3]);
  const cases: [string, number, RegExp][] = [
    [`${line('d', [4]).replace(/"id":"d"/, '"id":"bad id"')}`, 4, /^id must match/],
    [
      `{"id":"d","embeddings":["${b64(vec(4)).slice(4)}"]}\n`,
      4,
      /^embeddings\[0\]: base64 must hold 8 float32 values \(32 bytes\)$/,
    ],
    [
      `{"id":"d","embeddings":[[${Array(DIM).fill(0.5).join(',')}]]}\n`,
      4,
      /^embeddings\[0\]: norm 1\.414214 is not 1 ± 0\.0002$/,
    ],
    [
      `{"id":"d","embeddings":[[${Array(DIM - 1)
        .fill(0)
        .join(',')},"x"]]}\n`,
      4,
      /^embeddings\[0\] must be an array of numbers/,
    ],
    ['{"id":"d",\n', 4, /^not valid JSON$/],
    [`{"id":"d","embeddings":[[1,0,0,0,0,0,0,null]]}\n`, 4, /must be an array of numbers/],
  ];
  for (const [bad, lineNo, problem] of cases) {
    const r = await collect(good + bad + line('e', [5]), 5, 2);
    t.deepEqual(
      r.batches.map((b) => b.map((p) => p.id)),
      [['a', 'b']],
      'the batch before the bad line stands, the bad one is not returned',
    );
    t.is(r.error?.code, 'invalid_import_line');
    t.is(r.error?.details.line, lineNo);
    t.regex(String(r.error?.details.problem), problem);
  }
  const nonFinite = new Float32Array(DIM).fill(0);
  nonFinite[0] = Number.NaN;
  const r = await collect(`{"id":"a","embeddings":["${b64(nonFinite)}"]}\n`, 1000, 5);
  t.deepEqual(r.batches, []);
  t.like(r.error, { code: 'invalid_import_line', details: { line: 1, problem: 'embeddings[0]: non-finite value' } });
});

test('a line longer than the limit is request_too_large', (t) => {
  const b = new ImportLineBatcher(DIM, 10);
  b.push(line('a', [1]));
  const e = t.throws(() => b.push('x'.repeat(MAX_LINE_BYTES + 1)));
  t.is((e as unknown as { code: string }).code, 'request_too_large');
  t.deepEqual(b.ready, [], 'the person before it waits in the open batch (never committed: the import stops)');
});

test('leaving the stream early ends its worker (the test process exits)', async (t) => {
  const body = Array.from({ length: 50 }, (_, i) => line(`p${i}`, [i])).join('');
  const it = parseImportStream(chunks(body, 100), DIM, 10);
  const first = await it.next();
  t.is((first.value as unknown[]).length, 10);
  await it.return(undefined);
  t.true((await it.next()).done);
});
