#!/usr/bin/env bash
# Builds the app for the Debian package in SRC (a clean export of HEAD) on this machine, for ARCH: natively
# for amd64; for arm64 the native addons are cross-compiled by Debian's aarch64 GCC 12 against an arm64
# Debian 12 root as the sysroot (its glibc, libstdc++ and GStreamer), which is much faster than building
# inside that root under qemu-user-static. build-package.sh runs it in two phases, with the native addons'
# unit tests in between (for arm64 inside the arm64 root):
#
#   stage-app.sh build  SRC ARCH NODE_DIR NPM_CLI COMMIT
#     npm ci --ignore-scripts (nothing compiled or downloaded by install scripts), npm run build (dist/,
#     stamped with COMMIT); for another architecture, npm ci again with that platform's packages (sharp's
#     libvips, esbuild for the tests); then the four addons with install scripts we need, compiled once by
#     node-gyp against NODE_DIR's headers (the Node the package ships): better-sqlite3 (its prebuilt binary
#     would come from GitHub), gstreamer-superficial, native/hnsw-walk and native/vector-scan. The other
#     install scripts are not needed: usearch and onnxruntime-node ship their binaries in their npm
#     packages, @scarf/scarf only reports the install, esbuild's only checks its binary (dev).
#   stage-app.sh finish SRC ARCH
#     dev dependencies removed as the lockfile marks them (no registry round trip), our addons moved to
#     prebuilds/linux-<arch>/ (loaded by node-gyp-build, as usearch's), binaries stripped, sources,
#     objects and other platforms' binaries removed.
#
# NPM_CLI: npm's bin/npm-cli.js (npm and node-gyp are JavaScript: this machine's copies run here).
# VIGIL_PKG_SYSROOT: the arm64 root (cross builds). JOBS: parallel compiles (default: the CPU count).
# ADDON_CACHE: where compiled addons are kept by their inputs; REPO: the checkout (its addons, when built
# from the same inputs, are reused).
set -euo pipefail
phase=$1
src=$2
arch=$3
. "$(dirname "$0")/chroot-lib.sh"
pkg_arch "$arch"
triplet=$gnu
host_arch=$(dpkg --print-architecture)
cd "$src"
t0=$(date +%s)
cpu() { awk '{ printf "%d", ($14 + $15 + $16 + $17) / 100 }' /proc/$$/stat; }
step() { printf '[stage %s %5ss, cpu %4ss] %s\n' "$arch" $(($(date +%s) - t0)) "$(cpu)" "$*" >&2; }
strip_tool=strip
[ "$arch" = "$host_arch" ] || strip_tool=$triplet-strip

