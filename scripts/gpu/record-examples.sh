#!/usr/bin/env bash
# scripts/gpu/record-examples.sh BUILD_DIR — records the examples' traces for
# tests/data on the GPU machine, under the exact names tests/data uses, and
# checks them:
#   starved_gpu, fragmented_kernels, serialized_streams, training_loop,
#   naive_matmul: NAME_slow / NAME_fixed (+ fragmented_kernels_graph);
#   nccl_allreduce_{slow,fixed}_rank{0,1} when two GPUs are present (steady
#   state only: --capture-range cudaProfilerApi around the timed loop).
# BUILD_DIR is a staged build (scripts/gpu/stage.sh), as for run-all.sh.
# Writes into $OUT (required): NAME.sltrace, NAME.out.txt (the program's
# stdout), NAME.err, NAME.check.txt (sightline_trace_check: exact counts),
# NAME.analysis.txt (sightline analyze), and summary.txt with, per example,
# the first 3 findings of slow and fixed and a PASS/FAIL line for "slow ranks
# RULE first, fixed does not raise RULE" (tests/analysis/real_traces_test.cc).
# Exit status 0 when every recording, count check and ranking passed.
set -u
B=$(cd "${1:?usage: OUT=DIR record-examples.sh BUILD_DIR}" && pwd)
OUT=${OUT:?set OUT to the output directory}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SL=$B/tools/sightline/sightline
CHECK=$B/tests/gpu/sightline_trace_check
EX=$B/examples
export LD_LIBRARY_PATH="$B/deps:$B/injection:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
S=$OUT/summary.txt
: >"$S"
fail=0
say() { echo "$*" | tee -a "$S"; }
nvidia-smi -L | tee -a "$S"
t_start=$(date +%s)

# check NAME [CHECK ARGS...]: exact counts of NAME.sltrace against NAME.out.txt.
check() {
  local name=$1; shift
  if "$CHECK" "$OUT/$name.sltrace" --stdout "$OUT/$name.out.txt" "$@" >"$OUT/$name.check.txt" 2>&1; then
    say "PASS counts $name"
  else
    say "FAIL counts $name:"; grep -v '^PASS' "$OUT/$name.check.txt" | head -8 | tee -a "$S"; fail=1
  fi
}

# record NAME EXAMPLE ARGS...: whole-run capture with default settings.
record() {
  local name=$1 exe=$2; shift 2
  rm -f "$OUT/$name.sltrace"
  local t0=$(date +%s.%N)
  timeout 120 "$SL" profile -o "$OUT/$name.sltrace" -- "$EX/$exe" "$@" \
    >"$OUT/$name.out.txt" 2>"$OUT/$name.err"
  local rc=$?
  say "$(printf '%-28s rc=%-3s %5.1fs  %s' "$name" "$rc" \
        "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" \
        "$(grep -v '^SIGHTLINE' "$OUT/$name.out.txt" | head -1)")"
  if [ $rc -ne 0 ]; then say "FAIL $name exited $rc"; tail -5 "$OUT/$name.err" | tee -a "$S"; fail=1; return; fi
  check "$name" --timing-tolerance 0.02 --min-timed-ms 1
}

# Rule ids of the findings in a `sightline analyze` text report, in rank order.
rules_of() { grep -E '^ {0,2}[0-9]+\. \[' "$1" | awk '{sub(/:$/, "", $3); print $3}'; }

# The first 3 findings of a text report: title line and saving line.
top3() {
  awk '/^ *[0-9]+\. \[/ { if (++n > 3) exit; print; next }
       n > 0 && /saving ~/ && !seen[n]++ { print }' "$1"
}

