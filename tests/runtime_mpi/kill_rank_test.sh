#!/usr/bin/env bash
# A rank lost mid-run: a 3-rank run is let do a few steps, then rank 1 is
#   kill: SIGKILLed. The job must exit non-zero, naming rank 1, within the bound (mpirun notices
#         the death and takes the other ranks down);
#   stop: SIGSTOPped (alive but silent). With --collective-timeout 5 the other ranks' watchdogs must
#         stop the job, non-zero, within the bound, naming rank 1 as not responding.
# The bound (120 s) is for a busy 2-core machine; the seconds taken are printed, not judged.
# Usage: kill_rank_test.sh TRAINSIM kill|stop
set -u
trainsim=$1
mode=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
bound_s=120
work=$(mktemp -d)
mpirun_pid=""
ranks=()
# Only what this script started: mpirun and its rank processes (woken first if stopped).
cleanup() {
  for pid in "${ranks[@]}"; do kill -CONT "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null; done
  [ -n "$mpirun_pid" ] && kill -KILL "$mpirun_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; cat "$work/out.txt"; exit 1; }

extra=()
[ "$mode" = stop ] && extra=(--collective-timeout 5)
mpirun --allow-run-as-root --oversubscribe -np 3 "$trainsim" run --model gpt-tiny --dp 3 --micro-batch 1 --global-batch 6 \
  --precision fp32 --attention unfused --steps 1000000 "${extra[@]}" --out "$work/x.json" >"$work/out.txt" 2>&1 &
mpirun_pid=$!

# A few steps done (rank 0 prints one line per step)?
for _ in $(seq 1 "$((bound_s * 10))"); do
  grep -q '^step 3/' "$work/out.txt" && break
  kill -0 "$mpirun_pid" 2>/dev/null || fail "the run ended before its third step"
  sleep 0.1
done
grep -q '^step 3/' "$work/out.txt" || fail "no third step within $bound_s s"

# The rank processes are mpirun's children; each has its rank in OMPI_COMM_WORLD_RANK.
victim=""
for pid in $(pgrep -P "$mpirun_pid"); do
  rank=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
  [ -n "$rank" ] || continue
  ranks+=("$pid")
  [ "$rank" = 1 ] && victim=$pid
done
[ -n "$victim" ] || fail "rank 1's process was not found among mpirun's children"

signal=KILL
[ "$mode" = stop ] && signal=STOP
start_ns=$(date +%s%N)
kill -"$signal" "$victim"
for _ in $(seq 1 "$((bound_s * 10))"); do
  kill -0 "$mpirun_pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$mpirun_pid" 2>/dev/null && fail "the job still runs $bound_s s after rank 1 got SIG$signal"
wait "$mpirun_pid"
rc=$?
mpirun_pid=""
seconds=$(awk -v ns="$(( $(date +%s%N) - start_ns ))" 'BEGIN { printf "%.1f", ns / 1e9 }')
echo "SIG$signal to rank 1: the job exited $rc after $seconds s"
[ "$rc" != 0 ] || fail "the job exited 0"
if [ "$mode" = kill ]; then
  pattern='process rank 1 with PID [0-9]+ on node .* exited on signal 9'
else
  pattern='rank [02]: no progress for [0-9.]+ s in .* \(--collective-timeout 5 s\); rank\(s\) not responding: 1 \(silent for'
fi
grep -E "$pattern" "$work/out.txt" || fail "no message naming rank 1 ('$pattern')"
exit 0
