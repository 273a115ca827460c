#!/usr/bin/env bash
# scripts/sanitize.sh: the AddressSanitizer + UndefinedBehaviorSanitizer build of everything but
# the CUDA parts (build-asan/, -O1 -g) and its tests: the unit tests, the command-line and
# bad-input tests, the fuzz driver (fuzz/), the short runtime tests and one MPI parity layout per
# parallelism; the long ones are left out (list below). Extra arguments go to every ctest run
# (e.g. -R memory). Environment: TRAINSIM_ASAN_DIR (default build-asan). docs/hardening.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/setup.sh"
trainsim_install_packages

dir=${TRAINSIM_ASAN_DIR:-$root/build-asan}
if [ ! -f "$dir/build.ninja" ]; then
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
        -DTRAINSIM_SANITIZE=address,undefined -DTRAINSIM_CUDA=OFF >/dev/null ||
    { echo "error: cmake could not configure $dir" >&2; exit 1; }
fi
start=$SECONDS
cmake --build "$dir" -- -j"$(nproc)" >"$dir/last-build.log" 2>&1 ||
  { tail -n 40 "$dir/last-build.log" >&2; echo "error: the sanitizer build failed (full log: $dir/last-build.log)" >&2; exit 1; }
echo "sanitize: built $dir in $((SECONDS - start)) s"

# Any report fails the test that caused it, with a stack.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:check_initialization_order=1:strict_init_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# LeakSanitizer runs on the processes that never start MPI (unit tests, fuzz driver). Open MPI's
# MPI_Init leaves ~115 KB that its libraries never free, and they have no frame pointers, so the
# fast unwinder cannot tell whose it is: a suppression file (leak:libmpi.so ...) matches nothing,
# and the slow unwinder (fast_unwind_on_malloc=0) makes every test 3-4x slower. The processes
# that may start MPI (command line, runtime, bad inputs) run without it.
leaks_on="$ASAN_OPTIONS:detect_leaks=1"
leaks_off="$ASAN_OPTIONS:detect_leaks=0"

# Left out for time (ASan makes them 10-20x slower, and the Release suite runs them): the
# leave-one-group-out validation, the closed and checkpoint loops, the CPU calibration sweeps and
# the cross-validation CLI test; and all parity layouts but one per parallelism.
never='leave-one-group-out|runtime closed loop|runtime checkpoint loop|cli: calibrate cpu|--cross-validate refits'
parity='runtime parity: --(dp 2|tp 2 --sp|pp 2 --vpp 2|dp 2 --zero 3|cp 2|dp 2 --ep 2 --moe) matches one rank'
cd "$dir"
start=$SECONDS
status=0
ASAN_OPTIONS=$leaks_on ctest --output-on-failure -j"$(nproc)" -E "$never|^cli: |^runtime" -LE bad_input "$@" || status=1
ASAN_OPTIONS=$leaks_off ctest --output-on-failure -j"$(nproc)" -R "^(cli|runtime): |^$parity" -E "$never" "$@" || status=1
ASAN_OPTIONS=$leaks_off ctest --output-on-failure -j"$(nproc)" -L bad_input "$@" || status=1
echo "sanitize: tests ran in $((SECONDS - start)) s"
exit $status
