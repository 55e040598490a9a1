#!/bin/sh
# run-unit.sh [UNIT]: starts a unit's ExecStart the way systemd would, for the package tests' Debian roots
# that have no systemd: as its User=, in its WorkingDirectory=, with its UMask=, its Environment= lines and
# its EnvironmentFile= (read here as root, as systemd reads it), and nothing else from this environment.
# Runs in the foreground (exec): the caller backgrounds it. Default unit: the package's vigil.service.
set -eu
unit=${1:-/lib/systemd/system/vigil.service}
value() { sed -n "s/^$1=//p" "$unit"; }
user=$(value User)
dir=$(value WorkingDirectory)
umask "$(value UMask)"
set -- PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "HOME=$dir" "USER=$user" "LOGNAME=$user"
for kv in $(value Environment); do set -- "$@" "$kv"; done
for file in $(value EnvironmentFile); do
  file=${file#-}
  [ -r "$file" ] || continue
  # KEY=VALUE lines; comments and blank lines skipped (our files hold no quoting).
  for kv in $(grep -E '^[A-Za-z_][A-Za-z0-9_]*=' "$file"); do set -- "$@" "$kv"; done
done
cd "$dir"
# shellcheck disable=SC2046
exec runuser -u "$user" -- env -i "$@" $(value ExecStart)
