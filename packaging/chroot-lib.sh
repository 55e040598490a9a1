# Sourced by the packaging scripts: a Debian root's kernel file systems mounted for chroot, and always
# unmounted again (call root_unmount_all from an EXIT trap; it also runs on failure).
# shellcheck shell=bash

ROOT_MOUNTS=()

# pkg_arch ARCH: node_arch (Node's name) and gnu (the GNU triplet) of a Debian architecture we package.
pkg_arch() {
  case $1 in
    amd64) node_arch=x64 gnu=x86_64-linux-gnu ;;
    arm64) node_arch=arm64 gnu=aarch64-linux-gnu ;;
    *)
      echo "$(basename "$0"): ARCH must be amd64 or arm64, not $1" >&2
      exit 2
      ;;
  esac
}

# root_mount ROOT: /proc, /sys, /dev and /dev/pts of the host, the host's resolv.conf (apt and npm resolve
# names from inside).
root_mount() {
  local root=$1 m
  for m in proc sys dev dev/pts; do
    mkdir -p "$root/$m"
    mountpoint -q "$root/$m" && continue
    case $m in
      proc) mount -t proc proc "$root/proc" ;;
      sys) mount -t sysfs sysfs "$root/sys" ;;
      dev) mount --bind /dev "$root/dev" ;;
      dev/pts) mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" 2>/dev/null || mount --bind /dev/pts "$root/dev/pts" ;;
    esac
    ROOT_MOUNTS+=("$root/$m")
  done
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
}

# root_bind ROOT HOST_PATH PATH_IN_ROOT [ro]: a host file or folder seen inside the root.
root_bind() {
  local root=$1 from=$2 to
  to=$root$3
  if [ -d "$from" ]; then mkdir -p "$to"; else mkdir -p "$(dirname "$to")" && touch "$to"; fi
  mount --bind "$from" "$to"
  ROOT_MOUNTS+=("$to")
  if [ "${4:-}" = ro ]; then mount -o remount,bind,ro "$to"; fi
}

