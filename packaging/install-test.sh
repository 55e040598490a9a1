#!/usr/bin/env bash
# `make package-test` (CI, after `make test`): the amd64 package installed into a fresh Debian 12 root as a
# user would, then used and removed.
#   1. build dist-pkg/vigil_<version>_amd64.deb (or take DEB=…)
#   2. a fresh Debian 12 root (debootstrap; the root is cached as a tarball under .pkg-build/cache)
#   3. apt install ./vigil_*.deb: the user, /var/lib/vigil 0700, the API key 0600, nothing started (no systemd)
#   4. vigil models install edge_s --accept-license --from <mirror>
#   5. the unit's ExecStart as its user (packaging/run-unit.sh), the README's quickstart against it with a
#      test camera, then packaging/smoke.ts (detect, embeddings, search per profile, HNSW, a monitor event)
#   6. without the HNSW walker addon: the daemon still starts, says so, and HNSW collections still answer
#   7. apt install --reinstall: the pre-upgrade backup; apt remove: data and config kept; apt purge: gone
# On exit, failed or not, the daemon and camera are stopped, every mount is undone and the root is deleted
# (VIGIL_KEEP_TEST_ROOT=1 keeps it; a failed run's daemon log is copied to dist-pkg/). The daemon listens on a
# free port (VIGIL_PORT in vigil.env), not 8080. Durations go to dist-pkg/install-test.json.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/packaging/chroot-lib.sh"
mirror=${VIGIL_MODEL_MIRROR:-$repo/../shared/models}
fixtures=${VIGIL_FIXTURES:-$repo/../shared/fixtures}
root=${VIGIL_TEST_ROOT:-$repo/.pkg-build/roots/install-test}
out=$repo/dist-pkg
fail() {
  echo "install-test: FAILED: $*" >&2
  exit 1
}
TEST_ROOT=$root
TEST_LOGS=$out/install-test-daemon.log
trap package_test_cleanup EXIT
in_root() { root_run "$root" "$@"; }
mkdir -p "$out"
rm -f "$TEST_LOGS"

step "package"
if [ -z "${DEB:-}" ]; then
  "$repo/packaging/build-package.sh" amd64
  DEB=$(ls -t "$out"/vigil_*_amd64.deb | head -n 1)
fi
version=$(dpkg-deb -f "$DEB" Version)
commit=$(deb_commit "$DEB")

step "fresh Debian 12 root"
root_remove "$root"
"$repo/packaging/debian-root.sh" amd64 "$root"
root_mount "$root"
cp "$DEB" "$root/tmp/vigil.deb"

