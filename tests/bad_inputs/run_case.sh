#!/usr/bin/env bash
# Runs one bad-input case (tests/bad_inputs/README.md): writes its input file, runs trainsim with
# the case's arguments, and passes when trainsim exits 2 with every expected message, prints
# "error:" and "hint:", and shows no sign of a crash (a bug report line or a sanitizer report).
# Usage: run_case.sh TRAINSIM CASE_FILE DATA_DIR CONFIGS_DIR
set -u
trainsim=$1 case_file=$2 data=$3 configs=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

input_name=$(sed -n 's/^input: *//p' "$case_file" | head -n 1)
run_line=$(sed -n 's/^run: *//p' "$case_file" | head -n 1)
[ -n "$run_line" ] || { echo "case $case_file has no run: line"; exit 1; }
mapfile -t expects < <(sed -n 's/^expect: *//p' "$case_file")
[ "${#expects[@]}" -gt 0 ] || { echo "case $case_file has no expect: line"; exit 1; }
mapfile -t rejects < <(sed -n 's/^reject: *//p' "$case_file")
if [ -n "$input_name" ]; then
  mkdir -p "$work/$(dirname "$input_name")"
  # Everything after the first line that is exactly "---" is the input, byte for byte.
  awk 'found { print } /^---$/ && !found { found = 1 }' "$case_file" > "$work/$input_name"
fi
run_line=${run_line//\{input\}/$work/$input_name}
run_line=${run_line//\{dir\}/$work}
run_line=${run_line//\{data\}/$data}
run_line=${run_line//\{configs\}/$configs}
read -r -a args <<< "$run_line"

(cd "$work" && "$trainsim" "${args[@]}") > "$work/.out" 2>&1 < /dev/null
rc=$?
status=0
if [ "$rc" -ne 2 ]; then echo "FAIL: exit code $rc, expected 2"; status=1; fi
for pattern in "${expects[@]}"; do
  grep -Eq -- "$pattern" "$work/.out" || { echo "FAIL: no line matches: $pattern"; status=1; }
done
for pattern in "${rejects[@]}"; do
  if grep -Eq -- "$pattern" "$work/.out"; then echo "FAIL: a line matches what must not be printed: $pattern"; status=1; fi
done
grep -q '^error: ' "$work/.out" || { echo "FAIL: no 'error: ' line"; status=1; }
grep -q '^hint: ' "$work/.out" || { echo "FAIL: no 'hint: ' line"; status=1; }
if grep -Eq 'this is a bug|AddressSanitizer|runtime error:|LeakSanitizer|terminate called' "$work/.out"; then
  echo "FAIL: a crash or an internal error"; status=1
fi
echo "--- trainsim ${args[*]}"
cat "$work/.out"
exit $status
