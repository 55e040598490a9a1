import test from 'ava';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DAEMON_ALLOCATOR_LIBRARY,
  allocatorFromMaps,
  daemonAllocatorPath,
  withDaemonAllocator,
} from '../../src/system/allocator.js';
import { REPO } from '../helpers/daemon.js';

const LIBC = '7f2c1a200000-7f2c1a228000 r--p 00000000 08:01 1234  /usr/lib/x86_64-linux-gnu/libc.so.6';
const JEMALLOC = '7f2c1a000000-7f2c1a00a000 r--p 00000000 08:01 5678  /usr/lib/x86_64-linux-gnu/libjemalloc.so.2';

test('allocatorFromMaps: jemalloc when it is mapped, else glibc when libc.so.6 is, else other', (t) => {
  t.is(allocatorFromMaps(`${JEMALLOC}\n${LIBC}\n`), 'jemalloc');
  t.is(allocatorFromMaps(`${LIBC}\n7f2c1a400000-7f2c1a401000 rw-p 00000000 00:00 0 \n`), 'glibc');
  t.is(allocatorFromMaps('7f2c1a400000-7f2c1a401000 r-xp 00000000 08:01 9 /lib/ld-musl-x86_64.so.1\n'), 'other');
  t.is(allocatorFromMaps(''), 'other');
  // A file that only mentions the name is not the library.
  t.is(
    allocatorFromMaps(`${LIBC}\n7f2c1a600000-7f2c1a601000 r--p 00000000 08:01 7 /var/lib/vigil/libjemalloc.so.2.txt\n`),
    'glibc',
  );
});

test('withDaemonAllocator preloads the library ahead of an existing LD_PRELOAD, once', (t) => {
  const lib = `/usr/lib/x86_64-linux-gnu/${DAEMON_ALLOCATOR_LIBRARY}`;
  t.is(withDaemonAllocator({ PATH: '/bin' }, lib).LD_PRELOAD, lib);
  t.is(withDaemonAllocator({ LD_PRELOAD: '/opt/x.so' }, lib).LD_PRELOAD, `${lib}:/opt/x.so`);
  const already = { LD_PRELOAD: DAEMON_ALLOCATOR_LIBRARY };
  t.is(withDaemonAllocator(already, lib), already);
  const env = { PATH: '/bin' };
  t.is(withDaemonAllocator(env, null), env, 'not installed: unchanged');
});

// The real library (scripts/install-system-deps.sh installs libjemalloc2): a node process started with the
// environment the benches use has it mapped, and one started without has glibc's malloc.
test('a process started with withDaemonAllocator runs on jemalloc', (t) => {
  const path = daemonAllocatorPath();
  if (path === null) return t.fail(`${DAEMON_ALLOCATOR_LIBRARY} is not installed: run scripts/install-system-deps.sh`);
  const maps = (env: NodeJS.ProcessEnv) => {
    const r = spawnSync(
      process.execPath,
      ['-e', "process.stdout.write(require('fs').readFileSync('/proc/self/maps', 'utf8'))"],
      { env, encoding: 'utf8' },
    );
    t.is(r.status, 0, r.stderr);
    return r.stdout;
  };
  const { LD_PRELOAD: _drop, ...plain } = process.env;
  t.is(allocatorFromMaps(maps(withDaemonAllocator(plain))), 'jemalloc');
  t.is(allocatorFromMaps(maps(plain)), 'glibc');
});

test('the systemd unit and scripts/run-dev.sh preload the allocator, and the installer installs it', (t) => {
  const unit = readFileSync(join(REPO, 'systemd/vigil.service'), 'utf8');
  t.regex(unit, new RegExp(`^Environment=LD_PRELOAD=${DAEMON_ALLOCATOR_LIBRARY.replace(/\./g, '\\.')}$`, 'm'));
  const dev = readFileSync(join(REPO, 'scripts/run-dev.sh'), 'utf8');
  t.true(dev.includes(`export LD_PRELOAD="${DAEMON_ALLOCATOR_LIBRARY}\${LD_PRELOAD:+:$LD_PRELOAD}"`));
  t.regex(readFileSync(join(REPO, 'scripts/install-system-deps.sh'), 'utf8'), /^need\+=\(libjemalloc2\)$/m);
});
