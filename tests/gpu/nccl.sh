#!/usr/bin/env bash
# NCCL all-reduce on two GPUs, one process per rank: one trace per rank
# (-o %r pattern) with that rank's AllReduce collectives.
source "$(dirname "$0")/lib.sh"
n=$(nvidia-smi -L | wc -l)
[ "$n" -ge 2 ] || { echo "SKIPPED: needs 2 GPUs"; exit 77; }
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
for v in slow fixed; do
  rm -f "$WORK"/nccl_${v}_rank*.sltrace
  "$SL" profile -o "$WORK/nccl_${v}_rank%r.sltrace" -- "$EX/nccl_allreduce" --variant $v \
    >"$WORK/nccl_$v.out" 2>"$WORK/nccl_$v.err"
  rc=$?
  cat "$WORK/nccl_$v.out"; tail -6 "$WORK/nccl_$v.err"
  [ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fail=1; }
  for r in 0 1; do
    grep "rank=$r " "$WORK/nccl_$v.out" >"$WORK/nccl_${v}_$r.out"
    expect_ok "$CHECK" "$WORK/nccl_${v}_rank$r.sltrace" --stdout "$WORK/nccl_${v}_$r.out"
  done
done
exit $fail
