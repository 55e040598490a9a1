#!/bin/sh
# run-unit.sh [--print] [UNIT]: starts a unit's ExecStart the way systemd would, for the package tests' Debian
# roots that have no systemd: as its User=, in its WorkingDirectory=, with its UMask=, its Environment= lines
# and its EnvironmentFile= (read here as root, as systemd reads it), and nothing else from this environment.
# Runs in the foreground (exec): the caller backgrounds it. Default unit: the package's vigil.service.
# --print: prints what it would run instead (NUL-separated: user, directory, environment, --, command).
#
# Values are split and unquoted with systemd's rules (systemd.exec(5), systemd.syntax(7)), so a password
# with spaces or quotes in vigil.env reaches the daemon as systemd would pass it. Not supported (refused):
# specifiers other than %% and $VARIABLE expansion in ExecStart=; the unit here needs neither.
set -eu
print=0
if [ "${1:-}" = --print ]; then
  print=1
  shift
fi
unit=${1:-/lib/systemd/system/vigil.service}

# The parsers print each word as a single-quoted shell word, for eval. Plain POSIX awk (mawk in a minbase root).
# shellcheck disable=SC2016
AWK_QUOTE='function q(s) { gsub(/\047/, "\047\\\047\047", s); return "\047" s "\047" }'

