#!/usr/bin/env bash
# A fresh Debian 12 root for the package tests: `packaging/debian-root.sh ARCH DIR [EXTRA_PACKAGES]`.
# debootstrap is slow (minutes; far longer for a foreign architecture under qemu-user-static), so the
# first root of each architecture is kept as a tarball under .pkg-build/cache and unpacked on later runs.
# Needs root, debootstrap, and for arm64 on x86 qemu-user-static with binfmt_misc (F flag) registered.
set -euo pipefail
arch=${1:?arch (amd64 or arm64)}
dir=${2:?target directory}
extra=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
cache=${VIGIL_ROOT_CACHE:-$here/.pkg-build/cache}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
# Packages every test root needs beyond minbase: apt's https transport is in apt itself since 1.5.
base=ca-certificates,curl
# One cached root per architecture and package list.
tarball="$cache/debian12-$arch${extra:+-$(printf %s "$extra" | md5sum | cut -c1-8)}-root.tar.gz"
mkdir -p "$cache"
. "$here/packaging/chroot-lib.sh"
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
  echo "debian-root: $dir is not empty" >&2
  exit 1
fi
mkdir -p "$dir"
if [ -s "$tarball" ]; then
  echo "debian-root: unpacking the cached $arch root ($tarball)" >&2
  tar -xzf "$tarball" -C "$dir"
else
  if [ "$arch" != "$(dpkg --print-architecture)" ]; then
    # arm64 programs run through qemu-user-static, registered with binfmt_misc (F flag: the interpreter is
    # opened here, so it works inside the chroot too). A container may not have binfmt_misc mounted.
    mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || true
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 || true
    if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
      echo "debian-root: a foreign $arch root needs qemu-user-static registered with binfmt_misc" >&2
      exit 1
    fi
  fi
  echo "debian-root: debootstrap $suite $arch into $dir (cached afterwards in $tarball)" >&2
  # Packages already downloaded (this machine's apt cache, earlier roots) are not fetched again: debootstrap
  # checks each against the archive's checksums and downloads what is missing or different.
  debs=$(deb_cache)
  debootstrap --variant=minbase --arch="$arch" --cache-dir="$debs" --include="$base${extra:+,$extra}" "$suite" "$dir" "$mirror"
  # The root's apt sources: the main archive, updates and security, like a real box.
  cat >"$dir/etc/apt/sources.list" <<SRC
deb $mirror $suite main
deb $mirror $suite-updates main
deb ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} $suite-security main
SRC
  rm -rf "$dir/var/cache/apt/archives/"*.deb
  tar -czf "$tarball.tmp" -C "$dir" . && mv "$tarball.tmp" "$tarball"
fi
# A throw-away root: dpkg need not fsync every file it unpacks (as in Debian's container images); the
# package's install takes minutes less on a busy disk.
mkdir -p "$dir/etc/dpkg/dpkg.cfg.d"
echo force-unsafe-io >"$dir/etc/dpkg/dpkg.cfg.d/vigil-test-root-unsafe-io"
