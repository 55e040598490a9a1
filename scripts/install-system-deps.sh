#!/usr/bin/env bash
# Debian packages Vigil needs. Node.js 20+ comes from Debian's nodejs package when the machine has none
# (Debian 13 ships 20.x; on Debian 12 install Node 20 from your usual source first).
set -euo pipefail
need=(ca-certificates)
# RTSP monitors: GStreamer with RTSP and H.264 decoding, the headers gstreamer-superficial (a native addon
# built by npm ci) compiles against, and the GStreamer RTSP server the tests stream from (Debian's python3-gi).
need+=(pkg-config build-essential libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
  gir1.2-gst-rtsp-server-1.0 python3-gi)
# The daemon's memory allocator (preloaded by the systemd unit and scripts/run-dev.sh; src/system/allocator.ts
# says why): glibc's malloc keeps what ~60 threads free, ~130 MB more resident memory with four cameras.
need+=(libjemalloc2)
# The web UI's end-to-end tests and the kiosk bench drive Debian's Chromium headless (playwright-core, no
# browser download); `make test`, `make bench` and CI ask for it, an appliance (`make run`) does not.
if [ "${VIGIL_TEST_DEPS:-0}" = 1 ] || [ "${VIGIL_BENCH_DEPS:-0}" = 1 ]; then
  need+=(chromium)
  # The MQTT tests and bench/events.ts publish to a real broker (Debian's mosquitto, started by the test helpers);
  # the doc-tests run the Home Assistant guide's mosquitto_sub and the pages' curl (test/docs/doctest.test.ts).
  need+=(mosquitto mosquitto-clients curl)
  # Fleet mode's tests run two daemons against a throw-away PostgreSQL cluster (Debian's postgresql:
  # initdb/pg_ctl from /usr/lib/postgresql/<major>/bin, started by test/helpers/postgres.ts).
  need+=(postgresql)
fi
# The metrics test checks GET /metrics with Prometheus' own `promtool check metrics` (Debian's prometheus).
if [ "${VIGIL_TEST_DEPS:-0}" = 1 ]; then
  need+=(prometheus)
fi
if ! command -v node >/dev/null || [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  need+=(nodejs npm)
fi
# The Debian packages (make package, package-test, package-arm64-smoke; packaging/): debootstrap for the
# test roots, qemu-user-static to run the arm64 root, dpkg-dev for dpkg-shlibdeps, the aarch64 cross compiler
# for the quick GCC 12 checks of the native addons (test/unit/hnsw-walk-probe.test.ts), curl for the waits.
if [ "${VIGIL_PACKAGE_DEPS:-0}" = 1 ]; then
  need+=(debootstrap qemu-user-static binfmt-support dpkg-dev binutils g++-aarch64-linux-gnu curl openssl)
fi
# Benchmarks compare our search with FAISS (Debian's python3-faiss); only `make bench` asks for it.
if [ "${VIGIL_BENCH_DEPS:-0}" = 1 ]; then
  need+=(python3 python3-numpy python3-faiss)
fi
missing=()
for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=$([ "$(id -u)" -eq 0 ] && echo "" || echo sudo)
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
node -e 'if (+process.versions.node.split(".")[0] < 20) { console.error("Node.js 20+ is required, found " + process.version); process.exit(1) }'