# words KEY: every word of the [Service] section's KEY= lines, in order, split on whitespace outside quotes
# ("…" and '…' quote, a backslash escapes the next character with C escapes \n \t \r; a trailing backslash
# continues the line); KEY= with no value resets the list, as in systemd.
words() {
  awk -v want="$1" "$AWK_QUOTE"'
    function unesc(c) { return c == "n" ? "\n" : c == "t" ? "\t" : c == "r" ? "\r" : c }
    function split_words(v,   i, c, w, have, quote, n) {
      n = 0; w = ""; have = 0; quote = ""
      for (i = 1; i <= length(v); i++) {
        c = substr(v, i, 1)
        if (c == "\\" && i < length(v)) { w = w unesc(substr(v, ++i, 1)); have = 1; continue }
        if (quote != "") { if (c == quote) quote = ""; else w = w c; continue }
        if (c == "\"" || c == "\047") { quote = c; have = 1; continue }
        if (c == " " || c == "\t") { if (have) out[++nout] = w; w = ""; have = 0; continue }
        w = w c; have = 1
      }
      if (quote != "") { print "run-unit: unterminated quote in " want "=" v > "/dev/stderr"; exit 2 }
      if (have) out[++nout] = w
    }
    { sub(/\r$/, "") }
    cont != "" { $0 = cont $0; cont = "" }
    /\\$/ { cont = substr($0, 1, length($0) - 1) " "; next }
    /^[ \t]*\[/ { section = $0; gsub(/[ \t]/, "", section); next }
    /^[ \t]*[#;]/ { next }
    section == "[Service]" {
      line = $0; sub(/^[ \t]+/, "", line)
      eq = index(line, "=")
      if (eq == 0) next
      k = substr(line, 1, eq - 1); sub(/[ \t]+$/, "", k)
      if (k != want) next
      v = substr(line, eq + 1); sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v)
      if (v == "") { nout = 0; next }
      split_words(v)
    }
    END {
      for (i = 1; i <= nout; i++) {
        w = out[i]
        if (w ~ /%[^%]/ || w ~ /%$/) { print "run-unit: specifiers are not supported: " w > "/dev/stderr"; exit 2 }
        gsub(/%%/, "%", w)
        if (want == "ExecStart" && w ~ /\$/) { print "run-unit: $VARIABLE in ExecStart= is not supported" > "/dev/stderr"; exit 2 }
        printf "%s ", q(w)
      }
    }
  ' "$unit"
}

# envfile FILE: its assignments as systemd reads an EnvironmentFile= (systemd.exec(5)): lines KEY=VALUE,
# blank lines and lines starting with # or ; ignored, whitespace around the key and the value dropped; an
# unquoted value keeps inner whitespace, a backslash keeps the next character and a trailing one continues
# the line; '…' is verbatim; "…" takes \" \\ \` \$ and a backslash-newline, other escapes stay as written;
# quoted values may span lines. Names that are not valid variable names are skipped.
envfile() {
  awk "$AWK_QUOTE"'
    { text = text $0 "\n" }
    function put() {
      sub(/[ \t\r\n]+$/, "", key)
      if (key ~ /^[A-Za-z_][A-Za-z0-9_]*$/) printf "%s ", q(key "=" value)
      else print "run-unit: skipping an invalid name in " FILENAME ": " key > "/dev/stderr"
      key = ""; value = ""
    }
    END {
      state = "pre_key"; key = ""; value = ""; trail = 0
      for (i = 1; i <= length(text); i++) {
        c = substr(text, i, 1)
        nl = (c == "\n" || c == "\r"); ws = (c == " " || c == "\t" || nl)
        if (state == "pre_key") {
          if (c == "#" || c == ";") state = "comment"
          else if (!ws) { state = "key"; key = c; value = "" }
        } else if (state == "key") {
          if (nl) { state = "pre_key"; key = "" }
          else if (c == "=") { state = "pre_value"; trail = 0 }
          else key = key c
        } else if (state == "pre_value") {
          if (nl) { state = "pre_key"; put() }
          else if (c == "\047") state = "single"
          else if (c == "\"") state = "double"
          else if (c == "\\") state = "value_escape"
          else if (!ws) { state = "value"; value = value c; trail = 0 }
        } else if (state == "value") {
          if (nl) { state = "pre_key"; value = substr(value, 1, length(value) - trail); put() }
          else if (c == "\\") state = "value_escape"
          else { value = value c; trail = ws ? trail + 1 : 0 }
        } else if (state == "value_escape") {
          state = "value"; trail = 0
          if (!nl) value = value c
        } else if (state == "single") {
          if (c == "\047") state = "pre_value"; else value = value c
        } else if (state == "double") {
          if (c == "\"") state = "pre_value"
          else if (c == "\\") state = "double_escape"
          else value = value c
        } else if (state == "double_escape") {
          state = "double"
          if (c == "\"" || c == "\\" || c == "`" || c == "$") value = value c
          else if (c != "\n") value = value "\\" c
        } else if (state == "comment") {
          if (c == "\\") state = "comment_escape"
          else if (nl) state = "pre_key"
        } else if (state == "comment_escape") state = "comment"
      }
      if (state == "value") value = substr(value, 1, length(value) - trail)
      if (state != "pre_key" && state != "key" && state != "comment" && state != "comment_escape") put()
    }
  ' "$1"
}

# One value of a single-valued key (User=, WorkingDirectory=, UMask=): the last one set.
one() {
  eval "set -- $(words "$1")"
  [ $# -gt 0 ] || return 0
  eval "printf '%s' \"\${$#}\""
}
# q VALUE: VALUE as a single-quoted shell word.
q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
user=$(one User)
dir=$(one WorkingDirectory)
umask_value=$(one UMask)
# The environment as quoted words: systemd's own variables, Environment=, then each EnvironmentFile= in order
# (later assignments win: env -i keeps the last of a name); a leading - lets the file be missing.
environment="$(q PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin) $(q "HOME=$dir") $(q "USER=$user") $(q "LOGNAME=$user") $(words Environment)"
eval "set -- $(words EnvironmentFile)"
for file in "$@"; do
  case $file in
    -*) file=${file#-} optional=1 ;;
    *) optional=0 ;;
  esac
  if [ -r "$file" ]; then
    environment="$environment $(envfile "$file")"
  elif [ "$optional" = 0 ]; then
    echo "run-unit: EnvironmentFile=$file cannot be read" >&2
    exit 1
  fi
done
command=$(words ExecStart)
if [ "$print" = 1 ]; then
  eval "set -- $environment"
  printf '%s\0' "$user" "$dir" "$@" --
  eval "set -- $command"
  printf '%s\0' "$@"
  exit 0
fi
[ -z "$umask_value" ] || umask "$umask_value"
cd "$dir"
eval "set -- $environment $command"
exec runuser -u "$user" -- env -i "$@"
