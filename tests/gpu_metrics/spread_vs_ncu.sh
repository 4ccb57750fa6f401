#!/usr/bin/env bash
# GPU script test: spread metric replay (pass p on the p-th launch of a kernel
# configuration, no replay) against ncu, one metric set per configuration:
# values of the judged kernels within ±2% (compare_spread.py), every set
# complete, no fallback to kernel replay.
# Usage: spread_vs_ncu.sh HARNESS WORKLOAD. Exit 77 (skipped) without a GPU or ncu.
set -u
harness="$1"; workload="$2"; ncu="${NCU:-/usr/local/cuda/bin/ncu}"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no GPU"; exit 77
fi
[ -x "$ncu" ] || { echo "SKIPPED: no ncu at $ncu"; exit 77; }
out="${OUT:-$(mktemp -d)}/spread_vs_ncu"; mkdir -p "$out"
reps=100  # spread collects one configuration at a time: 9 configurations x 11 passes
"$harness" --metrics full --repeat $reps --launches 1 --replay spread --json "$out/spread.jsonl" \
  > "$out/harness.log" 2>&1 || { cat "$out/harness.log"; echo "FAIL: harness"; exit 1; }
cat "$out/harness.log"
if grep -q "spread metric replay failed" "$out/harness.log"; then echo "FAIL: fell back to kernel replay"; exit 1; fi
list=$(python3 -c "
import json
for l in open('$out/spread.jsonl'):
    o = json.loads(l)
    if o.get('metrics'): print(','.join(o['metrics'])); break")
[ -n "$list" ] || { echo "FAIL: no complete metric set"; exit 1; }
"$ncu" --clock-control none --cache-control none --launch-count 9 --metrics "$list" --csv \
  "$workload" --repeat $reps > "$out/ncu.csv" 2> "$out/ncu.stderr" || { echo "FAIL: ncu"; exit 1; }
exec python3 "$(dirname "$0")/compare_spread.py" "$out/spread.jsonl" "$out/ncu.csv" --label spread \
  --out "$out/compare.json"
