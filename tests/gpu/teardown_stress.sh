#!/usr/bin/env bash
# Teardown after a bounded capture: the app keeps running after the
# collector let go of CUPTI and must never crash, hang or change its output.
# Default: what ships — activity kinds and API/NVTX callbacks off, the CUPTI
# subscriber removed (Quiesce). TEARDOWN_MODE=1: SIGHTLINE_DETACH=1, i.e.
# cuptiFinalize as well (opt-in because of CUDA 13.0 crashes, see
# MaybeTearDown; case D crashed it in 4 of 5 and 1 of 2 runs on the H200).
# Repeats each case TEARDOWN_RUNS times (default 8):
#   A. --duration 0.4 on a launch + sync loop (fragmented_kernels, slow,
#      12000 steps: ~0.5 s of launches on the H100 after CUDA's start-up)
#   B. cudaProfilerApi capture of the first repetition of a launch loop
#   D. --duration 1 on a longer launch + sync loop (40000 steps, ~1.7 s on
#      the H100: the loop outlasts the window; 20000 steps ended inside it on
#      a machine whose CUDA start-up was quick, 2026-12-07; the case
#      that crashed 8 of 9 finalize runs before detaching moved to an
#      outermost API exit), TEARDOWN_LONG_RUNS times (default 4)
#   C. --duration 0.3 on a PyTorch loop with NVTX ranges (NVTX calls keep
#      entering libcupti after the teardown), when torch is present
source "$(dirname "$0")/lib.sh"
said='CUPTI subscriber removed'
if [ "${TEARDOWN_MODE:-}" = 1 ]; then
  export SIGHTLINE_DETACH=1
  said='CUPTI detached'
else
  unset SIGHTLINE_DETACH
fi
echo "SIGHTLINE_DETACH=${SIGHTLINE_DETACH:-(default)}"
N=${TEARDOWN_RUNS:-8}
LO=$B/bench/overhead/launch_overhead
crashes=0; runs=0
one() {  # NAME CMD...: rc 0, "$said" printed, trace complete
  local name=$1; shift
  runs=$((runs + 1))
  timeout 120 "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
  local rc=$?
  if [ $rc -ne 0 ]; then
    crashes=$((crashes + 1)); fail=1
    echo "FAIL: $name exited $rc"; tail -5 "$WORK/$name.err"
  fi
  grep -q "$said" "$WORK/$name.err" || { echo "FAIL: $name did not detach ($said)"; tail -3 "$WORK/$name.err"; fail=1; }
}
duration_case() {  # NAME DURATION STEPS EXPECTED_X0: --duration on the launch + sync loop
  one "$1" "$SL" profile -o "$WORK/$1.sltrace" --duration "$2" -- "$EX/fragmented_kernels" --variant slow --steps="$3"
  local got
  got=$(grep -o 'x\[0\]=[^,]*' "$WORK/$1.out")
  [ "$got" = "$4" ] || { echo "FAIL: $1 output $got != $4"; fail=1; }
  if [ -e "$WORK/$1.sltrace" ]; then
    expect_ok "$CHECK" "$WORK/$1.sltrace" --windows 1 --allow-loss >/dev/null
  elif grep -q "recorded no GPU work and no CUDA call; no trace kept" "$WORK/$1.err"; then
    # The window closed before the program's first CUDA call (CUDA's
    # start-up outlasted it): no trace is kept, by design, and said so.
    echo "note: $1: the window closed before the first CUDA call; no trace kept (said)"
  else
    echo "FAIL: $1 wrote no trace and did not say why"; fail=1
  fi
  rm -f "$WORK/$1.sltrace"
}
ref=$("$EX/fragmented_kernels" --variant slow --steps=12000 | grep -o 'x\[0\]=[^,]*')
for i in $(seq 1 "$N"); do
  duration_case "A$i" 0.4 12000 "$ref"
  one "B$i" "$SL" profile -o "$WORK/B$i.sltrace" --capture-range cudaProfilerApi --capture-range-end stop -- \
    "$LO" --mode plain --launches=50000 --reps=3 --capture-first-rep
  expect_ok "$CHECK" "$WORK/B$i.sltrace" --stdout "$WORK/B$i.out" >/dev/null
  grep -h AFTER_CAPTURE "$WORK/B$i.out"
  rm -f "$WORK/B$i.sltrace"
done
ref_long=$("$EX/fragmented_kernels" --variant slow --steps=40000 | grep -o 'x\[0\]=[^,]*')
for i in $(seq 1 "${TEARDOWN_LONG_RUNS:-4}"); do
  duration_case "D$i" 1 40000 "$ref_long"
done
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  PY=$(dirname "$0")/../../examples/pytorch_train.py
  want=$(python3 "$PY" --variant fixed --steps 1000 2>/dev/null | grep -o 'loss=[0-9.]*')
  for i in $(seq 1 $(( (N + 1) / 2 ))); do
    one "C$i" "$SL" profile -o "$WORK/C$i.sltrace" --duration 0.3 -- python3 "$PY" --variant fixed --steps 1000
    got=$(grep -o 'loss=[0-9.]*' "$WORK/C$i.out")
    [ -n "$got" ] && [ "$got" = "$want" ] || { echo "FAIL: C$i loss $got != $want"; fail=1; }
    rm -f "$WORK/C$i.sltrace"
  done
fi
echo "TEARDOWN runs=$runs crashes=$crashes"
exit $fail
