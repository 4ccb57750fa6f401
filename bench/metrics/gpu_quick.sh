#!/usr/bin/env bash
# Short GPU check of the range profiler's session modes and of the injected
# path (run from the repository root with a carried build folder):
#   bench/metrics/gpu_quick.sh BUILD_DIR     → $OUT/quick.tgz
set -u
build="${1:-build-kernel}"; out="${OUT:-$PWD/gpu-quick-out}"; work="$out/quick"; mkdir -p "$work"
export LD_LIBRARY_PATH="$PWD/$build/deps:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
bin="$build/tests/gpu_metrics"; sl="$build/tools/sightline/sightline"
export SIGHTLINE_METRICS_DEBUG=1
for session in launch batch; do
  for set in full occupancy; do
    t0=$(date +%s.%N)
    SIGHTLINE_METRICS_SESSION=$session timeout 60 "$bin/metrics_harness" --metrics $set --repeat 2 \
      --json "$work/$session-$set.jsonl" --trace "$work/$session-$set.sltrace" > "$work/$session-$set.log" 2>&1
    echo "$session $set rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$t0,3))") $(grep 'range profiler' "$work/$session-$set.log")" | tee -a "$out/status.txt"
  done
done
t0=$(date +%s.%N)
timeout 60 /usr/local/cuda/bin/ncu --clock-control none --cache-control none --metrics \
  gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,sm__cycles_active.max \
  "$bin/metrics_workload_plain" --repeat 2 > "$work/ncu-occupancy.csv" 2>&1
echo "ncu occupancy rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$t0,3))")" | tee -a "$out/status.txt"
for session in launch batch; do
  t0=$(date +%s.%N)
  SIGHTLINE_METRICS_SESSION=$session timeout 90 "$sl" profile --metrics full -o "$work/inject-$session.sltrace" \
    -- "$bin/metrics_workload_plain" --repeat 2 > "$work/inject-$session.log" 2>&1
  echo "inject $session rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$t0,3))") $(grep -E 'range profiler|warning' "$work/inject-$session.log" | tr '\n' ' ')" | tee -a "$out/status.txt"
  timeout 30 "$sl" info "$work/inject-$session.sltrace" > "$work/inject-$session.info" 2>&1
done
tar czf "$out/quick.tgz" -C "$out" quick
