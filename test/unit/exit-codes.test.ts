import test from 'ava';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG_EXIT_CODES, EXIT } from '../../src/cli/exitCodes.js';
import { REPO } from '../helpers/shared.js';

/**
 * The exit codes, the unit that acts on them and the pages that explain them say the same: a code the
 * unit must not restart is in RestartPreventExitStatus=, and the exit-code table lists every code.
 */
const read = (rel: string) => readFileSync(join(REPO, rel), 'utf8');
const sorted = (a: readonly number[]) => [...a].sort((x, y) => x - y);

test('systemd/vigil.service does not restart exactly the configuration exit codes', (t) => {
  const line = /^RestartPreventExitStatus=(.*)$/m.exec(read('systemd/vigil.service'));
  t.truthy(line, 'the unit has RestartPreventExitStatus=');
  t.deepEqual(sorted(line![1]!.trim().split(/\s+/).map(Number)), sorted(CONFIG_EXIT_CODES));
  t.true(
    read('docs/operations/systemd.md').includes(`RestartPreventExitStatus=${sorted(CONFIG_EXIT_CODES).join(' ')}`),
  );
});

test('docs/operations/exit-codes.md has a row for every exit code, marked not restarted exactly when the unit does not', (t) => {
  const doc = read('docs/operations/exit-codes.md');
  t.true(doc.includes(`RestartPreventExitStatus=${sorted(CONFIG_EXIT_CODES).join(' ')}`));
  for (const code of Object.values(EXIT)) {
    const row = new RegExp(`^\\| ${code} \\|.*$`, 'm').exec(doc);
    t.truthy(row, `a row for exit ${code}`);
    t.is(
      row![0].includes('**not restarted**'),
      (CONFIG_EXIT_CODES as readonly number[]).includes(code),
      `exit ${code}: ${row![0]}`,
    );
  }
});
