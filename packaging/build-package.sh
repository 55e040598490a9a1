#!/usr/bin/env bash
# `make package [ARCH=amd64|arm64]`: dist-pkg/vigil_<version>_<arch>.deb from a clean export of HEAD
# (uncommitted files never reach a package). Needs root (dpkg-deb, and chroot for arm64), Debian 12 with
# the packages of `VIGIL_PACKAGE_DEPS=1 scripts/install-system-deps.sh`.
#
# The app is built on this machine (packaging/stage-app.sh), for amd64 natively. For arm64 the native addons
# are cross-compiled by Debian's aarch64 GCC 12 with an arm64 Debian 12 root as the sysroot (debootstrap,
# cached under .pkg-build/), and their unit tests then run inside that root under qemu-user-static; the
# root also gives dpkg-shlibdeps the arm64 package database. See docs/install/arm64.md.
#
# The layout the package installs:
#   /usr/lib/vigil/node         Node.js from the npm registry's node-linux-<arch> package (packaging/node-runtime.json)
#   /usr/lib/vigil/app          dist/, production node_modules with every addon prebuilt, models/manifest.json
#   /usr/bin/vigil              packaging/vigil.sh
#   /lib/systemd/system/vigil.service, /etc/vigil/server.toml (conffile), /etc/default/vigil (conffile)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:-${ARCH:-amd64}}
. "$repo/packaging/chroot-lib.sh"
pkg_arch "$arch"
host_arch=$(dpkg --print-architecture)
work=$repo/.pkg-build/$arch
cache=$repo/.pkg-build/cache
out=${VIGIL_PKG_OUT:-$repo/dist-pkg}
t0=$(date +%s)
# Wall seconds since the start and CPU seconds of this script and its finished children (on a loaded machine
# the CPU time is what a clean one would need, give or take the parallel compiles).
cpu() { awk '{ printf "%d", ($14 + $15 + $16 + $17) / 100 }' /proc/$$/stat; }
log() { printf '[package %s %5ss, cpu %4ss] %s\n' "$arch" $(($(date +%s) - t0)) "$(cpu)" "$*" >&2; }
trap root_unmount_all EXIT
# What the arm64 build root holds beyond minbase (build-essential brings dpkg-dev for dpkg-shlibdeps).
BUILD_ROOT_PACKAGES=build-essential,python3,pkg-config,libgstreamer1.0-dev,libgstreamer-plugins-base1.0-dev,git,xz-utils

# 1. HEAD, exported: what is committed is what ships.
commit=$(git -C "$repo" rev-parse --short=12 HEAD)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  log "the checkout has uncommitted changes: they are not in the package (built from HEAD $commit)"
fi
rm -rf "$work"
mkdir -p "$work/src" "$work/pkg" "$cache" "$out"
git -C "$repo" archive --format=tar HEAD | tar -x -C "$work/src"
version=$(node -p 'require(process.argv[1]).version' "$work/src/package.json")
log "vigil $version ($commit) for $arch"

# 2. The Node.js runtime, from the npm registry, checked against the pinned integrity.
node_version=$(node -p "require('$repo/packaging/node-runtime.json').version")
node_pkg=$(node -p "require('$repo/packaging/node-runtime.json').packages['$arch'].name")
integrity=$(node -p "require('$repo/packaging/node-runtime.json').packages['$arch'].integrity")
tgz=$cache/$node_pkg-$node_version.tgz
if [ ! -s "$tgz" ]; then
  log "npm pack $node_pkg@$node_version"
  (cd "$cache" && npm pack --silent "$node_pkg@$node_version" >/dev/null)
fi
got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
if [ "$got" != "$integrity" ]; then
  echo "build-package: $tgz does not match packaging/node-runtime.json ($got)" >&2
  rm -f "$tgz"
  exit 1
fi
rm -rf "$work/node"
mkdir -p "$work/node"
tar -xzf "$tgz" -C "$work/node" --strip-components=1

