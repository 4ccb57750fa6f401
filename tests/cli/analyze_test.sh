#!/usr/bin/env bash
# sightline analyze: text fits 100 columns and shows every section; JSON is
# validated against docs/report-schema.md and carries the numbers the text shows.
source "$(dirname "$0")/common.sh"

"$GEN" "$WORK/slow.sltrace" --steps 40 --kernels-per-step 16 --kernel-us 20 --host-work-us 600 || exit 1

expect_exit 0 "analyze text" "$SL" analyze "$WORK/slow.sltrace"
cp "$WORK/last.out" "$WORK/slow.txt"
check "text fits 100 columns" awk 'length > 100 { print "too wide: " $0; bad = 1 } END { exit bad }' "$WORK/slow.txt"
for section in "sightline analysis:" "GPU " "Steps (" "Top kernels" "Findings (" "saving ~" "-> "; do
  check "text has '$section'" grep -qF -- "$section" "$WORK/slow.txt"
done

expect_exit 0 "analyze json to file" "$SL" analyze "$WORK/slow.sltrace" --format json -o "$WORK/slow.json"
check "json schema" python3 "$SRC/tests/cli/validate_report.py" "$SRC/docs/report-schema.md" "$WORK/slow.json" --min-findings 1
check "json carries the text's numbers" python3 - "$WORK/slow.json" "$WORK/slow.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); text = open(sys.argv[2]).read()
bad = []
steps = d["summary"]["steps"]
# Steady state: 40 markers -> 39 steps, the warm-up step(s) left out.
if steps["detected"] != 39 or steps["count"] != 39 - steps["warmup_steps"] or steps["warmup_steps"] < 1:
    bad.append(f"steps {steps['count']} of {steps['detected']} (40 markers -> 39 intervals)")
if f"Steps ({steps['source']}): {steps['count']}," not in text: bad.append("step count not in text")
k = {x["name"]: x for x in d["kernels"]}
n = 4 * steps["count"]  # 16 kernels a step, of which 4 of this one, in the analysed steps
if abs(k["gemm_bf16_128x128"]["count"] - n) > 4 or k["gemm_bf16_128x128"]["total_ns"] != k["gemm_bf16_128x128"]["count"] * 20000: bad.append("kernel stats")
util = d["summary"]["devices"][0]["gpu_utilization_pct"]
if f"{util:.1f}%" not in text: bad.append(f"util {util:.1f}% not in text")
if not (20 < util < 70): bad.append(f"util {util} out of the expected range for a CPU-bound run")
rules = [f["rule"] for f in d["findings"]]
if f"[{d['findings'][0]['severity']}] {rules[0]}:" not in text: bad.append("top finding not in text")
# The text lists the findings in the report's ranking (the analyzer ranks
# causes by saving, overview findings after them).
pos = [text.find(f"] {r}:") for r in rules[:10]]
if -1 in pos or pos != sorted(pos): bad.append(f"text order {pos}")
print("rules:", rules, "util:", util, "problems:", bad)
sys.exit(1 if bad else 0)
PY

# --fail-on: exit 1 when a finding at that severity (or worse) exists.
expect_exit 1 "--fail-on info" "$SL" analyze "$WORK/slow.sltrace" --fail-on info -o "$WORK/x.txt"
expect_exit 2 "--fail-on bogus" "$SL" analyze "$WORK/slow.sltrace" --fail-on bogus

# --kernel REGEX: ncu-style details pages; a bad pattern or an output that
# cannot hold pages is a usage error.
M="$SRC/tests/data/metrics/cnn_fixed_sequence_h200.sltrace"
expect_exit 0 "--kernel pages" "$SL" analyze "$M" --kernel 'fprop_implicit_gemm' -o "$WORK/pages.txt"
for section in "GPU speed of light" "Memory workload" "Compute workload" "Occupancy" \
               "Launch statistics" "In this run" "Findings on this kernel" "Bound  "; do
  check "pages have '$section'" grep -qF -- "$section" "$WORK/pages.txt"
