#!/usr/bin/env bash
# Starts the daemon from the checkout with config/dev.toml. Generates an API key once (var/api-key).
set -euo pipefail
mkdir -p var
if [ -z "${VIGIL_API_KEY:-}" ]; then
  [ -s var/api-key ] || node -e 'process.stdout.write(require("crypto").randomBytes(24).toString("base64url"))' > var/api-key
  VIGIL_API_KEY=$(cat var/api-key)
  export VIGIL_API_KEY
  echo "API key (var/api-key): $VIGIL_API_KEY" >&2
fi
# HOST=0.0.0.0 (make run HOST=0.0.0.0) listens on the LAN; PORT=… another port.
if [ -n "${HOST:-}" ]; then export VIGIL_HOST=$HOST; fi
if [ -n "${PORT:-}" ]; then export VIGIL_PORT=$PORT; fi
# Each RTSP monitor parks one GStreamer pull in libuv's pool, which inference shares (docs/operations/systemd.md).
export UV_THREADPOOL_SIZE=${UV_THREADPOOL_SIZE:-16}
# jemalloc instead of glibc's malloc when it is installed, as in the systemd unit (src/system/allocator.ts).
for dir in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib; do
  if [ -e "$dir/libjemalloc.so.2" ]; then export LD_PRELOAD="libjemalloc.so.2${LD_PRELOAD:+:$LD_PRELOAD}"; break; fi
done
# V8 flags: src/system/nodeFlags.ts (DAEMON_NODE_FLAGS) says why; keep them equal.
exec node --initial-old-space-size=128 dist/cli/main.js serve --config "${VIGIL_CONFIG:-config/dev.toml}"