# 3. The app, built here for the target architecture (stage-app.sh: cross-compiled for arm64 against the
# arm64 build root), the native addons' unit tests, then the production tree.
# npm is JavaScript: this machine's copy runs (on the shipped Node where it can run here).
npm_cli=$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js
if [ "$arch" != "$host_arch" ]; then
  broot=${VIGIL_BUILD_ROOT:-$repo/.pkg-build/roots/$arch-build}
  if [ ! -x "$broot/bin/sh" ]; then
    log "making the $arch build root $broot (debootstrap, cached)"
    "$repo/packaging/debian-root.sh" "$arch" "$broot" "$BUILD_ROOT_PACKAGES"
  fi
  export VIGIL_PKG_SYSROOT=$broot
fi
log "building the app (stage-app.sh build)"
ADDON_CACHE=$cache/addons REPO=$repo "$repo/packaging/stage-app.sh" build "$work/src" "$arch" "$work/node" "$npm_cli" "$commit"
# The unit tests of the native addons on the architecture they were built for: vector-scan's kernel
# (NEON on arm64, AVX2+F16C or scalar on amd64) against the scalar references, the HNSW walker on NumKong's
# kernels against usearch's own search. For arm64 they run inside the build root under qemu-user-static
# (default on: nothing else runs those binaries before the smoke test); for amd64 `make test` runs them.
native_tests=(test/unit/vector-scan.test.ts test/unit/hnsw-graph.test.ts test/unit/hnsw-walk-probe.test.ts)
if [ "$arch" = "$host_arch" ]; then
  if [ "${VIGIL_PKG_NATIVE_TESTS:-0}" = 1 ]; then
    log "native addon unit tests"
    (cd "$work/src" && "$work/node/bin/node" node_modules/ava/entrypoints/cli.mjs "${native_tests[@]}")
  fi
elif [ "${VIGIL_PKG_NATIVE_TESTS:-1}" = 1 ]; then
  log "native addon unit tests in $broot (qemu-user-static)"
  root_mount "$broot"
  root_bind "$broot" "$work" /build
  root_run "$broot" sh -c 'cd /build/src && exec /build/node/bin/node node_modules/ava/entrypoints/cli.mjs "$@"' sh \
    "${native_tests[@]}" 2>&1 | tee "$work/native-tests.log"
  [ "${PIPESTATUS[0]}" = 0 ] || {
    echo "build-package: the native addon unit tests failed in the $arch root" >&2
    exit 1
  }
fi
log "production tree (stage-app.sh finish)"
"$repo/packaging/stage-app.sh" finish "$work/src" "$arch"

# 4. The package tree.
pkg=$work/pkg
lib=$pkg/usr/lib/vigil
mkdir -p "$lib/app/models" "$pkg/usr/bin" "$pkg/lib/systemd/system" "$pkg/etc/vigil" "$pkg/etc/default" \
  "$pkg/usr/share/doc/vigil" "$pkg/DEBIAN"
cp -a "$work/src/dist" "$work/src/node_modules" "$work/src/native" "$work/src/package.json" "$lib/app/"
cp -a "$work/src/models/manifest.json" "$lib/app/models/"
mkdir -p "$lib/node/bin"
cp -a "$work/node/bin/node" "$lib/node/bin/"
cp -a "$work/node/LICENSE" "$lib/node/"
install -m 0755 "$repo/packaging/vigil.sh" "$pkg/usr/bin/vigil"
install -m 0644 "$work/src/systemd/vigil.service" "$pkg/lib/systemd/system/vigil.service"
install -m 0644 "$work/src/config/server.example.toml" "$pkg/etc/vigil/server.toml"
install -m 0644 "$repo/packaging/debian/default" "$pkg/etc/default/vigil"
cp -a "$work/src/README.md" "$work/src/docs" "$pkg/usr/share/doc/vigil/"
cat >"$pkg/usr/share/doc/vigil/copyright" <<EOF
Vigil $version (git commit $commit). Licence: see package.json ("license").
Bundled: Node.js $node_version (/usr/lib/vigil/node/LICENSE) and the npm packages under
/usr/lib/vigil/app/node_modules, each under the licence in its own folder. Model packs are not included.
EOF
for f in preinst postinst prerm postrm; do install -m 0755 "$repo/packaging/debian/$f" "$pkg/DEBIAN/$f"; done
printf '/etc/vigil/server.toml\n/etc/default/vigil\n' >"$pkg/DEBIAN/conffiles"

