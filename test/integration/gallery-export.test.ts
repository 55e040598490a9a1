import test from 'ava';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runGalleryExport, runGalleryImport } from '../../src/cli/gallery.js';
import { call, face, form, post, startTestDaemon, type TestDaemon } from '../helpers/daemon.js';
import { Sink } from '../helpers/shared.js';
import { fileTempDir } from '../helpers/tempDir.js';

/**
 * Gallery export from one box and import into another: the same embedding contract takes the embeddings
 * as they are (through the bulk import endpoint); another contract re-embeds every person from its crops.
 */
let a: TestDaemon;
let b: TestDaemon;
const dir = fileTempDir('vigil-gallery-export-');
const PEOPLE: [string, string[]][] = [
  ['obama', ['identities/obama/2.jpg', 'identities/obama/3.jpg']],
  ['biden', ['identities/biden/2.jpg']],
  ['rob_lowe', ['identities/rob_lowe/1.jpg']],
];
const QUERIES = ['identities/obama/1.jpg', 'identities/biden/1.jpg', 'identities/rob_lowe/2.jpg'];

test.before(async () => {
  [a, b] = await Promise.all([startTestDaemon(), startTestDaemon()]);
  {
    const c = await call(a, 'POST', '/v1/collections', {
      id: 'staff',
      name: 'Staff',
      save_face_crops: true,
      metadata: { site: 'hq' },
    });
    if (c.status !== 201) throw new Error(JSON.stringify(c.json));
  }
  for (const [id, files] of PEOPLE) {
    const r = await post(
      a,
      '/v1/collections/staff/persons',
      form({
        id,
        name: id.toUpperCase(),
        external_id: `ext-${id}`,
        metadata: JSON.stringify({ team: 'x' }),
        images: files.map(face),
      }),
    );
    if (r.res.status !== 201) throw new Error(JSON.stringify(r.json));
  }
});
test.after.always(async () => {
  await Promise.all([a?.close(), b?.close()]);
});

const top = async (d: TestDaemon, collection: string, threshold?: string) => {
  const out = [];
  for (const q of QUERIES) {
    const r = await post(
      d,
      `/v1/collections/${collection}/search`,
      form({ image: face(q), limit: '1', ...(threshold ? { threshold } : {}) }),
    );
    out.push(
      r.json.matches?.[0] ? { id: r.json.matches[0].person.id, similarity: r.json.matches[0].similarity } : null,
    );
  }
  return out;
};

test.serial(
  'export streams a header and every person with embeddings and crops; the same contract imports the embeddings as they are',
  async (t) => {
    const file = join(dir, 'staff.ndjson');
    const io = new Sink();
    t.is(await runGalleryExport({ url: a.url, key: a.key, collection: 'staff', file }, io as never), 0);
    t.regex(io.text, /exported 3 persons of staff/);
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const source = (await call(a, 'GET', '/v1/collections/staff')).json.collection;
    t.like(lines[0], {
      type: 'vigil_gallery_export',
      format: 2,
      collection_id: 'staff',
      embedding_contract_id: source.embedding_contract_id,
      persons: 3,
      faces: 4,
    });
    t.deepEqual(
      lines
        .slice(1)
        .map((p: any) => [p.id, p.name, p.external_id, p.metadata, p.embeddings.length, p.crops.length])
        .sort(),
      [
        ['biden', 'BIDEN', 'ext-biden', { team: 'x' }, 1, 1],
        ['obama', 'OBAMA', 'ext-obama', { team: 'x' }, 2, 2],
        ['rob_lowe', 'ROB_LOWE', 'ext-rob_lowe', { team: 'x' }, 1, 1],
      ],
    );
    t.is((await fetch(`${a.url}/v1/collections/staff/export`)).status, 401);
    t.is((await call(a, 'GET', '/v1/collections/nope/export')).status, 404);

    t.is((await call(b, 'POST', '/v1/collections', { id: 'copy', name: 'Copy' })).status, 201);
    const progress = new Sink();
    t.is(
      await runGalleryImport(
        { url: b.url, key: b.key, collection: 'copy', file, contractId: null, batchSize: 2 },
        progress as never,
      ),
      0,
      progress.text,
    );
    t.regex(progress.text, /"type":"done"/);
    const copy = (await call(b, 'GET', '/v1/collections/copy')).json.collection;
    t.is(copy.person_count, 3);
    t.is(copy.face_count, 4);
    const person = (await call(b, 'GET', '/v1/collections/copy/persons/obama')).json.person;
    t.like(person, { name: 'OBAMA', external_id: 'ext-obama', metadata: { team: 'x' } });
    const [here, there] = [await top(a, 'staff'), await top(b, 'copy')];
    t.deepEqual(
      there.map((m) => m?.id),
      ['obama', 'biden', 'rob_lowe'],
    );
    there.forEach((m, i) => t.true(Math.abs(m!.similarity - here[i]!.similarity) < 1e-5));
  },
);

