import test from 'ava';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

/** native/hnsw-walk/probe-isa.cjs: the ISA header NumKong is compiled against (see there). */
const probe = createRequire(import.meta.url)('../../native/hnsw-walk/probe-isa.cjs') as {
  adjustProbes(header: string, o: { aarch64: boolean; sdotUnderPragma: boolean }): string;
  compiles(source: string, cc: string): boolean;
  SDOT_UNDER_PRAGMA: string;
};

const HEADER = '#define NK_TARGET_NEON 1\n#define NK_TARGET_NEONSDOT 1\n#define NK_TARGET_SVESDOT 1\n';

test('the SDOT kernels are turned off only on aarch64 with a compiler that cannot build them', (t) => {
  const off = probe.adjustProbes(HEADER, { aarch64: true, sdotUnderPragma: false });
  t.regex(off, /^#define NK_TARGET_NEONSDOT 0$/m);
  t.regex(off, /^#define NK_TARGET_NEON 1$/m, 'the NEON baseline stays');
  t.regex(off, /^#define NK_TARGET_SVESDOT 1$/m, 'SVE kernels use another pragma form and stay');
  t.is(probe.adjustProbes(HEADER, { aarch64: true, sdotUnderPragma: true }), HEADER);
  t.is(probe.adjustProbes(HEADER, { aarch64: false, sdotUnderPragma: false }), HEADER);
});

// Debian 12's cross compiler is GCC 12, the compiler of Debian 12 arm64 boxes (JetPack 6 has GCC 11): the
// probe must see what broke `npm ci` there (installed by VIGIL_PACKAGE_DEPS=1 scripts/install-system-deps.sh).
const cross = 'aarch64-linux-gnu-gcc';
const hasCross = spawnSync(cross, ['--version']).status === 0;
(hasCross ? test : test.skip)("GCC 12 for aarch64 fails NumKong's SDOT pattern, and builds plain NEON", (t) => {
  t.false(probe.compiles(probe.SDOT_UNDER_PRAGMA, cross));
  t.true(
    probe.compiles('#include <arm_neon.h>\nint32x4_t f(int32x4_t a, int32x4_t b) { return vaddq_s32(a, b); }\n', cross),
  );
});
