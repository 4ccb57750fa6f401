#!/usr/bin/env bash
# Final GPU session for the kernel view (issue 4): the registered GPU tests,
# the wall-time benchmark against ncu and traces recorded through the
# injected collector. Run from the repository root:
#   bench/metrics/gpu_final.sh BUILD_DIR      → $OUT/final.tgz, $OUT/status.txt
set -u
build="${1:-build-kernel}"; out="${OUT:-$PWD/gpu-final-out}"; work="$out/final"; mkdir -p "$work"
export LD_LIBRARY_PATH="$PWD/$build/deps:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
bin="$build/tests/gpu_metrics"; sl="$build/tools/sightline/sightline"
status() { echo "$*" | tee -a "$out/status.txt"; }
elapsed() { python3 -c "print(round($(date +%s.%N)-$1,3))"; }

OUT="$work/ctest" timeout 240 ctest --test-dir "$bin" -R "occupancy_vs_cuda_test|metrics_vs_ncu_test" \
  --output-on-failure > "$work/ctest.txt" 2>&1
status "ctest gpu rc=$? :: $(grep -E 'tests passed|tests failed|Passed|Failed|Skipped' "$work/ctest.txt" | tr '\n' ' ')"

cmp() {
  local name="$1"; shift
  timeout 150 python3 tests/gpu_metrics/compare_ncu.py "$bin/metrics_harness" "$bin/metrics_workload_plain" \
    --out "$work/$name" --no-trace "$@" > "$work/$name.txt" 2>&1
  status "compare $name rc=$? :: $(grep -E '^(judged|wall time)' "$work/$name.txt" | tr '\n' ' ')"
}
cmp occupancy_x5 --metrics occupancy --repeat 5
cmp full_x5 --metrics full --repeat 5

# The user-facing path: sightline profile vs ncu, same metric list, same program.
for set in occupancy full; do
  for rep in 1 5; do
    t0=$(date +%s.%N)
    timeout 120 "$sl" profile --metrics $set -o "$work/inject_${set}_x$rep.sltrace" -- \
      "$bin/metrics_workload_plain" --repeat $rep > "$work/inject_${set}_x$rep.log" 2>&1
    rc=$?; ours=$(elapsed $t0)
    list=$(python3 -c "
import json,sys
for l in open('$work/full_x5/ours.jsonl' if '$set'=='full' else '$work/occupancy_x5/ours.jsonl'):
    o=json.loads(l)
    if 'metrics' in o: print(','.join(o['metrics'])); break")
    t0=$(date +%s.%N)
    timeout 200 /usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics "$list" \
      "$bin/metrics_workload_plain" --repeat $rep > "$work/ncu_${set}_x$rep.csv" 2>&1
    nrc=$?; theirs=$(elapsed $t0)
    status "profile $set x$rep rc=$rc ours=${ours}s ncu(rc=$nrc)=${theirs}s ratio=$(python3 -c "print(round($ours/$theirs,3))")"
  done
done
timeout 60 "$sl" info "$work/inject_full_x1.sltrace" > "$work/inject_full_x1.info" 2>&1
timeout 60 "$sl" analyze "$work/inject_full_x1.sltrace" > "$work/inject_full_x1.analyze.txt" 2>&1
status "analyze injected trace rc=$? :: $(grep -E '^ *[0-9]+\. ' "$work/inject_full_x1.analyze.txt" | head -4 | tr '\n' ' ')"
tar czf "$out/final.tgz" -C "$out" final
