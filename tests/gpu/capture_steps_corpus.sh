#!/usr/bin/env bash
# The analyzer's steps inside one `--capture-range cudaProfilerApi` window
# around a real PyTorch loop (nsys's usual way: cudaProfilerStart after the
# warm-up, Stop after the last step; examples/pytorch --cuda-profiler-range),
# without NVTX: for each corpus workload the steps come from the launch
# pattern inside the window, there are about as many as the program ran, and
# their median is the program's own (its CUDA-event median, printed by the
# same run) within 15 %. Before 2026-12-07 such a window was one step.
source "$(dirname "$0")/lib.sh"
if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "SKIPPED: no PyTorch with CUDA"; exit 77
fi
E=$(cd "$(dirname "$0")/../../examples/pytorch" && pwd)
STEPS=30
for w in "lm_train.py eager" "lm_train.py graph" "cnn_train.py slow" "cnn_train.py fixed" \
         "decode.py eager" "decode.py graph" "sync_copy.py slow" "sync_copy.py fixed"; do
  set -- $w
  tag="${1%.py}_$2"
  (cd "$E" && "$SL" profile -q --capture-range cudaProfilerApi -o "$WORK/$tag.sltrace" -- \
     python3 "$1" --variant "$2" --steps $STEPS --warmup 10 --cuda-profiler-range) \
    >"$WORK/$tag.out" 2>"$WORK/$tag.err" || { echo "FAIL $tag: profile"; tail -5 "$WORK/$tag.err"; fail=1; continue; }
  own=$(grep -o 'median_ms=[0-9.]*' "$WORK/$tag.out" | cut -d= -f2)
  "$SL" analyze "$WORK/$tag.sltrace" --format json >"$WORK/$tag.json" || { echo "FAIL $tag: analyze"; fail=1; continue; }
  python3 - "$WORK/$tag.json" "$tag" "${own:-0}" "$STEPS" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))["summary"]["steps"]
tag, own, steps = sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
p50 = (s.get("p50_ns") or 0) / 1e6
rel = 100 * (p50 / own - 1) if own > 0 else float("inf")
ok = s["source"] == "launch_pattern" and s["detected"] >= steps - 4 and abs(rel) <= 15
print(f"{'PASS' if ok else 'FAIL'} {tag}: steps {s['source']} detected {s['detected']} of {steps} "
      f"run, steady {s['count']}, p50 {p50:.3f} ms, the program's median {own:.3f} ms ({rel:+.1f} %)")
sys.exit(0 if ok else 1)
PY
done
[ "$fail" = 0 ] && echo "ALL PASS"
exit $fail