# addon_inputs TREE LOCKFILE DIR: what an addon is compiled from, as one line: the lockfile's integrity of
# an npm package, or the digest of every file of one of ours (build outputs aside) and of usearch, whose
# headers and NumKong sources it includes.
addon_inputs() {
  local tree=$1 lock=$2 dir=$3
  case $dir in
    node_modules/*) node -p "require(require('path').resolve(process.argv[1])).packages[process.argv[2]]?.integrity ?? 'none'" "$lock" "$dir" ;;
    *)
      printf '%s %s\n' "$(cd "$tree/$dir" && find . \( -path ./build -o -path ./prebuilds \) -prune -o -type f -print |
        LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum | cut -c1-64)" \
        "$(node -p "require(require('path').resolve(process.argv[1])).packages['node_modules/usearch']?.integrity ?? 'none'" "$lock")"
      ;;
  esac
}
# addon_binary_name DIR: the file node-gyp writes under build/Release.
addon_binary_name() {
  case $1 in
    node_modules/better-sqlite3) echo better_sqlite3.node ;;
    node_modules/gstreamer-superficial) echo gstreamer-superficial.node ;;
    native/hnsw-walk) echo hnsw_walk.node ;;
    native/vector-scan) echo vector_scan.node ;;
  esac
}
# node_headers_version NODEDIR: the version of the Node headers under NODEDIR/include/node.
node_headers_version() {
  sed -n 's/^#define NODE_\(MAJOR\|MINOR\|PATCH\)_VERSION \([0-9]*\)$/\2/p' "$1/include/node/node_version.h" | paste -sd.
}
# gypi_nodedir_headers CONFIG_GYPI: the version of the headers an addon's build/config.gypi compiled against.
gypi_nodedir_headers() {
  local d
  d=$(sed -n 's/^ *"nodedir": "\(.*\)",$/\1/p' "$1" | head -n 1)
  [ -n "$d" ] && [ -r "$d/include/node/node_version.h" ] && node_headers_version "$d"
}

if [ "$phase" = build ]; then
  nodedir=$4
  npm_cli=$5
  commit=$6
  node_gyp=$(dirname "$(dirname "$npm_cli")")/node_modules/node-gyp/bin/node-gyp.js
  # The shipped Node runs the tools when it can run here; for another architecture this machine's Node does
  # (the same major version: engines in package.json), and node-gyp compiles against NODE_DIR's headers.
  if [ "$arch" = "$host_arch" ]; then export PATH="$nodedir/bin:$PATH"; fi
  npm() { node "$npm_cli" "$@"; }
  # @scarf/scarf (a dependency's dependency) would report installs to its server (its script does not run
  # here; this keeps it off for any that does).
  export SCARF_ANALYTICS=false
  export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false
  export JOBS=${JOBS:-$(nproc)}
  # --prefer-offline: what the npm cache holds is used without asking the registry again (the lockfile pins
  # every version and integrity; without download addresses in it, npm would fetch every packument).
  ci=(ci --no-audit --no-fund --prefer-offline --ignore-scripts --loglevel=warn)

  step "npm ci --ignore-scripts"
  npm "${ci[@]}"
  step "npm run build"
  VIGIL_COMMIT=$commit npm run build --silent
  if [ "$arch" != "$host_arch" ]; then
    step "npm ci --ignore-scripts --cpu=$node_arch (the $arch packages of sharp and esbuild)"
    npm "${ci[@]}" --cpu="$node_arch" --os=linux --libc=glibc
  fi

  # The install scripts the lockfile declares must be the ones handled here: a new dependency with one
  # stops the build instead of shipping without what its script would have made.
  expected='native/hnsw-walk native/vector-scan node_modules/@scarf/scarf node_modules/better-sqlite3 node_modules/esbuild node_modules/gstreamer-superficial node_modules/onnxruntime-node node_modules/usearch'
  got=$(node -e 'const p = require("./package-lock.json").packages; console.log(Object.keys(p).filter((k) => p[k].hasInstallScript).sort().join(" "))')
  if [ "$got" != "$expected" ]; then
    echo "stage-app: the packages with install scripts changed: $got (packaging/stage-app.sh handles $expected)" >&2
    exit 1
  fi

  if [ "$arch" != "$host_arch" ]; then
    sysroot=${VIGIL_PKG_SYSROOT:?the $arch root to compile against}
    # Compiler wrappers with the sysroot built in: node-gyp, NumKong's probe and probe-isa.cjs run $CC as one
    # command name.
    cross=$src/.cross-bin
    mkdir -p "$cross"
    for tool in gcc g++; do
      printf '#!/bin/sh\nexec %s-%s --sysroot=%s "$@"\n' "$triplet" "$tool" "$sysroot" >"$cross/$tool"
      chmod 0755 "$cross/$tool"
    done
    export CC=$cross/gcc CXX=$cross/g++ LINK=$cross/g++ AR=$triplet-ar
    # gstreamer-superficial's binding.gyp asks pkg-config: the arm64 root's .pc files, paths inside it.
    export PKG_CONFIG_SYSROOT_DIR=$sysroot
    export PKG_CONFIG_LIBDIR=$sysroot/usr/lib/$triplet/pkgconfig:$sysroot/usr/share/pkgconfig
  fi
  # Each addon is compiled once per set of inputs: its binary is kept in ADDON_CACHE under a key of its
  # sources (the lockfile's integrity for an npm package; every file of native/<addon> and the usearch
  # sources it includes for ours), the Node headers' version, the architecture and the compiler. Where the
  # checkout beside this export (REPO) holds a binary built from the very same inputs (`make test` just ran
  # npm ci there), that one is taken instead of compiling it again.
  cache=${ADDON_CACHE:?a folder for compiled addons}
  mkdir -p "$cache"
  headers=$(node_headers_version "$nodedir")
  compiler=$("${CXX:-g++}" -dumpfullversion -dumpmachine | tr '\n' ' ')
  for dir in node_modules/better-sqlite3 node_modules/gstreamer-superficial native/hnsw-walk native/vector-scan; do
    inputs=$(addon_inputs "$src" "$src/package-lock.json" "$dir")
    key=$(printf '%s|%s|%s|%s' "$inputs" "$headers" "$arch" "$compiler" | sha256sum | cut -c1-16)
    name=$(addon_binary_name "$dir")
    kept=$cache/${dir##*/}-$key.node
    if [ ! -s "$kept" ] && [ "$arch" = "$host_arch" ] && [ -n "${REPO:-}" ] && [ -s "$REPO/$dir/build/Release/$name" ] &&
      [ -s "$REPO/$dir/build/config.gypi" ] &&
      [ "$(addon_inputs "$REPO" "$REPO/node_modules/.package-lock.json" "$dir")" = "$inputs" ] &&
      [ "$(gypi_nodedir_headers "$REPO/$dir/build/config.gypi")" = "$headers" ] &&
      grep -q "\"target_arch\": \"$node_arch\"" "$REPO/$dir/build/config.gypi" &&
      [ -z "$(find "$REPO/$dir" -path "$REPO/$dir/build" -prune -o -type f -newer "$REPO/$dir/build/Release/$name" -print -quit)" ]; then
      step "$dir: the checkout's build has the same inputs, taken"
      cp "$REPO/$dir/build/Release/$name" "$kept.tmp" && mv "$kept.tmp" "$kept"
    fi
    if [ -s "$kept" ]; then
      step "$dir: compiled before ($kept)"
      mkdir -p "$dir/build/Release"
      cp "$kept" "$dir/build/Release/$name"
      continue
    fi
    step "node-gyp rebuild $dir ($arch)"
    (cd "$dir" && node "$node_gyp" rebuild --release --loglevel=warn --nodedir="$nodedir" --arch="$node_arch")
    cp "$dir/build/Release/$name" "$kept.tmp" && mv "$kept.tmp" "$kept"
  done
  rm -rf "$src/.cross-bin"
  step "built"
  exit 0