# Depends on the shared libraries the binaries link (dpkg-shlibdeps reads the target root's package
# database: here for amd64, inside the build root for arm64); the libraries bundled under node_modules
# (libvips, libonnxruntime) are found through their own folders.
shlibs_dir=$work/shlibs
mkdir -p "$shlibs_dir/debian"
printf 'Source: vigil\n\nPackage: vigil\nArchitecture: any\n' >"$shlibs_dir/debian/control"
mapfile -t elves < <(cd "$pkg" && find . -type f \( -name '*.node' -o -name '*.so*' -o -path ./usr/lib/vigil/node/bin/node \) | sort)
# shlibdeps PREFIX: the dpkg-shlibdeps command over the package tree seen at PREFIX.
shlibdeps() {
  local dirs
  dirs=$(cd "$pkg" && find . -type f -name '*.so*' -printf "-l$1/%h\n" | sed 's|/\./|/|' | sort -u | tr '\n' ' ')
  printf 'cd %s && dpkg-shlibdeps -O --ignore-missing-info %s' "$2" "$dirs"
  printf " $1/%s" "${elves[@]#./}"
}
if [ "$arch" = "$host_arch" ]; then
  substvars=$(sh -c "$(shlibdeps "$pkg" "$shlibs_dir")" 2>"$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p')
else
  root_mount "$broot"
  root_bind "$broot" "$pkg" /pkg ro
  root_bind "$broot" "$shlibs_dir" /shlibs
  substvars=$(root_run "$broot" sh -c "$(shlibdeps /pkg /shlibs)" 2>"$work/shlibdeps.log" | sed -n 's/^shlibs:Depends=//p')
fi
if [ -z "$substvars" ]; then
  cat "$work/shlibdeps.log" >&2
  echo "build-package: dpkg-shlibdeps found no dependencies" >&2
  exit 1
fi
# The oldest glibc the shipped binaries accept (their highest GLIBC_x.y symbol version), for the docs.
objdump=objdump
[ "$arch" = "$host_arch" ] || objdump=$gnu-objdump
glibc=$(cd "$pkg" && for f in "${elves[@]}"; do "$objdump" -T "$f" 2>/dev/null; done | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size/" -e "s/@SHLIBS@/$substvars/" \
  -e "s/@NODE_VERSION@/Node.js $node_version/" -e "s/@COMMIT@/$commit/" \
  "$repo/packaging/debian/control.in" >"$pkg/DEBIAN/control"

deb=$out/vigil_${version}_$arch.deb
# zstd, not xz: xz took over 6 minutes for the ~250 MB tree on a loaded 2-core machine, zstd seconds, for
# a package about a fifth larger. dpkg reads zstd members on Debian 12 and Ubuntu 22.04/24.04 (JetPack 6).
dpkg-deb --root-owner-group -Zzstd -z"${VIGIL_PKG_ZSTD_LEVEL:-9}" --build "$pkg" "$deb" >/dev/null
log "built $deb ($(du -h "$deb" | cut -f1), installed $((size / 1024)) MiB; newest glibc symbol: $glibc)"
log "Depends: $(sed -n 's/^Depends: //p' "$pkg/DEBIAN/control")"
printf '{"arch":"%s","version":"%s","commit":"%s","seconds":%d,"cpu_seconds":%d,"deb":"%s","bytes":%d,"glibc_floor":"%s"}\n' \
  "$arch" "$version" "$commit" $(($(date +%s) - t0)) "$(cpu)" "$deb" "$(stat -c %s "$deb")" "${glibc#GLIBC_}" \
  >"$out/vigil_${version}_$arch.build.json"