test.serial('an export from another model (contract differs) is re-embedded from its crops', async (t) => {
  const file = join(dir, 'staff.ndjson');
  // As if exported on a box with another recognizer: its contract and embeddings mean nothing here.
  const lines = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  lines[0].embedding_contract_id = 'other-model:512:v9';
  for (const p of lines.slice(1)) p.embeddings = p.embeddings.map(() => Buffer.alloc(512 * 4, 7).toString('base64'));
  const foreign = join(dir, 'foreign.ndjson');
  writeFileSync(foreign, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  t.is((await call(b, 'POST', '/v1/collections', { id: 'moved', name: 'Moved' })).status, 201);
  const progress = new Sink();
  const code = await runGalleryImport(
    { url: b.url, key: b.key, collection: 'moved', file: foreign, contractId: null, batchSize: 100 },
    progress as never,
  );
  t.is(code, 0, progress.text);
  t.regex(progress.text, /re-embedding from face crops/);
  t.regex(progress.text, /"type":"done","mode":"reembedded","persons":3,"failed":0,"skipped":0/);
  const moved = (await call(b, 'GET', '/v1/collections/moved')).json.collection;
  t.is(moved.person_count, 3);
  t.like((await call(b, 'GET', '/v1/collections/moved/persons/biden')).json.person, {
    name: 'BIDEN',
    external_id: 'ext-biden',
    metadata: { team: 'x' },
  });
  // Re-embedded from 112 px box crops (what upstream-style save_face_crops keeps), similarities are lower than
  // from the original photos, so the rank is what is asserted: each query's best match is the right person.
  const ranked = await top(b, 'moved', '0');
  t.deepEqual(
    ranked.map((m) => m?.id),
    ['obama', 'biden', 'rob_lowe'],
    'the re-embedded gallery ranks the same people first',
  );
  const original = await top(b, 'copy', '0');
  t.log(
    `similarity, original embeddings vs re-embedded from crops: ${ranked.map((m, i) => `${QUERIES[i]}: ${original[i]!.similarity.toFixed(3)} vs ${m!.similarity.toFixed(3)}`).join('; ')}`,
  );
});

/** POSTs an NDJSON body to a collection's import endpoint; the answer's NDJSON lines or its error envelope. */
async function importBody(d: TestDaemon, collection: string, body: string, query = '') {
  const res = await fetch(`${d.url}/v1/collections/${collection}/import${query}`, {
    method: 'POST',
    headers: { ...d.auth, 'content-type': 'application/x-ndjson' },
    body,
  });
  const text = await res.text();
  const ndjson = res.headers.get('content-type')?.includes('ndjson');
  return {
    status: res.status,
    lines: ndjson
      ? text
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, any>)
      : [],
    error: ndjson ? null : (JSON.parse(text) as { error: { code: string; message: string; details: any } }).error,
  };
}

test.serial(
  "the import takes embedding_contract_id from an export's header; the query may repeat it, a different one is a clear 400",
  async (t) => {
    const body = readFileSync(join(dir, 'staff.ndjson'), 'utf8');
    const contract = JSON.parse(body.slice(0, body.indexOf('\n'))).embedding_contract_id as string;
    for (const id of ['hdr', 'hdr_query', 'hdr_conflict', 'no_hdr'])
      t.is((await call(b, 'POST', '/v1/collections', { id, name: id })).status, 201);

    const fromHeader = await importBody(b, 'hdr', body);
    t.is(fromHeader.status, 200, JSON.stringify(fromHeader.error));
    t.like(fromHeader.lines.at(-1), { type: 'done', persons: 3, faces: 4 });

    const same = await importBody(b, 'hdr_query', body, `?embedding_contract_id=${encodeURIComponent(contract)}`);
    t.like(same.lines.at(-1), { type: 'done', persons: 3, faces: 4 });

    const conflict = await importBody(b, 'hdr_conflict', body, '?embedding_contract_id=other-model%3A512%3Av9');
    t.is(conflict.status, 400);
    t.is(conflict.error?.code, 'import_contract_conflict');
    t.true(conflict.error!.message.includes('other-model:512:v9') && conflict.error!.message.includes(contract));
    t.deepEqual(conflict.error!.details, {
      query_embedding_contract_id: 'other-model:512:v9',
      header_embedding_contract_id: contract,
    });
    t.is((await call(b, 'GET', '/v1/collections/hdr_conflict')).json.collection.person_count, 0);

    // Without a header the query stays required.
    const bare = await importBody(b, 'no_hdr', body.slice(body.indexOf('\n') + 1));
    t.is(bare.status, 400);
    t.is(bare.error?.code, 'missing_embedding_contract_id');
  },
);

