import test from 'ava';
import { spawnSync } from 'node:child_process';
import { judgePage, outputHas, pageScript, parsePage } from '../../scripts/doctest.js';

const md = (...lines: string[]) => lines.join('\n');

test('sh blocks with their skip reasons, expected output and the page setup', (t) => {
  const page = parsePage(
    'p.md',
    md(
      '# Page',
      '<!-- doctest: setup staff mqtt -->',
      '```sh',
      'echo one',
      '```',
      '',
      '<!-- doctest: expect -->',
      '```text',
      'one',
      '  {"status":"ready",…}',
      '```',
      '<!-- doctest: skip (needs a GPU) -->',
      '```sh',
      'nvidia-smi',
      '```',
      '```json',
      '{"not": "run"}',
      '```',
    ),
  );
  t.deepEqual(page.setup, ['staff', 'mqtt']);
  t.deepEqual(
    page.blocks.map((b) => [b.line, b.code, b.skip, b.expect]),
    [
      [3, 'echo one', null, ['one', '{"status":"ready",…}']],
      [13, 'nvidia-smi', 'needs a GPU', []],
    ],
  );
});

test('markers that do not fit are errors, never ignored', (t) => {
  const refused = (text: string, message: RegExp) => t.throws(() => parsePage('p.md', text), { message });
  refused(md('<!-- doctest: skip -->', '```sh', 'x', '```'), /unknown doctest marker/);
  refused(md('<!-- doctest: skip (why) -->', 'prose', '```sh', 'x', '```'), /right before a ```sh fence/);
  refused(md('<!-- doctest: expect -->', '```text', 'x', '```'), /must follow a ```sh block/);
  refused(md('```sh', 'x', '```', '<!-- doctest: expect -->', 'prose'), /followed by a ```text block/);
  refused(md('<!-- doctest: setup gpu -->'), /unknown setup "gpu"/);
  refused(md('```bash', 'x', '```'), /write shell commands as ```sh/);
  refused(md('```sh', 'x'), /unclosed code fence/);
});

test('expected lines match within one line, … standing for anything', (t) => {
  const out = '{"status":"ready","models":"edge_s"}\nvigil/available online';
  t.true(outputHas(out, '{"status":"ready",…}'));
  t.true(outputHas(out, 'vigil/available online'));
  t.true(outputHas(out, '…"models":…'));
  t.false(outputHas(out, '{"status":"not_ready",…}'));
  t.false(outputHas(out, 'ready…available'), 'pieces must be on one line');
});

/** Runs a page's script in bash and judges it, as the doc-test does. */
function run(text: string) {
  const page = parsePage('p.md', text);
  const r = spawnSync('bash', ['-c', pageScript(page)], { encoding: 'utf8', env: { PATH: process.env.PATH } });
  return judgePage(page, r.stdout + r.stderr, r.status);
}

test('blocks share one shell in order; skipped blocks do not run', (t) => {
  const results = run(
    md(
      '```sh',
      'A=1',
      '```',
      '<!-- doctest: skip (would fail) -->',
      '```sh',
      'false',
      '```',
      '```sh',
      'echo "A is $A"',
      '```',
      '<!-- doctest: expect -->',
      '```text',
      'A is 1',
      '```',
    ),
  );
  t.deepEqual(
    results.map((r) => [r.block.line, r.failure]),
    [
      [1, null],
      [8, null],
    ],
  );
});

test('a failing command, a failing pipe stage, an undefined variable, a missing line or an API error fail the block', (t) => {
  const failure = (code: string, expect?: string) =>
    run(
      md(
        '```sh',
        'echo before',
        '```',
        '```sh',
        code,
        '```',
        ...(expect ? ['<!-- doctest: expect -->', '```text', expect, '```'] : []),
      ),
    )
      .map((r) => r.failure)
      .filter(Boolean)
      .join();
  t.is(failure('false; echo after'), 'the block exited with status 1');
  t.is(failure('false | cat'), 'the block exited with status 1');
  t.regex(failure('echo "$AUTH"'), /exited with status 1/);
  t.regex(failure('echo hello', 'goodbye'), /expected output not found:\n {2}goodbye/);
  t.regex(
    failure('echo \'{"error":{"code":"unauthorized","message":"no"}}\''),
    /API answered an error \(unauthorized\)/,
  );
  t.is(failure('echo \'{"error":{"code":"collection_exists"}}\'', '{"error":{"code":"collection_exists"…'), '');
  t.is(failure('echo fine'), '');
});

test('a page that ends before its last block (killed, timed out) fails at the block that was running', (t) => {
  const page = parsePage('p.md', md('```sh', 'echo a', '```', '```sh', 'sleep 60', '```'));
  const results = judgePage(page, '\n\x1edoctest-block 0\na\n\x1edoctest-block 1\n', null);
  t.deepEqual(
    results.map((r) => [r.block.line, r.failure]),
    [
      [1, null],
      [4, 'the block timed out'],
    ],
  );
});