# judge EXAMPLE RULE "SLOW TRACES" "FIXED TRACES"
judge() {
  local name=$1 rule=$2 slow=$3 fixed=$4
  local traces=() t
  for t in $slow; do traces+=("$OUT/$t.sltrace"); done
  "$SL" analyze "${traces[@]}" >"$OUT/${name}_slow.analysis.txt" 2>&1
  traces=()
  for t in $fixed; do traces+=("$OUT/$t.sltrace"); done
  "$SL" analyze "${traces[@]}" >"$OUT/${name}_fixed.analysis.txt" 2>&1
  local v
  for v in slow fixed; do
    say "-- $name $v: first 3 findings"
    top3 "$OUT/${name}_$v.analysis.txt" | tee -a "$S"
  done
  local first
  first=$(rules_of "$OUT/${name}_slow.analysis.txt" | head -1)
  if [ "$first" = "$rule" ] && ! rules_of "$OUT/${name}_fixed.analysis.txt" | grep -qx "$rule"; then
    say "PASS ranking $name: slow first = $rule, fixed does not raise it"
  else
    say "FAIL ranking $name: slow first = ${first:-none} (want $rule); fixed raises: $(rules_of "$OUT/${name}_fixed.analysis.txt" | tr '\n' ' ')"
    fail=1
  fi
}

for v in slow fixed; do
  for ex in starved_gpu fragmented_kernels serialized_streams training_loop naive_matmul; do
    record "${ex}_$v" "$ex" --variant $v
  done
done
record fragmented_kernels_graph fragmented_kernels --variant graph

ngpu=$(nvidia-smi -L | wc -l)
if [ "$ngpu" -ge 2 ]; then
  for v in slow fixed; do
    rm -f "$OUT"/nccl_allreduce_${v}_rank*.sltrace
    t0=$(date +%s.%N)
    timeout 120 "$SL" profile --capture-range cudaProfilerApi \
      -o "$OUT/nccl_allreduce_${v}_rank%r.sltrace" -- "$EX/nccl_allreduce" --variant $v --profiler-range \
      >"$OUT/nccl_allreduce_$v.out.txt" 2>"$OUT/nccl_allreduce_$v.err"
    rc=$?
    say "$(printf '%-28s rc=%-3s %5.1fs' "nccl_allreduce_$v" "$rc" \
          "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')")"
    [ $rc -eq 0 ] || { say "FAIL nccl_allreduce_$v exited $rc"; tail -5 "$OUT/nccl_allreduce_$v.err" | tee -a "$S"; fail=1; }
    for r in 0 1; do
      grep -E "rank=$r |rank $r/" "$OUT/nccl_allreduce_$v.out.txt" >"$OUT/nccl_allreduce_${v}_rank$r.out.txt"
      check "nccl_allreduce_${v}_rank$r"
    done
  done
else
  say "SKIPPED nccl_allreduce: needs 2 GPUs ($ngpu found)"
fi

say "---- rankings (tests/analysis/real_traces_test.cc)"
judge starved_gpu cpu_bound starved_gpu_slow starved_gpu_fixed
judge fragmented_kernels launch_bound fragmented_kernels_slow fragmented_kernels_fixed
judge fragmented_kernels_graph launch_bound fragmented_kernels_slow fragmented_kernels_graph
judge serialized_streams stream_serialization serialized_streams_slow serialized_streams_fixed
judge training_loop sync_memcpy training_loop_slow training_loop_fixed
if [ "$ngpu" -ge 2 ]; then
  judge nccl_allreduce comm_compute_overlap \
    "nccl_allreduce_slow_rank0 nccl_allreduce_slow_rank1" "nccl_allreduce_fixed_rank0 nccl_allreduce_fixed_rank1"
fi
for v in slow fixed; do
  "$SL" analyze "$OUT/naive_matmul_$v.sltrace" >"$OUT/naive_matmul_$v.analysis.txt" 2>&1
  say "-- naive_matmul $v: first 3 findings"
  top3 "$OUT/naive_matmul_$v.analysis.txt" | tee -a "$S"
done
say "---- $( [ $fail -eq 0 ] && echo ALL PASSED || echo SOME FAILED ) in $(( $(date +%s) - t_start ))s"
exit $fail
