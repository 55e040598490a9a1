#!/usr/bin/env bash
# Rebuilds vendor/gstreamer-superficial-<version>.tgz: the npm release of gstreamer-superficial with
# vendor/gstreamer-superficial.patch applied (see vendor/README.md for why). Needs only the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."
UPSTREAM=1.7.4
VERSION=$UPSTREAM-vigil.5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "gstreamer-superficial@$UPSTREAM" >/dev/null && tar xzf "gstreamer-superficial-$UPSTREAM.tgz")
# The examples carry a 1 MB sample video that the addon does not need.
rm -rf "$work/package/examples"
patch -d "$work/package" -p1 --no-backup-if-mismatch < vendor/gstreamer-superficial.patch
node -e '
  const fs = require("fs"), f = process.argv[1], p = JSON.parse(fs.readFileSync(f, "utf8"));
  p.version = process.argv[2];
  p.description += " (Vigil build: releases pipelines and element references, pulls samples without copying them; see vendor/README.md in Vigil)";
  fs.writeFileSync(f, JSON.stringify(p, null, 2) + "\n");
' "$work/package/package.json" "$VERSION"
(cd "$work/package" && npm pack --silent --pack-destination "$OLDPWD/vendor" >/dev/null)
echo "vendor/gstreamer-superficial-$VERSION.tgz"