# root_unmount_all: everything root_mount and root_bind mounted, last first (lazily if busy).
root_unmount_all() {
  local i
  for ((i = ${#ROOT_MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${ROOT_MOUNTS[$i]}" 2>/dev/null || umount -l "${ROOT_MOUNTS[$i]}" 2>/dev/null || true
  done
  ROOT_MOUNTS=()
}

# root_remove ROOT: a test root deleted once nothing runs in it and nothing is mounted under it (never
# through a mount: rm stays on the root's own file system).
root_remove() {
  local root pid left i
  root=$(realpath -m "$1")
  case $root in / | "") return 1 ;; esac
  [ -d "$root" ] || return 0
  for i in 1 2 3 4 5 6 7 8 9 10; do
    left=
    for pid in /proc/[0-9]*; do
      [ "$(readlink "$pid/root" 2>/dev/null)" = "$root" ] || continue
      left="$left ${pid#/proc/}"
      kill -s "$([ "$i" -lt 5 ] && echo TERM || echo KILL)" "${pid#/proc/}" 2>/dev/null || true
    done
    [ -n "$left" ] || break
    sleep 1
  done
  root_unmount_all
  left=$(awk -v r="$root/" 'index($2 "/", r) == 1 { print $2 }' /proc/self/mounts)
  if [ -n "$left" ]; then
    echo "root_remove: still mounted, $root is kept: $left" >&2
    return 1
  fi
  rm -rf --one-file-system "$root"
}

# root_run ROOT COMMAND...: a command inside the root as root, with a plain environment.
root_run() {
  local root=$1
  shift
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
}

# The package's daemon in a root without systemd, started as its unit says (run-unit.sh inside the root):
# chroot execs run-unit, which execs runuser, whose child is node. ROOT_DAEMON_PID is that runuser.
ROOT_DAEMON_PID=

# root_daemon_start ROOT LOG: the unit's ExecStart, in the background.
root_daemon_start() {
  install -m 0755 "$(dirname "${BASH_SOURCE[0]}")/run-unit.sh" "$1/usr/local/bin/run-unit"
  chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin /usr/local/bin/run-unit >"$2" 2>&1 &
  ROOT_DAEMON_PID=$!
}

# root_daemon_stop: SIGTERM to the daemon (runuser's child), as systemd stops it; waits for it to exit.
root_daemon_stop() {
  [ -n "$ROOT_DAEMON_PID" ] || return 0
  pkill -TERM -P "$ROOT_DAEMON_PID" || true
  wait "$ROOT_DAEMON_PID" 2>/dev/null || true
  ROOT_DAEMON_PID=
}

# free_port: a TCP port nobody listens on now (the package tests' daemon gets it through VIGIL_PORT, so that
# a daemon already on 8080 on this machine does not matter).
free_port() {
  node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'
}

# wait_ready URL SECONDS: until /v1/health answers ready.
wait_ready() {
  local i
  for ((i = 0; i < $2; i++)); do
    curl -sf --max-time 2 "$1/v1/health" | grep -q '"ready"' && return 0
    sleep 1
  done
  return 1
}

# The steps of a package test, timed: `step NAME` ends the step before and starts NAME; `steps_json` prints
# {"name": seconds, …} of the ended steps.
declare -A STEP_SECONDS
STEP_T0=$(date +%s)
STEP_NAME=
STEP_MARK=$STEP_T0
step() {
  local now
  now=$(date +%s)
  [ -z "$STEP_NAME" ] || STEP_SECONDS[$STEP_NAME]=$((now - STEP_MARK))
  STEP_NAME=$1
  STEP_MARK=$now
  printf '\n[%s %5ss] %s\n' "$(basename "$0" .sh)" $((now - STEP_T0)) "$1" >&2
}
steps_json() {
  local k sep=
  printf '{'
  for k in "${!STEP_SECONDS[@]}"; do
    printf '%s"%s":%d' "$sep" "$k" "${STEP_SECONDS[$k]}"
    sep=,
  done
  printf '}'
}

# The test camera (packaging/smoke.ts camera: an RTSP server on this host, looping a photo of Obama):
# camera_start REPO FIXTURES URL_FILE; camera_stop.
CAMERA_PID=
camera_start() {
  (cd "$1" && exec node --import tsx packaging/smoke.ts camera --fixtures "$2/faces") >"$3" &
  CAMERA_PID=$!
}
camera_stop() {
  [ -n "$CAMERA_PID" ] || return 0
  kill "$CAMERA_PID" 2>/dev/null || true
  wait "$CAMERA_PID" 2>/dev/null || true
  CAMERA_PID=
}

# A package test's EXIT trap (on failure too): the daemon and camera it started stopped, its mounts undone,
# its root (TEST_ROOT) deleted unless VIGIL_KEEP_TEST_ROOT=1; on failure the daemon's log is kept in
# dist-pkg/ (TEST_LOGS names where).
TEST_ROOT=
TEST_LOGS=
package_test_cleanup() {
  local rc=$?
  root_daemon_stop
  camera_stop
  root_unmount_all
  if [ "$rc" != 0 ] && [ -n "$TEST_LOGS" ] && [ -s "$TEST_ROOT/tmp/daemon.log" ]; then
    cp "$TEST_ROOT/tmp/daemon.log" "$TEST_LOGS" && echo "the daemon's log: $TEST_LOGS" >&2
  fi
  if [ -n "$TEST_ROOT" ] && [ "${VIGIL_KEEP_TEST_ROOT:-0}" != 1 ]; then
    root_remove "$TEST_ROOT" || rc=1
  fi
  exit "$rc"
}

# deb_commit DEB: the git commit a package was built from (its description says it).
deb_commit() {
  dpkg-deb -f "$1" Description | sed -n 's/.*Built from git commit \([0-9a-f]*\).*/\1/p'
}

# deb_cache: a folder of downloaded Debian packages (name_version_arch.deb, the naming of apt and
# debootstrap) shared by the package scripts' roots, seeded from this machine's apt cache (links, no copies);
# prints its path. Whoever takes a package from it checks it against the archive's checksums (apt and
# debootstrap do), so a stale or foreign file is only a cache miss.
deb_cache() {
  local dir f
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.pkg-build/cache/debs
  mkdir -p "$dir"
  for f in /var/cache/apt/archives/*.deb; do
    [ -e "$f" ] && [ ! -e "$dir/${f##*/}" ] || continue
    ln "$f" "$dir/" 2>/dev/null || ln -s "$f" "$dir/"
  done
  printf '%s\n' "$dir"
}

# root_apt_install ROOT PACKAGE...: apt-get install in the root, its downloads taken from deb_cache where
# that has them (copied into the root's apt cache; apt verifies each) and what it fetched added there.
root_apt_install() {
  local root=$1 debs f
  shift
  debs=$(deb_cache)
  local wanted=0 cached=0
  while read -r f; do
    wanted=$((wanted + 1))
    [ -e "$debs/$f" ] || continue
    cached=$((cached + 1))
    ln "$(readlink -f "$debs/$f")" "$root/var/cache/apt/archives/$f" 2>/dev/null || cp -L "$debs/$f" "$root/var/cache/apt/archives/$f"
  done < <(root_run "$root" apt-get install -y -q --no-install-recommends --print-uris "$@" |
    sed -n "s/^'http[^']*' \([^ ]*\.deb\) .*/\1/p")
  echo "root_apt_install: $cached of $wanted packages from $debs" >&2
  root_run "$root" apt-get install -y -q --no-install-recommends "$@"
  for f in "$root"/var/cache/apt/archives/*.deb; do
    [ -e "$f" ] && [ ! -e "$debs/${f##*/}" ] || continue
    ln "$f" "$debs/" 2>/dev/null || cp "$f" "$debs/"
  done
  rm -f "$root"/var/cache/apt/archives/*.deb
}
