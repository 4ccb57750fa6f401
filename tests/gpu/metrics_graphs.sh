#!/usr/bin/env bash
# Hardware metrics on PyTorch programs that capture and replay CUDA graphs
# (issue 14; stream_capture.h): `sightline profile --metrics full
# --metrics-replay sequence` on
#  - torch.compile(mode="reduce-overhead") (metrics_graphs_app.py: CUDA
#    graph trees capture the forward in global mode, replay it each step;
#    backward and optimizer eager);
#  - the corpus LM's CUDA-graph variant (torch.cuda.graph around the whole
#    step, eager warm-up first);
# and the LM's graph variant under --metrics-range graph (case graph_range:
# one metric pass per launch of the step's graph).
# Each must exit 0 with its result as without sightline (the range profiler
# must never run during a capture: it would invalidate it and the program
# would fail at cudaStreamEndCapture), leave a complete trace with 0 records
# lost, and report the launches withheld during captures.
source "$(dirname "$0")/lib.sh"
if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "SKIPPED: no PyTorch with CUDA"; exit 77
fi
HERE=$(cd "$(dirname "$0")" && pwd)
E=$(cd "$HERE/../../examples/pytorch" && pwd)
CASES=${METRICS_GRAPHS_CASES:-"compile lm_graph graph_range"}  # a subset when device time is short

if [[ " $CASES " == *" compile "* ]]; then
python3 "$HERE/metrics_graphs_app.py" 60 >"$WORK/compile.plain.out" 2>"$WORK/compile.plain.err" ||
  { echo "FAIL compile: plain run"; tail -5 "$WORK/compile.plain.err"; exit 1; }
"$SL" profile --metrics full --metrics-replay sequence -o "$WORK/compile.sltrace" -- \
  python3 "$HERE/metrics_graphs_app.py" 60 >"$WORK/compile.out" 2>"$WORK/compile.err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL compile: profiled run exited $rc"; tail -8 "$WORK/compile.err"; fail=1; }
want=$(sed -n 's/^METRICS_GRAPHS //p' "$WORK/compile.plain.out")
got=$(sed -n 's/^METRICS_GRAPHS //p' "$WORK/compile.out")
if [ -n "$want" ] && [ "$want" = "$got" ]; then echo "PASS compile: $got as unprofiled";
else echo "FAIL compile: '$got' profiled, '$want' unprofiled"; fail=1; fi
grep -E "graph capture was in progress|sequence replay|warning" "$WORK/compile.err" | cut -c1-400 | head -5
if grep -q "graph capture was in progress" "$WORK/compile.err"; then
  echo "PASS compile: launches during the captures withheld from the metrics hook"
else
  echo "FAIL compile: no capture seen (did torch.compile capture a graph?)"; fail=1
fi
trace_complete_lossless "$WORK/compile.sltrace" compile
fi

if [[ " $CASES " == *" lm_graph "* ]]; then
(cd "$E" && "$SL" profile --metrics full --metrics-replay sequence -o "$WORK/lm_graph.sltrace" -- \
  python3 lm_train.py --variant graph --steps 30 --warmup 10) >"$WORK/lm_graph.out" 2>"$WORK/lm_graph.err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL lm_graph: profiled run exited $rc"; tail -8 "$WORK/lm_graph.err"; fail=1; }
grep -E "SIGHTLINE_STEPS" "$WORK/lm_graph.out" | tail -1
grep -E "graph capture was in progress|sequence replay" "$WORK/lm_graph.err" | cut -c1-400 | head -3
trace_complete_lossless "$WORK/lm_graph.sltrace" lm_graph
fi
if [[ " $CASES " == *" graph_range "* ]]; then
# --metrics-range graph (ncu's --graph-profiling graph): the LM's graph
# variant, no NVTX; every step is one launch of the same graph, so sets
# complete after the metric set's passes, as an NVTX range around the step
# gives them.
(cd "$E" && "$SL" profile --metrics full --metrics-range graph -o "$WORK/graph_range.sltrace" -- \
  python3 lm_train.py --variant graph --steps 30 --warmup 10) >"$WORK/graph_range.out" 2>"$WORK/graph_range.err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL graph_range: profiled run exited $rc"; tail -8 "$WORK/graph_range.err"; fail=1; }
grep -E "SIGHTLINE_STEPS" "$WORK/graph_range.out" | tail -1
grep -E "per-range metrics|warning" "$WORK/graph_range.err" | cut -c1-500 | head -4
"$SL" analyze "$WORK/graph_range.sltrace" --format json >"$WORK/graph_range.json" 2>/dev/null
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = d["traces"][0]
rows = [r for r in d.get("range_metrics", []) if r["range"].startswith("CUDA graph ")]
print("  lost=%s complete_sets=%s range=%s" % (t["lost_records"], [r.get("complete_sets") for r in rows], [r["range"] for r in rows]))
ok = t["complete"] and t["lost_records"] == 0 and rows and rows[0].get("complete_sets", 0) >= 1 \
     and rows[0]["metrics"].get("gpu__time_duration.sum", 0) > 0
sys.exit(0 if ok else 1)' "$WORK/graph_range.json" &&
  echo "PASS graph_range: metric sets per launch of the step graph, 0 lost" ||
  { echo "FAIL graph_range: no complete set of the graph, or records lost"; fail=1; }
fi

[ $fail -eq 0 ] && echo "ALL PASS"
exit $fail
