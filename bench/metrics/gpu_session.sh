#!/usr/bin/env bash
# One GPU-machine session for the kernel view (issue 4), run from the
# repository root with a carried Release build folder:
#   bench/metrics/gpu_session.sh BUILD_DIR
# Writes under $OUT (or ./gpu-session-out): status.txt and session.tgz with
# every log, ncu CSV, our JSON and the recorded traces:
#   occupancy_vs_cuda.txt   calculator vs cudaOccupancyMaxActiveBlocksPerMultiprocessor
#   stages_*.log            in-process cost per profiler stage (SIGHTLINE_METRICS_DEBUG)
#   cmp/                    full set: values vs ncu --cache-control none, wall time, trace
#   cmp_occupancy/          the single-pass occupancy set: values and wall time vs ncu
#   bench_repeat5/          full set, 45 launches: wall time vs ncu
#   inject/                 the same workload through `sightline profile --metrics full`
# Env: SKIP_OCC=1 skips the occupancy test.
set -u
build="${1:-build-kernel}"
out="${OUT:-$PWD/gpu-session-out}"
work="$out/work"
mkdir -p "$work"
export LD_LIBRARY_PATH="$PWD/$build/deps:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
bin="$build/tests/gpu_metrics"
status() { echo "$*" | tee -a "$out/status.txt"; }
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; } > "$work/gpu.txt" 2>&1

if [ "${SKIP_OCC:-0}" != 1 ]; then
  timeout 120 "$bin/occupancy_vs_cuda_test" > "$work/occupancy_vs_cuda.txt" 2>&1
  status "occupancy_vs_cuda_test rc=$? $(grep -E '^compared' "$work/occupancy_vs_cuda.txt")"
fi

export SIGHTLINE_METRICS_IMAGE=shared
for args in "full" "full --extra-alloc-mb 8192" "occupancy"; do
  tag=$(echo "$args" | tr ' ' '_')
  t0=$(date +%s.%N)
  SIGHTLINE_METRICS_DEBUG=1 timeout 90 "$bin/metrics_harness" --metrics $args \
    --json "$work/stages_$tag.jsonl" > "$work/stages_$tag.log" 2>&1
  rc=$?; t1=$(date +%s.%N)
  status "harness $args rc=$rc wall=$(python3 -c "print(round($t1-$t0,3))")s :: $(grep 'range profiler' "$work/stages_$tag.log") :: $(tail -1 "$work/stages_$tag.jsonl" 2>/dev/null)"
done

cmp() {  # name, args...
  local name="$1"; shift
  timeout 150 python3 tests/gpu_metrics/compare_ncu.py "$bin/metrics_harness" "$bin/metrics_workload_plain" \
    --out "$work/$name" "$@" > "$work/$name.txt" 2>&1
  status "compare $name rc=$? :: $(grep -E '^(judged|wall time)' "$work/$name.txt" | tr '\n' ' ')"
}
cmp cmp --metrics full
cmp cmp_occupancy --metrics occupancy --no-trace
cmp bench_repeat5 --metrics full --repeat 5 --no-trace

# End to end through the injected collector.
sl="$build/tools/sightline/sightline"
if [ -x "$sl" ] && [ -f "$build/injection/libsightline_inject.so" ]; then
  mkdir -p "$work/inject"
  t0=$(date +%s.%N)
  SIGHTLINE_METRICS_DEBUG=1 timeout 120 "$sl" profile --metrics full -o "$work/inject/metrics_workload.sltrace" \
    -- "$bin/metrics_workload_plain" > "$work/inject/profile.log" 2>&1
  rc=$?; t1=$(date +%s.%N)
  status "sightline profile --metrics full rc=$rc wall=$(python3 -c "print(round($t1-$t0,3))")s"
  timeout 60 "$sl" info "$work/inject/metrics_workload.sltrace" > "$work/inject/info.txt" 2>&1
  timeout 60 "$sl" analyze "$work/inject/metrics_workload.sltrace" --format json -o "$work/inject/analyze.json" \
    > "$work/inject/analyze.log" 2>&1
  status "info/analyze rc=$? $(grep -i -E 'metric|replay' "$work/inject/info.txt" | head -3 | tr '\n' ' ')"
  SIGHTLINE_METRICS_DEBUG=1 timeout 120 "$sl" profile --metrics occupancy -o "$work/inject/occupancy.sltrace" \
    -- "$bin/metrics_workload_plain" > "$work/inject/profile_occ.log" 2>&1
  status "sightline profile --metrics occupancy rc=$?"
fi
tar czf "$out/session.tgz" -C "$out" work