fi

[ "$phase" = finish ] || {
  echo "stage-app: the phase is build or finish, not $phase" >&2
  exit 2
}
step "dev dependencies removed (as package-lock.json marks them)"
# What `npm prune --omit=dev` removes, without its registry round trips (minutes on a cold cache): every
# package the lockfile marks dev (only needed by devDependencies), then the links to their commands.
node -e '
  const p = require("./package-lock.json").packages;
  for (const [path, meta] of Object.entries(p)) if (path && meta.dev) console.log(path);
' | while read -r path; do rm -rf -- "$path"; done
find node_modules -path '*/.bin/*' -xtype l -delete
rm -f node_modules/.package-lock.json

# Our addons ship prebuilt (node-gyp-build loads prebuilds/linux-<arch>/ as for usearch): no box compiles.
for addon in hnsw-walk:hnsw_walk vector-scan:vector_scan; do
  dir=native/${addon%%:*}
  mkdir -p "$dir/prebuilds/linux-$node_arch"
  "$strip_tool" --strip-unneeded -o "$dir/prebuilds/linux-$node_arch/vigil-${addon%%:*}.napi.node" "$dir/build/Release/${addon##*:}.node"
  rm -rf "$dir/build" "$dir/src" "$dir/binding.gyp" "$dir/probe-isa.cjs"
done
# Addons compiled here: only the binary stays (sources, objects and sqlite3.c are build inputs).
"$strip_tool" --strip-unneeded node_modules/better-sqlite3/build/Release/better_sqlite3.node \
  node_modules/gstreamer-superficial/build/Release/*.node
for m in better-sqlite3 gstreamer-superficial; do
  find "node_modules/$m/build" -mindepth 1 -maxdepth 2 ! -path "*/Release" ! -name '*.node' -exec rm -rf {} +
done
rm -f node_modules/better-sqlite3/build/Release/test_extension.node
rm -rf node_modules/better-sqlite3/deps node_modules/better-sqlite3/src
# Prebuilt binaries of other platforms.
find node_modules/onnxruntime-node/bin -mindepth 2 -maxdepth 2 -type d ! -name linux -exec rm -rf {} +
find node_modules/onnxruntime-node/bin -mindepth 3 -maxdepth 3 -type d ! -name "$node_arch" -exec rm -rf {} +
find node_modules/usearch/prebuilds -mindepth 1 -maxdepth 1 ! -name "linux-$node_arch" -exec rm -rf {} +
# usearch's sources and NumKong (headers our walker was compiled against).
rm -rf node_modules/usearch/c node_modules/usearch/cpp node_modules/usearch/include node_modules/usearch/numkong
step "staged"
