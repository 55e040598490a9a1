#!/bin/sh
# /usr/bin/vigil of the Debian package: the CLI on the Node.js runtime the package ships.
#
# As root, the commands that write into the data directory (/var/lib/vigil: models, the database, keys)
# run as the service user `vigil`, so that what they create stays readable and writable by the daemon:
# `sudo vigil models install edge_s --accept-license` installs models the service can load. Paths passed
# to them (a mirror folder, a backup archive) must be reachable by that user; VIGIL_RUN_AS_ROOT=1 keeps root.
node=/usr/lib/vigil/node/bin/node
main=/usr/lib/vigil/app/dist/cli/main.js
case "${1:-}" in
  serve | models | addons | backup | restore | kiosk | workspaces | keys | store | doctor)
    if [ "$(id -u)" = 0 ] && [ "${VIGIL_RUN_AS_ROOT:-0}" != 1 ] && getent passwd vigil >/dev/null 2>&1; then
      exec runuser -u vigil -- "$node" "$main" "$@"
    fi
    ;;
esac
exec "$node" "$main" "$@"
