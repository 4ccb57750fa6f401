#!/usr/bin/env bash
# sightline diff: the fixed variant shows the improvement; with the pair
# swapped, --fail-on-regression exits 1 (a CI gate).
source "$(dirname "$0")/common.sh"

# Slow: CPU-bound input pipeline + pageable copies. Fixed: no host stall, pinned.
"$GEN" "$WORK/slow.sltrace" --steps 30 --kernels-per-step 16 --kernel-us 40 --host-work-us 900 || exit 1
"$GEN" "$WORK/fixed.sltrace" --steps 30 --kernels-per-step 16 --kernel-us 40 --pinned || exit 1

expect_exit 0 "diff slow fixed" "$SL" diff "$WORK/slow.sltrace" "$WORK/fixed.sltrace" --fail-on-regression 5
cp "$WORK/last.out" "$WORK/d.txt"
check "text shows improvement" grep -q "step_time_mean_ns.*improved" "$WORK/d.txt"
check "text verdict" grep -q "Verdict: no regression beyond 5.0%" "$WORK/d.txt"
check "text fits 100 columns" awk 'length > 100 { bad = 1 } END { exit bad }' "$WORK/d.txt"

expect_exit 0 "diff json" "$SL" diff "$WORK/slow.sltrace" "$WORK/fixed.sltrace" --format json -o "$WORK/d.json"
check "json says improved" python3 - "$WORK/d.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
q = {x["name"]: x for x in d["quantities"]}
bad = []
if d["schema"] != "sightline.diff.v1": bad.append("schema")
if d["regression"]: bad.append("regression flagged")
st = q["step_time_mean_ns"]
if not (st["new"] < st["base"] and st["improvement"]): bad.append(f"step time {st}")
u = q["gpu_utilization_pct[0]"]
if not (u["new"] > u["base"] + 10): bad.append(f"utilization {u}")
if not d["findings_resolved"]: bad.append("no finding resolved")
print({k: (v["base"], v["new"]) for k, v in q.items()}, "resolved:",
      [f["rule"] for f in d["findings_resolved"]], "problems:", bad)
sys.exit(1 if bad else 0)
PY

expect_exit 1 "swapped pair regresses" "$SL" diff "$WORK/fixed.sltrace" "$WORK/slow.sltrace" --fail-on-regression 5
check "swapped text says REGRESSION" grep -q "REGRESSION" "$WORK/last.out"
check "stderr names the regression" grep -q "regression beyond 5.0%" "$WORK/last.err"
# A generous threshold lets a small change pass; the same run against itself never regresses.
expect_exit 0 "self diff" "$SL" diff "$WORK/slow.sltrace" "$WORK/slow.sltrace" --fail-on-regression 0
# A saved JSON report works as the baseline (CI keeps a small JSON, not a trace).
"$SL" analyze "$WORK/fixed.sltrace" --format json -o "$WORK/fixed.report.json"
"$SL" analyze "$WORK/slow.sltrace" --format json -o "$WORK/slow.report.json"
expect_exit 1 "JSON baseline: slow trace vs fixed report regresses" "$SL" diff "$WORK/fixed.report.json" "$WORK/slow.sltrace" --fail-on-regression 5
expect_exit 0 "JSON baseline: fixed trace vs slow report improves" "$SL" diff "$WORK/slow.report.json" "$WORK/fixed.sltrace" --fail-on-regression 5
check "JSON baseline shows the improvement" grep -q "step_time_mean_ns.*improved" "$WORK/last.out"
expect_exit 0 "report vs its own trace: no change" "$SL" diff "$WORK/fixed.report.json" "$WORK/fixed.sltrace" --fail-on-regression 0
echo '{"schema": "something.else"}' > "$WORK/other.json"
expect_exit 2 "foreign JSON refused" "$SL" diff "$WORK/other.json" "$WORK/fixed.sltrace"
check "foreign JSON message" grep -q "not a sightline report" "$WORK/last.err"
printf '{"schema": "sightline.report.v1", "kernels": [' > "$WORK/cut.json"
expect_exit 2 "truncated JSON refused" "$SL" diff "$WORK/cut.json" "$WORK/fixed.sltrace"
check "truncated JSON message names the offset" grep -q "invalid JSON at byte" "$WORK/last.err"
expect_exit 2 "bad threshold" "$SL" diff "$WORK/slow.sltrace" "$WORK/fixed.sltrace" --fail-on-regression abc
expect_exit 2 "one trace only" "$SL" diff "$WORK/slow.sltrace"

# Real slow/fixed pairs recorded on the H200: tests/data/<name>_slow.sltrace
# and <name>_fixed.sltrace (or <name>-slow / -fixed).
for slow in $(ls "$SRC"/tests/data/*slow*.sltrace 2>/dev/null); do
  fixed="${slow/slow/fixed}"
  [ -f "$fixed" ] || continue
  b=$(basename "$slow" .sltrace)
  expect_exit 0 "real pair $b: diff slow->fixed" "$SL" diff "$slow" "$fixed" --format json -o "$WORK/$b.json"
  check "real pair $b improves" python3 -c "
import json,sys; d=json.load(open(sys.argv[1])); q={x['name']:x for x in d['quantities']}
imp=[k for k,v in q.items() if v['improvement']]; print(sys.argv[1], 'improved:', imp); sys.exit(0 if imp else 1)" "$WORK/$b.json"
  expect_exit 1 "real pair $b swapped regresses" "$SL" diff "$fixed" "$slow" --fail-on-regression 10
done
finish
