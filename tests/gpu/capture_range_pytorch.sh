#!/usr/bin/env bash
# Capture ranges on a real PyTorch training loop (examples/pytorch/lm_train.py,
# eager, each step in an NVTX range "train_step"):
#  - inside --capture-range nvtx:train_step windows every kind whole-run
#    profiling records is recorded: API calls, the NVTX ranges themselves
#    (each window's own range included), kernels, copies, memsets;
#  - --capture-skip N --capture-count K: K windows, the first after N ranges;
#  - step time inside windows and under whole-run profiling (printed, not
#    judged: one unpinned run of each moves by more than the difference;
#    bench/overhead/capture_window_cost.sh measures it, interleaved and
#    pinned);
#  - --capture-range cudaProfilerApi around the whole loop (no NVTX): one
#    window, and the analyzer finds the loop's steps inside it (it reported
#    the window as one step before 2026-12-07).
source "$(dirname "$0")/lib.sh"
if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "SKIPPED: no PyTorch with CUDA"; exit 77
fi
E=$(cd "$(dirname "$0")/../../examples/pytorch" && pwd)
ARGS="--variant eager --nvtx --steps 40 --warmup 10"
count() { "$SL" info "$1" --format json | python3 -c "import json,sys; print(json.load(sys.stdin)['counts'].get('$2',0))"; }
median() { grep -o 'median_ms=[0-9.]*' "$1" | cut -d= -f2; }
is_ge() { if python3 -c "import sys; sys.exit(0 if float('$2') >= float('$3') else 1)"; then echo "PASS $1 ($2 >= $3)"; else echo "FAIL $1: $2 < $3"; fail=1; fi; }
is() { if [ "$2" = "$3" ]; then echo "PASS $1 ($2)"; else echo "FAIL $1: got '$2', want '$3'"; fail=1; fi; }

(cd "$E" && "$SL" profile -q -o "$WORK/whole.sltrace" -- python3 lm_train.py $ARGS) >"$WORK/whole.out" 2>"$WORK/whole.err" || { echo "FAIL whole run"; cat "$WORK/whole.err"; fail=1; }
(cd "$E" && "$SL" profile -q --capture-range nvtx:train_step -o "$WORK/nvtx.sltrace" -- python3 lm_train.py $ARGS) >"$WORK/nvtx.out" 2>"$WORK/nvtx.err" || { echo "FAIL nvtx run"; cat "$WORK/nvtx.err"; fail=1; }
(cd "$E" && "$SL" profile -q --capture-range nvtx:train_step --capture-skip 20 --capture-count 5 -o "$WORK/skip.sltrace" -- python3 lm_train.py $ARGS) >"$WORK/skip.out" 2>"$WORK/skip.err" || { echo "FAIL skip run"; cat "$WORK/skip.err"; fail=1; }

is "windows" "$(count "$WORK/nvtx.sltrace" capture_window)" 50
is_ge "API records inside the windows" "$(count "$WORK/nvtx.sltrace" api)" 5000
is_ge "NVTX ranges inside the windows (their own)" "$(count "$WORK/nvtx.sltrace" nvtx_range)" 50
is_ge "kernels inside the windows" "$(count "$WORK/nvtx.sltrace" kernel)" 5000
is "--capture-skip 20 --capture-count 5 windows" "$(count "$WORK/skip.sltrace" capture_window)" 5
w=$(count "$WORK/whole.sltrace" kernel); k=$(count "$WORK/skip.sltrace" kernel)
is_ge "skip/count trace holds ~5 steps of kernels, not more" "$(python3 -c "print(1 if $k*8 < $w else 0)")" 1
# The analyzer sees the windows as steps and the API calls inside them.
"$SL" analyze "$WORK/nvtx.sltrace" --format json >"$WORK/nvtx.json" || fail=1
python3 - "$WORK/nvtx.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
s = d["summary"]
print("analysis: scope", s["scope"], "steps", s["steps"]["source"], s["steps"]["count"],
      "api_calls", s["api_calls"], "first", d["findings"][0]["rule"] if d["findings"] else None)
assert s["api_calls"] > 0, "no API calls in the analysed windows"
PY
(cd "$E" && "$SL" profile -q --capture-range cudaProfilerApi -o "$WORK/api.sltrace" -- python3 lm_train.py \
   --variant eager --steps 40 --warmup 10 --cuda-profiler-range) >"$WORK/api.out" 2>"$WORK/api.err" ||
  { echo "FAIL cudaProfilerApi run"; cat "$WORK/api.err"; fail=1; }
is "cudaProfilerApi windows" "$(count "$WORK/api.sltrace" capture_window)" 1
"$SL" analyze "$WORK/api.sltrace" --format json >"$WORK/api.json" || fail=1
python3 - "$WORK/api.json" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))["summary"]["steps"]
print("cudaProfilerApi analysis: steps", s["source"], "detected", s["detected"], "steady", s["count"],
      "p50 ms", round(s["p50_ns"] / 1e6, 2))
assert s["source"] == "launch_pattern", "the window around the loop was taken as one step"
assert s["detected"] >= 35, "fewer steps than the 40 captured iterations allow"
PY
mw=$(median "$WORK/whole.out"); mn=$(median "$WORK/nvtx.out"); ms=$(median "$WORK/skip.out")
echo "step median: whole-run $mw ms, inside nvtx windows $mn ms, skip/count run $ms ms (not judged here)"
[ "$fail" = 0 ] && echo "ALL PASS"
exit $fail
