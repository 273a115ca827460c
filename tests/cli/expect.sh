#!/usr/bin/env bash
# expect.sh RC [PATTERN ...] -- COMMAND [ARGS ...]
# Runs COMMAND, fails unless it exits with RC and its combined stdout+stderr matches every
# extended-regex PATTERN. Prints the output on failure.
set -u
want_rc=$1; shift
patterns=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do patterns+=("$1"); shift; done
shift
out=$("$@" 2>&1); rc=$?
ok=1
if [ "$rc" -ne "$want_rc" ]; then echo "exit code $rc, expected $want_rc"; ok=0; fi
for p in "${patterns[@]}"; do
  if ! grep -Eq -- "$p" <<<"$out"; then echo "output does not match: $p"; ok=0; fi
done
if [ $ok -eq 0 ]; then printf -- '--- output of: %s\n%s\n' "$*" "$out"; exit 1; fi
exit 0