done
check "pages fit 100 columns" awk 'length > 100 { print; bad = 1 } END { exit bad }' "$WORK/pages.txt"
expect_exit 0 "analyze metrics trace" "$SL" analyze "$M" -o "$WORK/cnn_metrics.txt"
check "metrics coverage line" grep -qF "Hardware metrics for 100.0% of kernel time" "$WORK/cnn_metrics.txt"
expect_exit 0 "--kernel no match" "$SL" analyze "$M" --kernel 'no_such_kernel_xyz'
check "no match said" grep -qF "no kernel matches" "$WORK/last.out"
expect_exit 2 "--kernel bad regex" "$SL" analyze "$M" --kernel '('
check "bad regex named" grep -qF "invalid --kernel pattern" "$WORK/last.err"
expect_exit 2 "--kernel with json" "$SL" analyze "$M" --kernel gemm --format json

# The recorded traces, and real PyTorch ones from the H200 (memory records,
# hardware metrics from sequence replay).
for t in $(real_traces) "$SRC"/tests/data/pytorch/lm_eager.sltrace \
         "$SRC"/tests/data/pytorch/mem_leak.sltrace \
         "$SRC"/tests/data/metrics/lm_eager_sequence_h200.sltrace \
         "$SRC"/tests/data/metrics/cnn_fixed_sequence_h200.sltrace; do
  b=$(basename "$t" .sltrace)
  expect_exit 0 "analyze $b" "$SL" analyze "$t" -o "$WORK/$b.txt" &&
    check "$b text fits 100 columns" awk 'length > 100 { bad = 1 } END { exit bad }' "$WORK/$b.txt"
  expect_exit 0 "analyze $b json" "$SL" analyze "$t" --format json -o "$WORK/$b.json" &&
    check "$b json schema" python3 "$SRC/tests/cli/validate_report.py" "$SRC/docs/report-schema.md" "$WORK/$b.json"
done

# Two ranks together (issue 16): the per-rank table, the cross_rank JSON
# section, no straggler on the balanced example pair. Each rank's capture
# window holds 50 iterations; the steady state (the iterations after the
# warm-up ones) holds most of them, matched across the ranks.
for v in slow fixed; do
  r0="$SRC/tests/data/nccl_allreduce_${v}_rank0.sltrace"
  r1="$SRC/tests/data/nccl_allreduce_${v}_rank1.sltrace"
  [ -f "$r0" ] && [ -f "$r1" ] || continue
  expect_exit 0 "analyze nccl $v pair" "$SL" analyze "$r0" "$r1" -o "$WORK/nccl_$v.txt" &&
    check "nccl $v text fits 100 columns" awk 'length > 100 { bad = 1 } END { exit bad }' "$WORK/nccl_$v.txt"
  check "nccl $v ranks table" grep -qE "Ranks: 4[5-9] NCCL operations matched across 2 ranks" "$WORK/nccl_$v.txt"
  expect_exit 0 "analyze nccl $v pair json" "$SL" analyze "$r0" "$r1" --format json -o "$WORK/nccl_$v.json" &&
    check "nccl $v json schema" python3 "$SRC/tests/cli/validate_report.py" "$SRC/docs/report-schema.md" "$WORK/nccl_$v.json"
  check "nccl $v cross_rank" python3 - "$WORK/nccl_$v.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
x = d["cross_rank"]
ok = (x["method"] == "communicator" and 45 <= x["collectives_matched"] <= 50 and x["unmatched_calls"] <= 2
      and len(x["ranks"]) == 2 and x["skew_median_ns"] < 10000
      and not any(f["rule"] == "nccl_straggler" for f in d["findings"]))
print({k: v for k, v in x.items() if k != "ranks"})
sys.exit(0 if ok else 1)
PY
done

# The savings table of docs/steady-state.md (issue 12): the slow variant's
# first finding's estimated saving within ±30 % of the measured change of the
# unprofiled step (or timed loop) for >= 80 % of the corpus and example pairs.
expect_exit 0 "savings table >= 80 % within 30 %" python3 "$SRC/scripts/savings-table.py" \
  "$SL" "$SRC/tests/data/pytorch" "$SRC/tests/data" --check ||
  cat "$WORK/last.out"
finish
