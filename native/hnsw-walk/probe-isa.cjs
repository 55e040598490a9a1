'use strict';
/**
 * The ISA header NumKong's kernels are compiled against (binding.gyp force-includes it), printed as a path.
 *
 * NumKong's own probe (numkong/probes/probe.js) asks whether the compiler accepts each ISA's -march flag.
 * On aarch64, GCC 11 and 12 (JetPack 6, Ubuntu 22.04, Debian 12) accept `-march=armv8.2-a+dotprod` but
 * cannot inline vdotq_s32 under NumKong's `#pragma GCC target("+dotprod")` ("inlining failed in call to
 * always_inline: target specific option mismatch"), which stops the whole build. So on aarch64 the SDOT
 * kernels are kept only when the compiler builds that exact pattern; otherwise NumKong dispatches among the
 * other ARM kernels it compiled (NEON, FP16, FHM, SVE…), and the i8 distances of HNSW graphs run on plain
 * NEON. The CPU is still chosen at run time (NK_DYNAMIC_DISPATCH=1).
 *
 * Usage (from binding.gyp): node probe-isa.cjs [--sources]; CC names the C compiler as for node-gyp.
 */
const { execFileSync } = require('node:child_process');
const { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const path = require('node:path');

// Where binding.gyp takes usearch's headers from: the app's node_modules (usearch's exports hide the path).
const numkong = path.join(__dirname, '../../node_modules/usearch/numkong');

if (process.argv[2] === '--sources') {
  // NumKong's library: numkong.c and one dispatch file per type, as numkong.gypi lists them.
  const rel = path.relative(__dirname, path.join(numkong, 'c'));
  for (const f of readdirSync(path.join(numkong, 'c'))
    .filter((n) => n.endsWith('.c'))
    .sort())
    process.stdout.write(`${path.join(rel, f)}\n`);
  process.exit(0);
}

/** Whether the C compiler `cc` compiles `source` (C11, -O3) to an object. */
function compiles(source, cc) {
  const dir = mkdtempSync(path.join(tmpdir(), 'hnsw-walk-probe-'));
  try {
    writeFileSync(path.join(dir, 'probe.c'), source);
    execFileSync(cc, ['-c', '-O3', '-std=c11', 'probe.c', '-o', 'probe.o'], { cwd: dir, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const SDOT_UNDER_PRAGMA = `#include <arm_neon.h>
#pragma GCC push_options
#pragma GCC target("+dotprod")
static inline __attribute__((always_inline)) int32x4_t probe_sdot_(int32x4_t a, int8x16_t b, int8x16_t c) {
    return vdotq_s32(a, b, c);
}
int32x4_t probe_sdot(int32x4_t a, int8x16_t b, int8x16_t c) { return probe_sdot_(a, b, c); }
#pragma GCC pop_options
`;

/** NumKong's probe results with what this compiler cannot build turned off (pure: the header text in and out). */
function adjustProbes(header, { aarch64, sdotUnderPragma }) {
  if (!aarch64 || sdotUnderPragma) return header;
  return header.replace(
    /^#define NK_TARGET_NEONSDOT 1$/m,
    '/* off: this compiler cannot inline vdotq_s32 under #pragma GCC target("+dotprod") (GCC < 13) */\n#define NK_TARGET_NEONSDOT 0',
  );
}

function main() {
  const cc = process.env.CC || 'cc';
  execFileSync(process.execPath, [path.join(numkong, 'probes', 'probe.js')], { stdio: 'ignore', env: process.env });
  const probed = readFileSync(path.join(numkong, 'nk_probes.h'), 'utf8');
  const machine = execFileSync(cc, ['-dumpmachine'], { encoding: 'utf8' }).trim();
  const aarch64 = /^aarch64/.test(machine);
  const header = adjustProbes(probed, { aarch64, sdotUnderPragma: aarch64 && compiles(SDOT_UNDER_PRAGMA, cc) });
  const out = path.join(__dirname, 'build', 'nk_probes.h');
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, header);
  process.stdout.write(out);
}

if (require.main === module) main();
module.exports = { adjustProbes, compiles, SDOT_UNDER_PRAGMA };
