#!/usr/bin/env bash
# forbidden_include.sh ROOT: the layout check must refuse what the table forbids. On a scratch tree
# with ROOT's docs/architecture.md: allowed includes pass; a plan/ file including sim/, and a
# runtime/cpu/ file including runtime/cuda/, each fail with the file and line named.
set -euo pipefail
root=$1
check=$root/tests/layout/check_includes.sh
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/docs" "$scratch/plan" "$scratch/sim" "$scratch/runtime/cpu" "$scratch/runtime/cuda"
cp "$root/docs/architecture.md" "$scratch/docs/"
printf '#include "model/model_spec.hpp"\n#include "plan/lowering.hpp"\n' >"$scratch/plan/lowering.cpp"
printf '#include "plan/lowering.hpp"\n' >"$scratch/sim/simulator.cpp"
printf '#include "runtime/stage_layout.hpp"\n' >"$scratch/runtime/cpu/trainer.cpp"
"$check" "$scratch" >/dev/null || { echo "FAIL: allowed includes were refused" >&2; exit 1; }

fails() {  # fails FILE TEXT: the check exits 1 naming FILE:2
  mkdir -p "$scratch/$(dirname "$1")"
  printf '// a file\n%s\n' "$2" >"$scratch/$1"
  set +e
  out=$("$check" "$scratch" 2>&1)
  rc=$?
  set -e
  rm "$scratch/$1"
  [ "$rc" = 1 ] || { echo "FAIL: $1 with '$2' gave exit $rc, not 1: $out" >&2; exit 1; }
  grep -q "^$1:2: includes" <<<"$out" || { echo "FAIL: the message does not name $1:2: $out" >&2; exit 1; }
}
fails plan/bad.hpp '#include "sim/simulator.hpp"'
fails runtime/cpu/bad.cpp '#include "runtime/cuda/cuda_trainer.hpp"'
fails runtime/cuda/bad.cpp '#  include "runtime/cpu/cpu_model.hpp"'
fails runtime/bad.hpp '#include "sim/simulator.hpp"'
echo "layout check: refuses plan -> sim, runtime/cpu <-> runtime/cuda and runtime -> sim"
