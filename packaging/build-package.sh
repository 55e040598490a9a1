#!/usr/bin/env bash
# `make package [ARCH=amd64|arm64]`: dist-pkg/vigil_<version>_<arch>.deb from a clean export of HEAD
# (uncommitted files never reach a package). Needs root (dpkg-deb, and chroot for arm64), Debian 12 with
# the packages of `VIGIL_PACKAGE_DEPS=1 scripts/install-system-deps.sh`.
#
#   amd64: the app is built here (this machine is the target architecture).
#   arm64: the app is built inside an arm64 Debian 12 root (debootstrap, cached under .pkg-build/) that runs
#          under qemu-user-static: npm, node-gyp and GCC run as arm64 programs, so every native addon is
#          compiled for arm64 by Debian's own arm64 compiler. Slow: see docs/install/arm64.md.
#
# The layout the package installs:
#   /usr/lib/vigil/node         Node.js from the npm registry's node-linux-<arch> package (packaging/node-runtime.json)
#   /usr/lib/vigil/app          dist/, production node_modules with every addon prebuilt, models/manifest.json
#   /usr/bin/vigil              packaging/vigil.sh
#   /lib/systemd/system/vigil.service, /etc/vigil/server.toml (conffile), /etc/default/vigil (conffile)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:-${ARCH:-amd64}}
case $arch in
  amd64) node_arch=x64 gnu=x86_64-linux-gnu ;;
  arm64) node_arch=arm64 gnu=aarch64-linux-gnu ;;
  *)
    echo "build-package: ARCH must be amd64 or arm64, not $arch" >&2
    exit 2
    ;;
esac
. "$repo/packaging/chroot-lib.sh"
host_arch=$(dpkg --print-architecture)
work=$repo/.pkg-build/$arch
cache=$repo/.pkg-build/cache
out=${VIGIL_PKG_OUT:-$repo/dist-pkg}
t0=$(date +%s)
log() { printf '[package %s %5ss] %s\n' "$arch" $(($(date +%s) - t0)) "$*" >&2; }
trap root_unmount_all EXIT
# What the arm64 build root holds beyond minbase (build-essential brings dpkg-dev for dpkg-shlibdeps).
BUILD_ROOT_PACKAGES=build-essential,python3,pkg-config,libgstreamer1.0-dev,libgstreamer-plugins-base1.0-dev,git,xz-utils

# 1. HEAD, exported: what is committed is what ships. VIGIL_PKG_RESUME=1 goes on with the export of an
# earlier run whose `npm ci` completed (the emulated arm64 one takes hours), stamped with that run's commit.
if [ "${VIGIL_PKG_RESUME:-0}" = 1 ] && [ -s "$work/commit" ] && [ -d "$work/src/node_modules" ]; then
  commit=$(cat "$work/commit")
  export VIGIL_PKG_SKIP_CI=1
  log "resuming the build of $commit in $work"
  rm -rf "$work/pkg" "$work/shlibs"
  mkdir -p "$work/pkg" "$cache" "$out"
else
  commit=$(git -C "$repo" rev-parse --short=12 HEAD)
  if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
    log "the checkout has uncommitted changes: they are not in the package (built from HEAD $commit)"
  fi
  rm -rf "$work"
  mkdir -p "$work/src" "$work/pkg" "$cache" "$out"
  git -C "$repo" archive --format=tar HEAD | tar -x -C "$work/src"
  echo "$commit" >"$work/commit"
fi
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

# 3. The app, built on the target architecture.
# npm is JavaScript: this machine's copy runs on the shipped Node, here and in the build root.
npm_cli=$(dirname "$(readlink -f "$(command -v npm)")")/npm-cli.js
if [ "$arch" = "$host_arch" ]; then
  log "building the app here"
  "$repo/packaging/stage-app.sh" "$work/src" "$work/node" "$npm_cli" "$commit"
else
  broot=${VIGIL_BUILD_ROOT:-$repo/.pkg-build/roots/$arch-build}
  if [ ! -x "$broot/bin/sh" ]; then
    log "making the $arch build root $broot (debootstrap, cached)"
    "$repo/packaging/debian-root.sh" "$arch" "$broot" "$BUILD_ROOT_PACKAGES"
  fi
  log "building the app in $broot (qemu-user-static)"
  root_mount "$broot"
  root_bind "$broot" "$work" /build
  root_bind "$broot" "$(dirname "$(dirname "$npm_cli")")" /opt/npm ro
  # This machine's npm cache: packages fetched for the amd64 build (or earlier arm64 ones) are not fetched
  # again by the emulated npm, which is slow at everything.
  npm_cache=$(npm config get cache 2>/dev/null || echo "$HOME/.npm")
  mkdir -p "$npm_cache"
  root_bind "$broot" "$npm_cache" /root/.npm
  root_bind "$broot" "$repo/packaging/stage-app.sh" /usr/local/bin/stage-app.sh ro
  # A CA bundle this machine's npm is told to trust (a site's TLS proxy) is trusted inside the root too.
  ca=$(npm config get cafile 2>/dev/null || true)
  ca_env=()
  if [ -n "$ca" ] && [ "$ca" != null ] && [ "$ca" != undefined ] && [ -r "$ca" ]; then
    root_bind "$broot" "$ca" /etc/ssl/certs/vigil-build-ca.crt ro
    ca_env=(npm_config_cafile=/etc/ssl/certs/vigil-build-ca.crt)
  fi
  root_run "$broot" env VIGIL_PKG_NATIVE_TESTS="${VIGIL_PKG_NATIVE_TESTS:-0}" VIGIL_PKG_SKIP_CI="${VIGIL_PKG_SKIP_CI:-0}" \
    JOBS="${JOBS:-2}" "${ca_env[@]}" \
    /usr/local/bin/stage-app.sh /build/src /build/node /opt/npm/bin/npm-cli.js "$commit"
fi

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
glibc=$(cd "$pkg" && for f in "${elves[@]}"; do objdump -T "$f" 2>/dev/null; done | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size/" -e "s/@SHLIBS@/$substvars/" \
  -e "s/@NODE_VERSION@/Node.js $node_version/" -e "s/@COMMIT@/$commit/" \
  "$repo/packaging/debian/control.in" >"$pkg/DEBIAN/control"

deb=$out/vigil_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >/dev/null
log "built $deb ($(du -h "$deb" | cut -f1), installed $((size / 1024)) MiB; newest glibc symbol: $glibc)"
log "Depends: $(sed -n 's/^Depends: //p' "$pkg/DEBIAN/control")"
printf '{"arch":"%s","version":"%s","commit":"%s","seconds":%d,"deb":"%s","bytes":%d,"glibc_floor":"%s"}\n' \
  "$arch" "$version" "$commit" $(($(date +%s) - t0)) "$deb" "$(stat -c %s "$deb")" "${glibc#GLIBC_}" \
  >"$out/vigil_${version}_$arch.build.json"
