#!/usr/bin/env bash
# A damaged checkpoint set: a 2-rank run saves after every step; a bit of rank 1's newest file is
# flipped, then rank 0's is cut short. Plain --resume must refuse each (exit 2) naming the file and
# what failed (the checksums; the bytes), with a hint naming --resume-from-last-good; that option
# must resume from the set before, say so, and give an uninterrupted run's losses step by step.
# Usage: corrupt_checkpoint_test.sh TRAINSIM
set -u
trainsim=$1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpirun=(mpirun --allow-run-as-root --oversubscribe -np 2)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--model gpt-tiny --dp 2 --micro-batch 2 --global-batch 8 --precision fp32 --attention unfused --seed 7)
fail() { echo "FAIL: $*"; exit 1; }

"${mpirun[@]}" "$trainsim" run "${common[@]}" --steps 8 --out "$work/full.json" >/dev/null 2>&1 || fail "uninterrupted run failed"
"${mpirun[@]}" "$trainsim" run "${common[@]}" --steps 6 --checkpoint-every 1 --checkpoint-dir "$work/ck" --out "$work/first.json" \
  >/dev/null 2>&1 || fail "the run that saves failed"
[ "$(cat "$work/ck/latest")" = 5 ] || fail "latest is $(cat "$work/ck/latest"), not 5"
[ -f "$work/ck/rank0.it4.ckpt" ] && [ -f "$work/ck/rank1.it4.ckpt" ] || fail "the set before the latest (iteration 4) was not kept"
[ -f "$work/ck/rank0.it3.ckpt" ] && fail "the set of iteration 3 is still there (two sets are kept)"

# Expects `trainsim run ... --resume` to exit 2 with every pattern in its output.
refused() {
  "${mpirun[@]}" "$trainsim" run "${common[@]}" --steps 8 --checkpoint-dir "$work/ck" --resume --out "$work/x.json" >"$work/out.txt" 2>&1
  local rc=$?
  [ "$rc" = 2 ] || { cat "$work/out.txt"; fail "--resume of a damaged set exited $rc, not 2"; }
  for pattern in "$@"; do
    grep -Eq -- "$pattern" "$work/out.txt" || { cat "$work/out.txt"; fail "no '$pattern' in the refusal"; }
  done
  grep -m1 '^error:' "$work/out.txt"
}

flip_byte_at=$(( $(stat -c %s "$work/ck/rank1.it5.ckpt") / 2 ))
byte=$(od -An -tu1 -j "$flip_byte_at" -N1 "$work/ck/rank1.it5.ckpt" | tr -d ' ')
printf "\\$(printf '%03o' $(( byte ^ 16 )))" | dd of="$work/ck/rank1.it5.ckpt" bs=1 seek="$flip_byte_at" conv=notrunc 2>/dev/null
refused "rank 1: .*/rank1\.it5\.ckpt: corrupt checkpoint: checksum mismatch: stored 0x[0-9a-f]{16}, computed 0x[0-9a-f]{16}" \
  "file size [0-9]+ bytes" "hint: --resume-from-last-good"

truncate -s 1000 "$work/ck/rank0.it5.ckpt"
refused "rank 0: .*/rank0\.it5\.ckpt: corrupt checkpoint: truncated: the file has 1000 bytes, its header and tensor sizes call for" \
  "hint: --resume-from-last-good"

"${mpirun[@]}" "$trainsim" run "${common[@]}" --steps 8 --checkpoint-dir "$work/ck" --resume-from-last-good --out "$work/resumed.json" \
  >"$work/out.txt" 2>&1 || { cat "$work/out.txt"; fail "--resume-from-last-good failed"; }
grep -E "refused the set of iteration 5 \(rank 0: .*rank0\.it5\.ckpt: corrupt checkpoint: truncated" "$work/out.txt" &&
  grep -q "resuming from the set of iteration 4" "$work/out.txt" || { cat "$work/out.txt"; fail "the fallback was not reported"; }

losses() { awk '/"iteration":/ {gsub(/[^0-9]/, "", $2); it=$2} /"loss":/ {gsub(/,/, "", $2); print it, $2}' "$1"; }
status=0
first=$(losses "$work/resumed.json" | head -1 | cut -d' ' -f1)
[ "$first" = 5 ] || { echo "FAIL: resumed at iteration $first, not 5"; status=1; }
while read -r it loss; do
  full=$(losses "$work/full.json" | awk -v i="$it" '$1 == i {print $2}')
  ok=$(awk -v a="$loss" -v b="$full" 'BEGIN { d = a - b; if (d < 0) d = -d; print (b != "" && d <= 1e-6 * (b < 0 ? -b : b)) ? 1 : 0 }')
  echo "step $it: resumed $loss, uninterrupted $full"
  [ "$ok" = 1 ] || status=1
done < <(losses "$work/resumed.json")
exit $status
