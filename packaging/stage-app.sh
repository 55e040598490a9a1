#!/usr/bin/env bash
# Builds the app for the Debian package in SRC (a clean export of HEAD), on the package's architecture:
# natively for amd64, inside an arm64 Debian root under qemu-user-static for arm64 (build-package.sh runs
# it there). Usage: stage-app.sh SRC NODE_DIR NPM_CLI COMMIT
#   NODE_DIR  the Node runtime the package ships (bin/node, include/node): node-gyp compiles every addon
#             against its headers, so nothing is downloaded and the ABI is the shipped one
#   NPM_CLI   npm's bin/npm-cli.js (npm is JavaScript: the build machine's copy runs on the shipped Node)
#   COMMIT    the git commit stamped into dist/build-info.json
# VIGIL_PKG_NATIVE_TESTS=1 runs the native addons' unit tests (NEON or AVX2 paths) before dev deps go.
# The script is read by bash as it runs: do not edit it while a build runs.
set -euo pipefail
src=$1
nodedir=$2
npm_cli=$3
commit=$4
cd "$src"
export PATH="$nodedir/bin:$PATH"
npm() { node "$npm_cli" "$@"; }
export npm_config_nodedir=$nodedir
# better-sqlite3 downloads a prebuilt binary from GitHub (unreachable on many sites): compile it here, once.
# Named, not `true`: node-gyp-build would then compile usearch too instead of loading its published prebuild.
export npm_config_build_from_source=better-sqlite3
# @scarf/scarf (a dependency's dependency) reports installs to its server from a postinstall script.
export SCARF_ANALYTICS=false
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
# node-gyp runs `make` with -j$JOBS (defaults to one job).
export JOBS=${JOBS:-$(nproc)}
node_arch=$(node -p process.arch)
t0=$(date +%s)
step() { printf '[stage %s %5ss] %s\n' "$node_arch" $(($(date +%s) - t0)) "$*" >&2; }

step "npm ci (compiles better-sqlite3, gstreamer-superficial, native/hnsw-walk, native/vector-scan)"
# --prefer-offline: what the npm cache holds is used without asking the registry again (the lockfile pins
# every version and integrity; the lock records no download addresses, so npm would fetch every packument).
# VIGIL_PKG_SKIP_CI=1 (build-package.sh's VIGIL_PKG_RESUME): node_modules from an earlier run is complete.
[ "${VIGIL_PKG_SKIP_CI:-0}" = 1 ] || npm ci --no-audit --no-fund --foreground-scripts --prefer-offline
step "npm run build"
VIGIL_COMMIT=$commit npm run build
if [ "${VIGIL_PKG_NATIVE_TESTS:-0}" = 1 ]; then
  step "native addon unit tests"
  node node_modules/ava/entrypoints/cli.mjs test/unit/vector-scan.test.ts test/unit/hnsw-graph.test.ts
fi
step "npm prune --omit=dev"
# --ignore-scripts: prune would otherwise run the linked addons' install scripts again (a full rebuild).
npm prune --omit=dev --no-audit --no-fund --prefer-offline --ignore-scripts

# Our addons ship prebuilt (node-gyp-build loads prebuilds/linux-<arch>/ as for usearch): no box compiles.
for addon in hnsw-walk:hnsw_walk vector-scan:vector_scan; do
  dir=native/${addon%%:*}
  mkdir -p "$dir/prebuilds/linux-$node_arch"
  strip --strip-unneeded -o "$dir/prebuilds/linux-$node_arch/vigil-${addon%%:*}.napi.node" "$dir/build/Release/${addon##*:}.node"
  rm -rf "$dir/build" "$dir/src" "$dir/binding.gyp" "$dir/probe-isa.cjs"
done
# Addons compiled here: only the binary stays (sources, objects and sqlite3.c are build inputs).
strip --strip-unneeded node_modules/better-sqlite3/build/Release/better_sqlite3.node \
  node_modules/gstreamer-superficial/build/Release/*.node
for m in better-sqlite3 gstreamer-superficial; do
  find "node_modules/$m/build" -mindepth 1 -maxdepth 2 ! -path "*/Release" ! -name '*.node' -exec rm -rf {} +
done
rm -rf node_modules/better-sqlite3/deps node_modules/better-sqlite3/src
# Prebuilt binaries of other platforms.
find node_modules/onnxruntime-node/bin -mindepth 2 -maxdepth 2 -type d ! -name linux -exec rm -rf {} +
find node_modules/onnxruntime-node/bin -mindepth 3 -maxdepth 3 -type d ! -name "$node_arch" -exec rm -rf {} +
find node_modules/usearch/prebuilds -mindepth 1 -maxdepth 1 ! -name "linux-$node_arch" -exec rm -rf {} +
# usearch's sources and NumKong (headers our walker was compiled against).
rm -rf node_modules/usearch/c node_modules/usearch/cpp node_modules/usearch/include node_modules/usearch/numkong
step "staged"
