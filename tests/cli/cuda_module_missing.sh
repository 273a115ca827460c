#!/usr/bin/env bash
# cuda_module_missing.sh TRAINSIM EXPECTED_REGEX: a copy of the trainsim executable alone in an
# empty folder (no libtrainsim_cuda.so beside it, none in ../lib/trainsim) refuses `run --backend
# cuda` and `calibrate gpu` with exit 2 and a message matching EXPECTED_REGEX, and still runs `catalog`.
set -u
bin=$1
expected=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cp "$bin" "$work/bin/trainsim"
fail() { echo "FAIL: $*"; exit 1; }
check() {  # check RC REGEX ARGS...
  local want=$1 regex=$2; shift 2
  local out rc
  out=$(env -u TRAINSIM_CUDA_MODULE "$work/bin/trainsim" "$@" 2>&1); rc=$?
  [ "$rc" -eq "$want" ] || fail "trainsim $* exited $rc, expected $want: $out"
  grep -Eq -- "$regex" <<<"$out" || fail "trainsim $* does not say /$regex/: $out"
}
check 2 "$expected" run --backend cuda --model gpt-tiny --precision bf16 --steps 1 --out "$work/m.json"
check 2 "$expected" calibrate gpu --quick --out "$work/p.json"
check 0 "llama3-405b" catalog
echo "ok"
