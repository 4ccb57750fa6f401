#!/usr/bin/env bash
# scripts/gpu/run-all.sh [BUILD_DIR] — every GPU check of the collector in one
# go (for the GPU machine): examples slow/fixed/graph with exact counts and
# kernel timing, collector behaviour (capture ranges, SIGTERM, SIGKILL,
# LD_PRELOAD, --duration teardown), PyTorch (+ torch.profiler coexistence),
# the overhead harness; NCCL when two GPUs are present. Writes
# $OUT/summary.txt and $OUT/results.tar.gz (logs + traces under 4 MB).
# ONLY=all (default) | examples | nccl | final (nccl + overhead) | verify
# (examples + behaviour + pytorch) | quick (matmul + behaviour + overhead).
set -u
B=$(cd "${1:-build-gpu}" && pwd)
OUT=${OUT:-$PWD/out-gpu}
R=$OUT/work
mkdir -p "$R"
export SIGHTLINE_BINARY_DIR=$B SIGHTLINE_TEST_OUT=$R
export LD_LIBRARY_PATH="$B/deps:$B/injection:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
ONLY=${ONLY:-all}
S=$OUT/summary.txt
: >"$S"
nvidia-smi -L | tee -a "$S"
run() {
  local name=$1; shift
  local t0=$(date +%s.%N)
  timeout "${STEP_TIMEOUT:-240}" "$@" >"$R/$name.log" 2>&1
  local rc=$?
  printf "%-34s rc=%-3s %5.1fs\n" "$name" "$rc" "$(awk -v a="$t0" -v b="$(date +%s.%N)" "BEGIN{print b-a}")" | tee -a "$S"
  grep -E '^(FAIL|SKIP|MATRIX|torch|OVERHEAD|PASS|LAUNCH|TORCH|AFTER|OVERHEAD|floor|trace size|  kernel [0-9]+:|loss|sightline warnings|sightline: warning|OTHER_SUBSCRIBER|TP_FIRST|no sightline warning|TEARDOWN|AFTER_CAPTURE)' "$R/$name.log" | head -30 >>"$S"
}
if [ "$ONLY" = all ] || [ "$ONLY" = examples ]; then
  for v in slow fixed; do
    for ex in starved_gpu fragmented_kernels serialized_streams naive_matmul training_loop; do
      run "${ex}_$v" bash tests/gpu/profile_example.sh "$B/examples/$ex" --variant $v
    done
  done
  run fragmented_kernels_graph bash tests/gpu/profile_example.sh "$B/examples/fragmented_kernels" --variant graph
  run behaviour bash tests/gpu/collector_behaviour.sh
  run coexistence bash tests/gpu/coexistence.sh
  run teardown bash tests/gpu/teardown_stress.sh
  run pytorch bash tests/gpu/pytorch.sh
  STEP_TIMEOUT=200 run overhead bash bench/overhead/run_overhead.sh "$B"
fi
if [ "$ONLY" = final ]; then
  run nccl bash tests/gpu/nccl.sh
  STEP_TIMEOUT=150 run overhead bash bench/overhead/run_overhead.sh "$B"
fi
if [ "$ONLY" = verify ]; then
  for v in slow fixed; do
    for ex in starved_gpu fragmented_kernels serialized_streams naive_matmul training_loop; do
      run "${ex}_$v" bash tests/gpu/profile_example.sh "$B/examples/$ex" --variant $v
    done
  done
  run behaviour bash tests/gpu/collector_behaviour.sh
  run coexistence bash tests/gpu/coexistence.sh
  run teardown bash tests/gpu/teardown_stress.sh
  run pytorch bash tests/gpu/pytorch.sh
fi
if [ "$ONLY" = quick ]; then
  for v in slow fixed; do
    run "naive_matmul_$v" bash tests/gpu/profile_example.sh "$B/examples/naive_matmul" --variant $v
  done
  run behaviour bash tests/gpu/collector_behaviour.sh
  STEP_TIMEOUT=240 run overhead bash bench/overhead/run_overhead.sh "$B"
fi
if [ "$ONLY" = all ] || [ "$ONLY" = nccl ]; then
  run nccl bash tests/gpu/nccl.sh
fi
( cd "$R" && find . -type f \( -name '*.log' -o -name '*.out' -o -name '*.err' -o \( -name '*.sltrace' -size -4M \) \) -print0 |
  tar --null -czf "$OUT/results.tar.gz" -T - )
echo "---- summary"; cat "$S"
