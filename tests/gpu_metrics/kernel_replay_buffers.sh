#!/usr/bin/env bash
# GPU script test: kernel replay of more launches than the activity-buffer
# pool holds (256) loses no record. CUPTI takes a new activity buffer at
# every replayed launch and can keep it out past plain flushes (H200,
# 2026-12-06, run BN: the LM's measured steps, 256 buffers out after 71 s,
# then 1334 records refused); the writer forces its flush once three
# quarters of the pool are out (lib/collect/buffer_pool.h
# PoolNeedsForcedFlush). The workload's 9 kernels x --repeat 40 = 360
# launches, every one replayed (--metrics-launches 0: no cap).
# Usage: kernel_replay_buffers.sh SIGHTLINE WORKLOAD. Exit 77 without a GPU.
source "$(dirname "$0")/../gpu/lib.sh"
SL="$1"; workload="$2"
out="${OUT:-$WORK}/kernel_replay_buffers"; mkdir -p "$out"
SIGHTLINE_METRICS_DEBUG=1 "$SL" profile --metrics full --metrics-replay kernel --metrics-launches 0 \
  -o "$out/kr.sltrace" -- "$workload" --repeat 40 > "$out/profile.log" 2>&1 ||
  { tail -20 "$out/profile.log"; echo "FAIL: profile"; exit 1; }
grep -E "launches profiled by kernel replay|writer:|lost" "$out/profile.log"
replayed=$(grep -o "[0-9]* launches profiled by kernel replay" "$out/profile.log" | tail -1 | cut -d' ' -f1)
if [ "${replayed:-0}" -le 256 ]; then
  echo "FAIL: ${replayed:-0} launches replayed, expected more than the pool's 256"; exit 1
fi
trace_complete_lossless "$out/kr.sltrace" "$replayed replayed launches"
[ $fail -eq 0 ] && echo "PASS: $replayed replayed launches, 0 lost"
exit $fail