test.serial(
  'face crops carried by the file are kept: a gallery moved once is exported again with its crops and re-embedded on a box of another model',
  async (t) => {
    const file = join(dir, 'staff.ndjson');
    t.is((await call(b, 'POST', '/v1/collections', { id: 'kept', name: 'Kept', save_face_crops: true })).status, 201);
    const first = await importBody(b, 'kept', readFileSync(file, 'utf8'));
    t.like(first.lines.at(-1), { type: 'done', persons: 3, faces: 4, crops: 4, crops_dropped: 0 });
    // Each imported face has its own crop back (the one of the same face on the source box).
    const faces = (await call(b, 'GET', '/v1/collections/kept/persons/obama/faces')).json.faces as { id: string }[];
    t.is(faces.length, 2);
    for (const f of faces) {
      const img = await fetch(`${b.url}/v1/collections/kept/persons/obama/faces/${f.id}/image`, { headers: b.auth });
      t.is(img.status, 200);
      t.is(img.headers.get('content-type'), 'image/jpeg');
    }
    const again = join(dir, 'kept.ndjson');
    t.is(await runGalleryExport({ url: b.url, key: b.key, collection: 'kept', file: again }, new Sink() as never), 0);
    const moved = readFileSync(again, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    // Each face kept its own crop: the (embedding, crop) pairs are the source box's.
    const pairs = (lines: any[]) =>
      lines
        .slice(1)
        .flatMap((p) => p.embeddings.map((e: string, i: number) => `${p.id} ${e} ${p.crops[i]}`))
        .sort();
    const source = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    t.deepEqual(pairs(moved), pairs(source));
    for (const p of moved.slice(1)) t.is(p.crops.filter(Boolean).length, p.embeddings.length, p.id);
    // On a box with another model: re-embedded from the crops the first move kept.
    moved[0].embedding_contract_id = 'other-model:512:v9';
    const foreign = join(dir, 'kept-foreign.ndjson');
    writeFileSync(foreign, moved.map((l) => JSON.stringify(l)).join('\n') + '\n');
    t.is((await call(a, 'POST', '/v1/collections', { id: 'second_move', name: 'Second move' })).status, 201);
    const progress = new Sink();
    t.is(
      await runGalleryImport(
        { url: a.url, key: a.key, collection: 'second_move', file: foreign, contractId: null, batchSize: 100 },
        progress as never,
      ),
      0,
      progress.text,
    );
    t.regex(progress.text, /"type":"done","mode":"reembedded","persons":3,"failed":0,"skipped":0/);
    t.deepEqual(
      (await top(a, 'second_move', '0')).map((m) => m?.id),
      ['obama', 'biden', 'rob_lowe'],
    );

    // A collection that does not save crops drops them and says how many.
    t.is((await call(b, 'POST', '/v1/collections', { id: 'nocrops', name: 'No crops' })).status, 201);
    const dropped = await importBody(b, 'nocrops', readFileSync(file, 'utf8'));
    t.like(dropped.lines.at(-1), { type: 'done', persons: 3, faces: 4, crops: 0, crops_dropped: 4 });
  },
);

test.serial(
  "vigil gallery import and export print the API's error code and message, not the bare status",
  async (t) => {
    const file = join(dir, 'staff.ndjson');
    // 'copy' already has these persons (first test): the first batch is refused with person_exists.
    const io = new Sink();
    t.is(
      await runGalleryImport(
        { url: b.url, key: b.key, collection: 'copy', file, contractId: null, batchSize: 10 },
        io as never,
      ),
      1,
    );
    t.regex(io.text, /^error: person_exists: Person .*already exists/m);
    t.notRegex(io.text, /error: 409/);
    const missing = new Sink();
    t.is(
      await runGalleryExport(
        { url: b.url, key: b.key, collection: 'nope', file: join(dir, 'nope.ndjson') },
        missing as never,
      ),
      1,
    );
    t.regex(missing.text, /^error: collection_not_found: /m);
  },
);
