#!/usr/bin/env bash
# Per-range hardware metrics on real PyTorch training (issue 14 item 5):
# `sightline profile --metrics full --metrics-range nvtx:train_step` on the
# corpus's eager transformer and bf16 CNN (examples/pytorch, --nvtx wraps each
# step in an NVTX range "train_step"):
#  - the trace is complete with 0 records lost, and holds complete metric
#    sets of the range (one pass per step instance, passes = instances);
#  - no kernel is replayed and no kernel gets metrics (no per-kernel cost);
#  - a set's gpu__time_duration.sum (GPU time of one instance, push to pop)
#    lies within [0.9 x, 1.1 x] the GPU spans of its own instances in the
#    trace (first kernel/copy/memset start after the push to the last end
#    before the next push: `sightline export --format chrome`); throughputs
#    lie in [0, 100] %; DRAM bytes are positive;
#  - the collector's summary line names the sets.
# SIGHTLINE_TEST_OUT keeps the traces (tests/data/metrics/*_range_h200.sltrace).
source "$(dirname "$0")/lib.sh"
if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "SKIPPED: no PyTorch with CUDA"; exit 77
fi
E=$(cd "$(dirname "$0")/../../examples/pytorch" && pwd)
for spec in lm:lm_train.py:eager:40:10 cnn:cnn_train.py:fixed:30:6; do
  IFS=: read -r name script variant steps warmup <<<"$spec"
  t=$WORK/${name}_range_h200.sltrace
  (cd "$E" && "$SL" profile -o "$t" --metrics full --metrics-range nvtx:train_step -- \
    python3 "$script" --variant "$variant" --nvtx --steps "$steps" --warmup "$warmup") \
    >"$WORK/$name.out" 2>"$WORK/$name.err" || { echo "FAIL run $name"; tail -5 "$WORK/$name.err"; fail=1; continue; }
  grep "per-range metrics" "$WORK/$name.err" | head -2
  grep -i "warning" "$WORK/$name.err" | head -3
  "$SL" info "$t" | grep -E '^(status|losses)'
  "$SL" analyze "$t" --format json >"$WORK/$name.json" || { echo "FAIL analyze $name"; fail=1; continue; }
  "$SL" analyze "$t" | sed -n '/Metrics of NVTX range/,/^$/p'
  "$SL" export "$t" --format chrome -o "$WORK/$name.chrome.json" >/dev/null || fail=1
  python3 - "$name" "$WORK/$name.json" "$WORK/$name.chrome.json" "$WORK/$name.err" <<'PY' || fail=1
import bisect, json, sys
name, report, chrome, err = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), open(sys.argv[4]).read()
ev = chrome["traceEvents"] if isinstance(chrome, dict) else chrome
pushes = sorted(e["ts"] for e in ev if e.get("cat") == "nvtx" and e.get("name") == "train_step" and e.get("ph") == "X")
work = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") in ("kernel", "memcpy", "memset") and e.get("ph") == "X")
starts = [w[0] for w in work]
def span_ms(i):  # GPU span of the instance pushed at pushes[i] (µs in the export)
    lo, hi = pushes[i], pushes[i + 1] if i + 1 < len(pushes) else float("inf")
    a, b = bisect.bisect_left(starts, lo), bisect.bisect_left(starts, hi)
    return (max(w[1] for w in work[a:b]) - work[a][0]) / 1e3 if b > a else 0.0
ok = True
def check(cond, what):
    global ok
    print(("  ok   " if cond else "  FAIL ") + what)
    ok &= bool(cond)
t = report["traces"][0]
check(t["complete"] and t["lost_records"] == 0, f"trace complete, {t['lost_records']} lost")
check(t["replayed_kernels"] == 0, f"{t['replayed_kernels']} kernels replayed")
check(all(not k["metrics"] for k in report["kernels"]), "no per-kernel metrics")
rows = [r for r in report["range_metrics"] if r["range"] == "train_step"]
check(len(rows) == 1, "range_metrics has train_step")
if rows:
    r = rows[0]
    sets = [s for s in r["set_list"] if s["complete"]]
    check(len(sets) >= 2, f"{len(sets)} complete sets of {r['sets']}")
    for s in sets:
        m = s["metrics"]
        check(s["instances"] == s["passes"] == s["passes_collected"],
              f"set at {s['start_ns']}: {s['instances']} instances, {s['passes']} passes")
        pcts = {k: v for k, v in m.items() if k.endswith("pct_of_peak_sustained_elapsed")}
        check(pcts and all(0 <= v <= 100.5 for v in pcts.values()),
              "throughputs in [0, 100] %: " + ", ".join(f"{k.split('.')[0]} {v:.1f}" for k, v in pcts.items()))
        check(m.get("dram__bytes.sum", 0) > 0, f"dram__bytes {m.get('dram__bytes.sum', 0):.3g}")
    # The export's metric sets (µs since the trace start, as the NVTX ranges):
    # each set's GPU time against its own instances' GPU spans. The set starts
    # at the hook's clock in the push callback: 1 ms of slack.
    marks = [e for e in ev if e.get("cat") == "metrics" and "gpu__time_duration.sum" in e.get("args", {})]
    check(len(marks) == len(sets), f"{len(marks)} complete sets in the export")
    for e in marks:
        gpu_ms = e["args"]["gpu__time_duration.sum"] / 1e6
        mine = [span_ms(i) for i, p in enumerate(pushes) if e["ts"] - 1000 <= p <= e["ts"] + e["dur"]]
        check(len(mine) == 11 and 0.9 * min(mine) <= gpu_ms <= 1.1 * max(mine),
              f"gpu__time_duration {gpu_ms:.3f} ms within its {len(mine)} instances' GPU spans "
              f"{min(mine, default=0):.3f}..{max(mine, default=0):.3f} ms")
check("per-range metrics for NVTX range 'train_step'" in err, "summary line")
print(("PASS " if ok else "FAIL ") + name)
sys.exit(0 if ok else 1)
PY
done
[ "$fail" = 0 ] && echo "ALL PASS"
exit $fail
