#!/usr/bin/env bash
# no_cuda_startup.sh TRAINSIM: the trainsim executable needs no CUDA library (docs/cuda-runtime.md,
# "The CUDA module"): none is NEEDED by it or by anything it loads, and `catalog` runs with the CUDA
# libraries out of reach. Out of reach: in a mount namespace where each folder holding them is an
# empty folder (as root with unshare), else through the loader with LD_LIBRARY_PATH empty and
# ld.so.cache ignored (only the RUNPATH and the system folders are searched). There, with the CUDA
# module built beside TRAINSIM, `run --backend cuda` must exit 2 naming the missing library.
# Where neither can hide them (a CUDA library in a system folder), the NEEDED checks stand alone.
set -u
export PATH=$PATH:/sbin:/usr/sbin  # ldconfig
bin=$(realpath "$1")
cuda_libs='lib(cuda|cudart|cublas|cublasLt|nccl|nvidia-ml|nvrtc)\.so'
fail() { echo "FAIL: $*"; exit 1; }

needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || fail "readelf found no NEEDED entries in $bin"
if grep -Eq "$cuda_libs" <<<"$needed"; then fail "$bin NEEDs a CUDA library: $(grep -E "$cuda_libs" <<<"$needed" | tr '\n' ' ')"; fi
loaded=$(env -u LD_LIBRARY_PATH ldd "$bin") || fail "ldd $bin failed: $loaded"
if grep -Eq "$cuda_libs" <<<"$loaded"; then fail "a library $bin loads needs CUDA: $(grep -E "$cuda_libs" <<<"$loaded")"; fi

# The folders the CUDA libraries are in (ld.so.cache, the CUDA toolkit, the module's RUNPATH).
module=$(dirname "$bin")/libtrainsim_cuda.so
mapfile -t cuda_dirs < <({ ldconfig -p | grep -E "$cuda_libs" | sed 's/.*=> //'; ls /usr/local/cuda*/lib*/libcudart.so* 2>/dev/null; } |
                         xargs -r -n1 dirname | xargs -r -n1 realpath | sort -u)
system_dirs='^(/lib|/usr/lib|/lib64|/usr/lib64)(/x86_64-linux-gnu)?$'
if printf '%s\n' "${cuda_dirs[@]}" | grep -Eq "$system_dirs"; then
  echo "note: a system folder holds CUDA libraries, so they cannot be hidden here; the NEEDED checks above passed"
  exit 0
fi

check_without_cuda() {  # runs in the environment that hides CUDA
  local out rc
  out=$(cd / && env -u LD_LIBRARY_PATH "$@" "$bin" catalog 2>&1) || fail "catalog without CUDA libraries: $out"
  grep -q "llama3-405b" <<<"$out" || fail "catalog printed no model list: $out"
  [ -f "$module" ] || return 0
  out=$(cd / && env -u LD_LIBRARY_PATH -u TRAINSIM_CUDA_MODULE "$@" "$bin" run --backend cuda --model gpt-tiny --precision bf16 --steps 1 --out /nonexistent/m.json 2>&1); rc=$?
  [ "$rc" -eq 2 ] || fail "run --backend cuda without CUDA libraries exited $rc, expected 2: $out"
  grep -Eq "cannot load the CUDA module .*$cuda_libs.*: cannot open" <<<"$out" || fail "run --backend cuda does not name the missing library: $out"
  grep -q "hint: it needs the CUDA 13 runtime" <<<"$out" || fail "run --backend cuda gives no hint: $out"
}

if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
  empty=$(mktemp -d)
  trap 'rmdir "$empty"' EXIT
  export -f check_without_cuda fail
  export bin module cuda_libs
  masks=""
  for d in "${cuda_dirs[@]}"; do masks+="mount --bind $empty $d && "; done
  unshare -m bash -c "${masks}check_without_cuda" || exit 1
  echo "ok: no CUDA library needed; catalog ran with the CUDA folders emptied (${cuda_dirs[*]})"
  exit 0
fi
interp=$(readelf -l "$bin" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')
runpath=$(readelf -d "$bin" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
IFS=: read -r -a dirs <<<"$runpath"
for d in "${dirs[@]}"; do
  compgen -G "$d/libcudart.so*" >/dev/null && { echo "note: $d (RUNPATH) holds CUDA libraries; the NEEDED checks above passed"; exit 0; }
done
module=""  # the module's own RUNPATH would still find them this way
check_without_cuda "$interp" --inhibit-cache
echo "ok: no CUDA library needed; catalog ran with ld.so.cache and LD_LIBRARY_PATH out of the way"