step "apt install ./vigil_${version}_amd64.deb"
in_root apt-get update -qq
root_apt_install "$root" /tmp/vigil.deb | tee "$root/tmp/apt-install.log" | tail -n 15
grep -q 'sudo cat /etc/vigil/vigil.env' "$root/tmp/apt-install.log" || fail "the install does not say how to read the API key"
grep -q "vigil models install edge_s --accept-license" "$root/tmp/apt-install.log" || fail "the install does not say how to install models"
in_root getent passwd vigil >/dev/null || fail "no vigil user"
# Owners as the root names them (stat inside it: its vigil's uid may be another user's on this machine).
[ "$(in_root stat -c '%a %U' /var/lib/vigil)" = "700 vigil" ] || fail "/var/lib/vigil is $(in_root stat -c '%a %U' /var/lib/vigil)"
[ "$(in_root stat -c '%a %U' /etc/vigil/vigil.env)" = "600 root" ] || fail "vigil.env is $(in_root stat -c '%a %U' /etc/vigil/vigil.env)"
key=$(sed -n 's/^VIGIL_API_KEY=//p' "$root/etc/vigil/vigil.env")
[ ${#key} -ge 16 ] || fail "no API key in /etc/vigil/vigil.env"
[ "$(in_root vigil --version)" = "vigil $version (commit $commit)" ] || fail "vigil --version: $(in_root vigil --version)"
for pid in $(pgrep -f /usr/lib/vigil/app/dist/cli/main.js); do
  [ "$(readlink "/proc/$pid/root")" = "$(realpath "$root")" ] && fail "a daemon was started without systemd"
done
[ -L "$root/etc/systemd/system/multi-user.target.wants/vigil.service" ] || fail "the unit is not enabled"

# The port, as an admin would set it: VIGIL_PORT in the unit's environment file.
port=$(free_port)
printf 'VIGIL_PORT=%s\n' "$port" >>"$root/etc/vigil/vigil.env"
base=http://127.0.0.1:$port

step "vigil models install edge_s --from the mirror"
root_bind "$root" "$(realpath "$mirror")" /srv/vigil-mirror ro
in_root vigil models install edge_s --accept-license --from /srv/vigil-mirror | tail -n 2
[ "$(in_root stat -c %U /var/lib/vigil/models)" = vigil ] || fail "the models belong to $(in_root stat -c %U /var/lib/vigil/models)"

step "the unit's ExecStart as the vigil user; the README's quickstart"
camera_start "$repo" "$fixtures" "$root/tmp/camera.url"
root_daemon_start "$root" "$root/tmp/daemon.log"
wait_ready "$base" 180 || {
  tail -n 20 "$root/tmp/daemon.log"
  fail "the daemon did not become ready"
}
camera=$(head -n 1 "$root/tmp/camera.url")
[ -n "$camera" ] || fail "the test camera did not start"
# The README's first sh block under "Quickstart", as written, in a folder laid out like a checkout
# (var/api-key, ../shared/fixtures); only the camera URL is the test camera's.
tour=$root/root/tour
mkdir -p "$tour/var" "$root/root/shared"
printf '%s' "$key" >"$tour/var/api-key"
root_bind "$root" "$(realpath "$fixtures")" /root/shared/fixtures ro
awk '/^## Quickstart/{f=1} f&&/^```sh$/{b=1;next} b&&/^```$/{exit} b' "$root/usr/share/doc/vigil/README.md" |
  sed "s|^CAMERA_URL=.*|CAMERA_URL='$camera'|" >"$tour/quickstart.sh"
grep -q "^CAMERA_URL='$camera'\$" "$tour/quickstart.sh" || fail "the Quickstart block has no CAMERA_URL= line of its own"
[ -s "$tour/quickstart.sh" ] || fail "no Quickstart sh block in the README"
# Its answers go to a file, shown when a check fails.
quickstart_fail() {
  cat "$tour/quickstart.out" >&2
  fail "$@"
}
in_root env BASE="$base" sh -c 'cd /root/tour && sh -e quickstart.sh' >"$tour/quickstart.out" ||
  quickstart_fail "quickstart: the block failed"
grep -Eq '"id": ?"staff"' "$tour/quickstart.out" || quickstart_fail "quickstart: the collection was not created"
grep -Eq '"id": ?"obama"' "$tour/quickstart.out" || quickstart_fail "quickstart: the person was not enrolled"
grep -Eq '"id": ?"door"' "$tour/quickstart.out" || quickstart_fail "quickstart: the monitor was not created"
# An error answer is an envelope, {"error":{…},"request_id":…}; an event's "error" field (a camera that was
# slow to send its first frame on a busy machine) is not one.
grep -Eq '\{"error": ?\{' "$tour/quickstart.out" && quickstart_fail "quickstart: an error answer"
echo "quickstart: $(grep -c . "$tour/quickstart.sh") lines run; collection staff, person obama, monitor door created"

for _ in $(seq 1 120); do
  curl -s --max-time 5 -H "Authorization: Bearer $key" "$base/v1/events?monitor_id=door" |
    grep -Eq '"type": ?"person_enter"' && break
  sleep 1
done
curl -s --max-time 5 -H "Authorization: Bearer $key" "$base/v1/events?monitor_id=door" |
  grep -Eq '"type": ?"person_enter"' || fail "quickstart: no person_enter event from the camera"
echo "quickstart: person_enter on door"

step "smoke checks (detect, embeddings, fp32/fp16/int8 and HNSW search, a monitor event)"
(cd "$repo" && node --import tsx packaging/smoke.ts --base "$base" --key="$key" --fixtures "$fixtures/faces" --camera "$camera" \
  --expect-version "$version" --expect-commit "$commit" --out "$out/smoke-amd64.json")

step "without the HNSW walker addon"
root_daemon_stop
walker=$root/usr/lib/vigil/app/native/hnsw-walk/prebuilds
mv "$walker" "$walker.off"
root_daemon_start "$root" "$root/tmp/daemon.log"
(cd "$repo" && node --import tsx packaging/smoke.ts without-walker --base "$base" --key="$key" --fixtures "$fixtures/faces")
grep -q 'the native walker (vigil-hnsw-walk) did not load' "$root/tmp/daemon.log" || fail "no warning about the missing walker"
root_daemon_stop
mv "$walker.off" "$walker"

step "apt install --reinstall: the backup before an upgrade"
in_root apt-get install -y -q --reinstall /tmp/vigil.deb | grep -E '^vigil:|backed up|backup' || true
backup=$(ls "$root"/var/backups/vigil/vigil-"$version"-*.tar.gz 2>/dev/null | head -n 1)
[ -n "$backup" ] || fail "no backup in /var/backups/vigil before the upgrade"
tar -xzOf "$backup" manifest.json | grep -q "\"vigil_commit\": \"$commit\"" || fail "the backup's manifest lacks the commit"
echo "pre-upgrade backup: ${backup#"$root"} ($(du -h "$backup" | cut -f1))"

step "apt remove keeps data and config; apt purge removes them"
in_root apt-get remove -y -q vigil >/dev/null
[ ! -e "$root/usr/lib/vigil" ] && [ ! -e "$root/usr/bin/vigil" ] || fail "remove left the program"
[ -s "$root/var/lib/vigil/vigil.db" ] || fail "remove deleted the database"
[ -s "$root/etc/vigil/server.toml" ] && [ -s "$root/etc/vigil/vigil.env" ] || fail "remove deleted the configuration"
in_root getent passwd vigil >/dev/null || fail "remove deleted the user"
in_root apt-get purge -y -q vigil | grep -v '^(Reading\|Removing' || true
[ ! -e "$root/var/lib/vigil" ] && [ ! -e "$root/etc/vigil" ] || fail "purge left /var/lib/vigil or /etc/vigil"
in_root getent passwd vigil >/dev/null && fail "purge left the vigil user"
step "done"

total=$(($(date +%s) - STEP_T0))
printf '{"deb":"%s","version":"%s","commit":"%s","seconds":%d,"steps":%s}\n' "$(basename "$DEB")" "$version" \
  "$commit" "$total" "$(steps_json)" >"$out/install-test.json"
echo "install-test: passed in ${total} s ($out/install-test.json)"
