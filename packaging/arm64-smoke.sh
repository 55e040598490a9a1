#!/usr/bin/env bash
# `make package-arm64-smoke` (by hand; slow): the arm64 package installed into a fresh arm64 Debian 12 root
# that runs under qemu-user-static, the models installed from the mirror, the daemon started as its unit
# says (as the vigil user, no systemd), then packaging/smoke.ts against it: health, detect (6 faces),
# embeddings, search with fp32, fp16 and int8 profiles and an HNSW collection, one RTSP monitor event, every
# similarity equal to the amd64 build's (dist-pkg/smoke-amd64.json, written by `make package-test`) within
# 1e-4. Emulation makes every step slow: the durations go to dist-pkg/arm64-smoke.json, and they are not
# ARM timings. Needs `make package ARCH=arm64` first (or DEB=…).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
. "$repo/packaging/chroot-lib.sh"
mirror=${VIGIL_MODEL_MIRROR:-$repo/../shared/models}
fixtures=${VIGIL_FIXTURES:-$repo/../shared/fixtures}
root=${VIGIL_TEST_ROOT:-$repo/.pkg-build/roots/arm64-smoke}
out=$repo/dist-pkg
deb=${DEB:-$(ls -t "$out"/vigil_*_arm64.deb 2>/dev/null | head -n 1)}
[ -n "$deb" ] || {
  echo "arm64-smoke: no dist-pkg/vigil_*_arm64.deb: run make package ARCH=arm64 first" >&2
  exit 1
}
[ -s "$out/smoke-amd64.json" ] || {
  echo "arm64-smoke: no dist-pkg/smoke-amd64.json to compare with: run make package-test first" >&2
  exit 1
}
TEST_ROOT=$root
TEST_LOGS=$out/arm64-smoke-daemon.log
trap package_test_cleanup EXIT
rm -f "$TEST_LOGS"
version=$(dpkg-deb -f "$deb" Version)
commit=$(deb_commit "$deb")

# VIGIL_SMOKE_INSTALLED=1: the root of an earlier run kept with VIGIL_KEEP_TEST_ROOT=1, with this package and
# the models installed in it, is used again (its apt install takes minutes under emulation).
if [ "${VIGIL_SMOKE_INSTALLED:-0}" = 1 ]; then
  step "the kept arm64 root, package and models installed"
  [ -s "$root/var/lib/vigil/models/edge_s/pack.json" ] || {
    echo "arm64-smoke: VIGIL_SMOKE_INSTALLED=1 but $root has no installed edge_s" >&2
    exit 1
  }
  root_mount "$root"
else
  step "fresh arm64 Debian 12 root"
  root_remove "$root"
  "$repo/packaging/debian-root.sh" arm64 "$root"
  root_mount "$root"
fi
# ONNX Runtime reads /proc/cpuinfo to know the cores; under qemu-user it shows the x86 host's and ORT stops.
# An ARM one (2 Cortex-A78AE cores, as on a Jetson Orin) goes over it for the run.
cpuinfo=$root/tmp/cpuinfo.arm64
: >"$cpuinfo"
for cpu in 0 1; do
  printf 'processor\t: %s\nBogoMIPS\t: 62.50\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: 0xd42\nCPU revision\t: 1\n\n' "$cpu" >>"$cpuinfo"
done
root_bind "$root" "$cpuinfo" /proc/cpuinfo ro

if [ "${VIGIL_SMOKE_INSTALLED:-0}" != 1 ]; then
  cp "$deb" "$root/tmp/vigil.deb"
  step "apt install ./$(basename "$deb")"
  root_run "$root" apt-get update -qq
  root_apt_install "$root" /tmp/vigil.deb | tail -n 12
  root_run "$root" vigil doctor || true
  step "vigil models install edge_s --from the mirror"
  root_bind "$root" "$(realpath "$mirror")" /srv/vigil-mirror ro
  root_run "$root" vigil models install edge_s --accept-license --from /srv/vigil-mirror | tail -n 2
fi
[ "$(root_run "$root" vigil --version)" = "vigil $version (commit $commit)" ]
# The port, as an admin would set it (as install-test.sh does): a daemon on 8080 here does not matter.
port=$(free_port)
sed -i '/^VIGIL_PORT=/d' "$root/etc/vigil/vigil.env"
printf 'VIGIL_PORT=%s\n' "$port" >>"$root/etc/vigil/vigil.env"
base=http://127.0.0.1:$port
# Under emulation every ONNX Runtime run of the detector takes tens of seconds, and the default startup
# runs it dozens of times: graph_optimization auto times both levels (8 runs each, per model), and on 2 cores
# intra_op_threads auto loads and times a second set of sessions. The first run here spent over 20 minutes
# in that and never became ready. One worker, one thread and a fixed level load each model once; results
# do not depend on these (amd64's, compared below, ran with auto).
# A detector run takes about 100 s here, so a request gets 30 minutes and an image decode 2 (60 s and 10 s
# by default: the first detect answered 503 after 60 s).
sed -i -e 's/^max_concurrency = .*/max_concurrency = 1/' -e 's/^intra_op_threads = .*/intra_op_threads = 1/' \
  -e 's/^graph_optimization = .*/graph_optimization = "all"/' -e 's/^request_timeout_seconds = 60$/request_timeout_seconds = 1800/' \
  -e 's/^image_decode_timeout_seconds = .*/image_decode_timeout_seconds = 120/' "$root/etc/vigil/server.toml"

step "the daemon as its unit starts it, until ready"
camera_start "$repo" "$fixtures" "$root/tmp/camera.url"
root_daemon_start "$root" "$root/tmp/daemon.log"
wait_ready "$base" 1200 || {
  tail -n 30 "$root/tmp/daemon.log"
  exit 1
}
key=$(sed -n 's/^VIGIL_API_KEY=//p' "$root/etc/vigil/vigil.env")

step "smoke checks, compared with amd64"
(cd "$repo" && node --import tsx packaging/smoke.ts --base "$base" --key="$key" --fixtures "$fixtures/faces" \
  --camera "$(head -n 1 "$root/tmp/camera.url")" --event-timeout 900 --call-timeout 1800 --expect-version "$version" \
  --expect-commit "$commit" --out "$out/smoke-arm64.json" --compare "$out/smoke-amd64.json" --tolerance 1e-4)
step "done"

total=$(($(date +%s) - STEP_T0))
printf '{"deb":"%s","seconds":%d,"emulated":true,"steps":%s}\n' "$(basename "$deb")" "$total" "$(steps_json)" \
  >"$out/arm64-smoke.json"
echo "arm64-smoke: passed in ${total} s under emulation ($out/arm64-smoke.json)"
