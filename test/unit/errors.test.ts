import test from 'ava';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError, errorCatalogue, Errors, OperatorError, VigilError } from '../../src/contract/errors.js';
import { ERROR_TABLE_PAGE, errorTable, withErrorTable } from '../../scripts/error-table.js';
import { REPO } from '../helpers/shared.js';

test('every code is defined once, with a status and a meaning', (t) => {
  const codes = errorCatalogue().map((e) => e.code);
  t.is(new Set(codes).size, codes.length, `duplicated: ${codes.filter((c, i) => codes.indexOf(c) !== i).join(', ')}`);
  for (const e of errorCatalogue()) {
    t.regex(e.code, /^[a-z][a-z0-9_]*$/);
    t.true(e.meaning.length > 10, e.code);
    t.true(e.status === null || (e.status >= 400 && e.status < 600), e.code);
  }
});

test('makers build the catalogued code and status; operator errors are not API errors', (t) => {
  const e = Errors.collectionNotFound('staff');
  t.true(e instanceof ApiError);
  t.deepEqual(
    [e.status, e.code, e.message, e.details],
    [404, 'collection_not_found', "Collection 'staff' was not found.", {}],
  );
  t.deepEqual(Errors.unauthorized('A valid Bearer API key is required.').headers, { 'WWW-Authenticate': 'Bearer' });
  const face = Errors.faceNotFound({ faceId: 'f1' });
  t.deepEqual([face.status, face.code], [404, 'face_not_found'], 'an unknown face sample');
  t.deepEqual([Errors.faceNotFound().status, Errors.faceNotFound().message], [422, 'No usable face was detected.']);
  const side = Errors.livenessFake({ status: 'ok' }).withDetails({ side: 'source' });
  t.deepEqual(side.details, { liveness: { status: 'ok' }, side: 'source' });
  const op = Errors.configInvalid('server.port: too big', 'server.port');
  t.true(op instanceof OperatorError && op instanceof VigilError);
  t.false(op instanceof ApiError);
});

test('errors are only made by the catalogue', (t) => {
  t.throws(() => new (ApiError as any)(Symbol('forged'), 400, 'made_up', 'x', {}, {}), { instanceOf: TypeError });
  // No module outside the catalogue constructs an error with its own code.
  const hits = execFileSync(
    'grep',
    ['-rln', '--include=*.ts', 'new ApiError\\|new OperatorError\\|new VigilError', join(REPO, 'src')],
    { encoding: 'utf8' },
  )
    .trim()
    .split('\n');
  t.deepEqual(
    hits.map((h) => h.slice(REPO.length + 1)),
    ['src/contract/errors.ts'],
  );
});

test("docs/api.md's error table is the generated one", (t) => {
  const page = readFileSync(join(REPO, ERROR_TABLE_PAGE), 'utf8');
  t.true(page.includes(errorTable()), 'run npm run docs:errors');
  t.is(withErrorTable(page), page);
});

test("every not-found message quotes the id one way, upstream's: Resource 'id'", (t) => {
  // route_not_found names no id; not_found is a scrape source's upstream page (its own message).
  const noId = new Set(['route_not_found', 'not_found']);
  let checked = 0;
  for (const [name, maker] of Object.entries(Errors)) {
    const make = maker as unknown as ((...args: unknown[]) => ApiError) & { code?: string };
    if (!make.code?.endsWith('_not_found') || noId.has(make.code)) continue;
    const e = make.code === 'face_not_found' ? make({ faceId: 'the-id' }) : make('the-id', 'the-id');
    t.true(e.message.includes("'the-id'") && !e.message.includes('"'), `${name}: ${e.message}`);
    checked++;
  }
  t.true(checked >= 10, `${checked} not-found makers`);
});
