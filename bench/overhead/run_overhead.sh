#!/usr/bin/env bash
# bench/overhead/run_overhead.sh [BUILD_DIR] — the issue's overhead figures,
# side by side on one machine:
#   empty-kernel launches (200k x 5): plain / minimal CUPTI subscriber (floor) /
#   sightline; PyTorch x.add_(1) loop: plain / torch.profiler (CUDA) / sightline.
# Prints the per-launch/per-op medians, the added costs and the ratios the
# targets are stated in (sightline added cost <= 1.1x floor's, <= 0.5x
# torch.profiler's), and checks zero dropped records at 200k launches.
set -uo pipefail
B=${1:-${SIGHTLINE_BINARY_DIR:-build-gpu}}
SL=$B/tools/sightline/sightline
W=${SIGHTLINE_TEST_OUT:-$(mktemp -d)}
export LD_LIBRARY_PATH="$B/deps:$B/injection:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
LO=$B/bench/overhead/launch_overhead
TO=$(dirname "$0")/torch_overhead.py
val() { grep -o "$1=[0-9.]*" | head -1 | cut -d= -f2; }

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
plain=$("$LO" --mode plain | tee "$W/ov_plain.out" | val median_us_per_launch)
floor=$("$LO" --mode floor | tee "$W/ov_floor.out" | val median_us_per_launch)
"$SL" profile -q -o "$W/ov_sightline.sltrace" -- "$LO" --mode plain >"$W/ov_sightline.out" 2>"$W/ov_sightline.err"
sl=$(val median_us_per_launch <"$W/ov_sightline.out")
cat "$W/ov_floor.out" "$W/ov_sightline.out" "$W/ov_sightline.err" | grep -v '^SIGHTLINE_EXPECT'
awk -v p="$plain" -v f="$floor" -v s="$sl" 'BEGIN {
  printf "LAUNCH plain %.3f us, floor %.3f us (+%.3f), sightline %.3f us (+%.3f): sightline/floor added = %.2fx (target <= 1.1)\n",
         p, f, f - p, s, s - p, (s - p) / (f - p) }'
"$B/tests/gpu/sightline_trace_check" "$W/ov_sightline.sltrace" --stdout "$W/ov_sightline.out"
echo "trace size: $(du -h "$W/ov_sightline.sltrace" | cut -f1)"
rm -f "$W/ov_sightline.sltrace"
# Which setting costs what (OVERHEAD_MATRIX=1).
if [ "${OVERHEAD_MATRIX:-0}" = 1 ]; then
  for opts in "-t cuda,nvtx,nccl" "--buffer-kb 8192" "--flush-ms 5000" "-t cuda --buffer-kb 8192 --flush-ms 5000"; do
    v=$("$SL" profile -q -o "$W/ov_m.sltrace" $opts -- "$LO" --mode plain | val median_us_per_launch)
    echo "MATRIX sightline $opts: $v us/launch (+$(awk -v s="$v" -v p="$plain" 'BEGIN{printf "%.3f", s-p}'))"
    rm -f "$W/ov_m.sltrace"
  done
  v=$("$LO" --mode floor | val median_us_per_launch)
  echo "MATRIX floor again: $v us/launch"
fi

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "torch: plain / torch.profiler / sightline"
  python3 "$TO" --mode plain >"$W/ov_torch_plain.out" 2>&1
  python3 "$TO" --mode torch-profiler >"$W/ov_torch_profiler.out" 2>&1
  "$SL" profile -q -o "$W/ov_torch.sltrace" -- python3 "$TO" --mode plain >"$W/ov_torch_sightline.out" 2>&1
  grep -h OVERHEAD "$W"/ov_torch_plain.out "$W"/ov_torch_profiler.out "$W"/ov_torch_sightline.out
  tp=$(val median_us_per_op <"$W/ov_torch_plain.out")
  tt=$(val median_us_per_op <"$W/ov_torch_profiler.out")
  ts=$(val median_us_per_op <"$W/ov_torch_sightline.out")
  awk -v p="$tp" -v t="$tt" -v s="$ts" 'BEGIN {
    printf "TORCH plain %.3f us/op, torch.profiler %.3f (+%.3f), sightline %.3f (+%.3f): sightline/torch.profiler added = %.2fx (target <= 0.5)\n",
           p, t, t - p, s, s - p, (s - p) / (t - p) }'
fi
