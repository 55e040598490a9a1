import test from 'ava';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../helpers/tempDir.js';

const SCRIPT = fileURLToPath(new URL('../../packaging/run-unit.sh', import.meta.url));

/**
 * packaging/run-unit.sh starts a unit's ExecStart in the package tests' roots, which have no systemd. Its
 * --print mode says what it would run: the user, the working directory, the environment, `--`, the command.
 */
function planned(unit: string): { user: string; dir: string; env: string[]; command: string[] } {
  const r = spawnSync('sh', [SCRIPT, '--print', unit], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`run-unit.sh --print failed: ${r.stderr}`);
  const words = r.stdout.split('\0').slice(0, -1);
  const sep = words.indexOf('--');
  return { user: words[0]!, dir: words[1]!, env: words.slice(2, sep), command: words.slice(sep + 1) };
}

/** The environment as the program sees it: the last assignment of a name wins (env -i, as systemd). */
function environ(env: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of env) out[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
  return out;
}

test('EnvironmentFile= is read with systemd’s syntax: spaces, quotes, escapes, comments, continuations', (t) => {
  const dir = tempDir(t, 'vigil-run-unit-');
  const envFile = join(dir, 'vigil.env');
  writeFileSync(
    envFile,
    [
      '# The API key',
      '; also a comment',
      '',
      'VIGIL_API_KEY=correct horse battery staple',
      'MQTT_PASSWORD="p@ss word \\"quoted\\" \\$HOME \\\\ \\n"',
      "SINGLE='a  b\\c $HOME'",
      '  INDENTED = spaced value   ',
      'CONTINUED=one \\',
      'two',
      'ESCAPED=a\\ b\\\\c',
      'MULTI="line one',
      'line two"',
      'no assignment here',
      '1INVALID=x',
      'EMPTY=',
      'LATER=first',
      'LATER=second',
    ].join('\n'),
  );
  const unit = join(dir, 'vigil.service');
  writeFileSync(
    unit,
    [
      '[Unit]',
      'Description=test',
      '[Service]',
      'User=vigil',
      'WorkingDirectory=/var/lib/vigil',
      'UMask=0077',
      'Environment=NODE_ENV=production',
      'Environment="QUOTED=a b" PLAIN=c',
      `EnvironmentFile=-${join(dir, 'missing.env')}`,
      `EnvironmentFile=-${envFile}`,
      'ExecStart=/usr/lib/vigil/node/bin/node --initial-old-space-size=128 /usr/lib/vigil/app/dist/cli/main.js serve',
    ].join('\n'),
  );
  const plan = planned(unit);
  t.is(plan.user, 'vigil');
  t.is(plan.dir, '/var/lib/vigil');
  t.deepEqual(plan.command, [
    '/usr/lib/vigil/node/bin/node',
    '--initial-old-space-size=128',
    '/usr/lib/vigil/app/dist/cli/main.js',
    'serve',
  ]);
  const env = environ(plan.env);
  t.like(env, {
    HOME: '/var/lib/vigil',
    USER: 'vigil',
    NODE_ENV: 'production',
    QUOTED: 'a b',
    PLAIN: 'c',
    VIGIL_API_KEY: 'correct horse battery staple',
    MQTT_PASSWORD: 'p@ss word "quoted" $HOME \\ \\n',
    SINGLE: 'a  b\\c $HOME',
    INDENTED: 'spaced value',
    CONTINUED: 'one two',
    ESCAPED: 'a b\\c',
    MULTI: 'line one\nline two',
    EMPTY: '',
    LATER: 'second',
  });
  t.false('1INVALID' in env);
  t.false(plan.env.some((kv) => kv.startsWith('no assignment')));
});
