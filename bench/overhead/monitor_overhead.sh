#!/usr/bin/env bash
# Monitor-mode overhead on a real training step (issue 15: ≤ 1 % of step time).
#
# Interleaved rounds; every round runs, in an order that rotates with the
# round, the PyTorch LM training step (examples/pytorch/lm_train.py, eager,
# NVTX step ranges on in both modes) as
#   plain    python3 lm_train.py ...
#   monitor  sightline monitor -q --metrics-listen 127.0.0.1:0 -- python3 lm_train.py ...
# and reads each run's steady-state median step time from its SIGHTLINE_STEPS
# line (CUDA events, examples/pytorch/common.py). Prints one line per round
# and the median, min and max over rounds of the paired excess
# (monitor / plain - 1, in %). Each round says whether its monitored run took
# an anomaly capture (captured=N, its trace files: on a noisy machine the
# detector fires, CUPTI attaches, and the steps after pay tracing's
# after-effect); the median over rounds without one is printed too; and the
# VM's steal time during the round (steal=%, bench/overhead/steal.sh).
#   MONITOR_ROUNDS (10)  MONITOR_STEPS (400)  MONITOR_WARMUP (40)
#   MONITOR_ARGS ("--variant eager")  MONITOR_SCRIPT (examples/pytorch/lm_train.py)
#   MONITOR_PIN (e.g. "taskset -c 2-7": both modes pinned alike)
#   MONITOR_EXTRA ("": more modes measured in each round beside the pair, one
#     column each, run after the pair (not rotated)): `monitor` is the default
#     (no baseline capture; for this Python command the allocator hook, one
#     NVTX marker per optimizer step); floor-callbacks = CUPTI subscribed with
#     the monitor's one runtime callback and no activity kind
#     (libfloor_inject.so; the monitor also has NVTX and resource
#     callbacks); floor-cbnvtx = the rest of the monitor's CUPTI state
#     between captures, without the runtime callback: NVTX callbacks (NVTX
#     routed to CUPTI), resource domain and activity attributes;
#     monitor-inject = SIGHTLINE_MODE=monitor by plain injection (no
#     `sightline monitor` parent, no endpoint, no Python hook);
#     monitor-base = with the baseline capture (run K's
#     `monitor`; run K's `monitor-nobase` was the default without the hook);
#     monitor-nohook = --pytorch-memory off; monitor-nolisten = without the
#     endpoint; monitor-noflush = without the writer's periodic CUPTI flush
#     (every 500 ms otherwise); monitor-nonvml = without NVML;
#     monitor-nodefer = CUPTI subscribed from the start instead of at the
#     first capture (SIGHTLINE_MONITOR_DEFER_CUPTI=0, the default before run M);
#     monitor-nocapture = anomalies counted, no capture taken (--max-captures
#     0): monitoring alone on a machine noisy enough to fire the detector
#   MONITOR_SELF_COST (0): 1 = the `monitor` runs also time sightline's own
#     parts inside the process (SIGHTLINE_SELF_COST=1: its NVTX handlers on the
#     application's threads, the agent thread's CPU, CUPTI callbacks if
#     attached): one line per part and round, total and per step run
#     (warm-up included; the agent's CPU includes the start-up seconds)
#   SIGHTLINE_BIN (build/release/tools/sightline/sightline; or BUILD_DIR as the
#   first argument: BUILD_DIR/tools/sightline/sightline)
set -uo pipefail
. "$(dirname "$0")/steal.sh"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
. "$(dirname "$0")/sightline_bin.sh"
SL=$(sightline_bin "$ROOT" "${1:-}") || exit 2
SCRIPT=${MONITOR_SCRIPT:-$ROOT/examples/pytorch/lm_train.py}
ROUNDS=${MONITOR_ROUNDS:-10}
PIN=${MONITOR_PIN:-}
ARGS=(${MONITOR_ARGS:---variant eager} --nvtx --steps "${MONITOR_STEPS:-400}" --warmup "${MONITOR_WARMUP:-40}")
INJ=$(dirname "$(dirname "$SL")")/../injection/libsightline_inject.so
# libcupti the floor's NVTX goes to: the one the injection library loads.
CUPTI_LIB=${CUPTI_LIB:-$(ldd "$INJ" 2>/dev/null | sed -n 's/.*libcupti[^ ]* => \([^ ]*\).*/\1/p' | head -1)}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
[ -x "$SL" ] || { echo "no sightline binary at $SL" >&2; exit 2; }
median_ms() { sed -n 's/.*SIGHTLINE_STEPS.* median_ms=\([0-9.]*\).*/\1/p' "$1" | tail -1; }
one() {  # MODE ROUND
  local o="$W/$1.$2.out"
  rm -f "$W"/mon-*.sltrace
  case $1 in
    plain) $PIN python3 "$SCRIPT" "${ARGS[@]}" >"$o" 2>&1 ;;
    floor-callbacks) SIGHTLINE_FLOOR_KINDS=callbacks CUDA_INJECTION64_PATH=$(dirname "$(dirname "$SL")")/../bench/overhead/libfloor_inject.so \
               $PIN python3 "$SCRIPT" "${ARGS[@]}" >"$o" 2>&1 ;;
    floor-cbnvtx)
      # NVTX routed to CUPTI needs the libcupti file itself: without it the
      # callbacks never fire and the row would measure less than it says.
      [ -f "$CUPTI_LIB" ] || { echo "floor-cbnvtx: no libcupti file found (CUPTI_LIB='$CUPTI_LIB'; set CUPTI_LIB)" >&2; return; }
      SIGHTLINE_FLOOR_KINDS=callbacks-nvtx NVTX_INJECTION64_PATH=$CUPTI_LIB \
               CUDA_INJECTION64_PATH=$(dirname "$(dirname "$SL")")/../bench/overhead/libfloor_inject.so \
               $PIN python3 "$SCRIPT" "${ARGS[@]}" >"$o" 2>&1 ;;
    monitor-inject) SIGHTLINE_MODE=monitor SIGHTLINE_QUIET=1 SIGHTLINE_OUTPUT="$W/mon-%p.sltrace" \
               CUDA_INJECTION64_PATH=$INJ NVTX_INJECTION64_PATH=$INJ \
               $PIN python3 "$SCRIPT" "${ARGS[@]}" >"$o" 2>&1 ;;
    monitor-base | monitor-nohook | monitor-noflush | monitor-nonvml | monitor-nodefer | monitor-nocapture)  # one setting changed each
      local -a env_set=() opts=()
      case $1 in
        monitor-base) opts=(--baseline-capture on) ;;
        monitor-nocapture) opts=(--max-captures 0) ;;
        monitor-nohook) opts=(--pytorch-memory off) ;;
        monitor-noflush) env_set=(SIGHTLINE_FLUSH_MS=600000) ;;
        monitor-nonvml) env_set=(SIGHTLINE_NVML_LIB=/nonexistent) ;;
        monitor-nodefer) env_set=(SIGHTLINE_MONITOR_DEFER_CUPTI=0) ;;
      esac
      env "${env_set[@]}" SIGHTLINE_OUTPUT="$W/mon-%p.sltrace" $PIN "$SL" monitor -q \
        --metrics-listen 127.0.0.1:0 "${opts[@]}" -- python3 "$SCRIPT" "${ARGS[@]}" >"$o" 2>&1 ;;
    monitor-nolisten) SIGHTLINE_OUTPUT="$W/mon-%p.sltrace" $PIN "$SL" monitor -q \
               -- python3 "$SCRIPT" "${ARGS[@]}" >"$o" 2>&1 ;;
    monitor) SIGHTLINE_SELF_COST=${MONITOR_SELF_COST:-0} SIGHTLINE_OUTPUT="$W/mon-%p.sltrace" \
               $PIN "$SL" monitor -q --metrics-listen 127.0.0.1:0 \
               -- python3 "$SCRIPT" "${ARGS[@]}" >"$o" 2>&1
      local steps=$((${MONITOR_STEPS:-400} + ${MONITOR_WARMUP:-40}))
      sed -n 's/^sightline: self-cost \[pid [0-9]*\] \(.*\): \([0-9]*\) calls, .*total \([0-9.]*\) ms$/\1|\2|\3/p' "$o" |
        while IFS='|' read -r part calls total; do
          python3 -c "import sys; print(f'  round {sys.argv[1]} self-cost {sys.argv[2]}: {sys.argv[3]} calls, '
                      f'{float(sys.argv[4]):.3f} ms, {float(sys.argv[4]) * 1e3 / int(sys.argv[5]):.2f} us a step')" \
            "$2" "$part" "$calls" "$total" "$steps" >&2
        done ;;
  esac
  # A trace means the run took a capture (an anomaly on a noisy machine):
  # CUPTI attached, and the steps after it pay tracing's after-effect.
  ls "$W"/mon-*.sltrace 2>/dev/null | wc -l >"$W/$1.$2.captures"
  median_ms "$o"
}
echo "round plain_ms monitor_ms excess_pct"
for r in $(seq 1 "$ROUNDS"); do
  snap=$(stat_snapshot)
  if [ $((r % 2)) -eq 1 ]; then p=$(one plain "$r"); m=$(one monitor "$r")
  else m=$(one monitor "$r"); p=$(one plain "$r"); fi
  if [ -z "$p" ] || [ -z "$m" ]; then echo "round $r: a run printed no SIGHTLINE_STEPS line" >&2; cat "$W"/*."$r".out >&2; exit 1; fi
  extra=""
  for x in ${MONITOR_EXTRA:-}; do v=$(one "$x" "$r"); extra="$extra $x=$(python3 -c "import sys; print(f'{(float(sys.argv[1])/float(sys.argv[2])-1)*100:+.2f}%' if sys.argv[1] else 'nan')" "$v" "$p")"; done
  caps=$(cat "$W/monitor.$r.captures" 2>/dev/null || echo 0)
  python3 -c "import sys; p,m=float(sys.argv[2]),float(sys.argv[3]); print(f'{sys.argv[1]} {p:.4f} {m:.4f} {(m/p-1)*100:+.2f}{sys.argv[4]} steal={sys.argv[6]}% captured={sys.argv[5]}')" "$r" "$p" "$m" "$extra" "$caps" "$(steal_pct "$snap")" | tee -a "$W/rounds"
done
python3 - "$W/rounds" "$(dirname "$0")" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[2])
from paired_verdict import verdict
rows = [l.split() for l in open(sys.argv[1])]
ex = [float(r[3]) for r in rows]
quiet = [float(r[3]) for r in rows if r[-1] == "captured=0"]
q, v = verdict(ex)  # paired_verdict.py: decided only when most rounds agree
print(f"MONITOR_OVERHEAD rounds={len(ex)} median_excess_pct={statistics.median(ex):+.2f} "
      f"quartiles={q[0]:+.2f}..{q[2]:+.2f} min={min(ex):+.2f} max={max(ex):+.2f} target=+1.00 "
      f"{v}")
# Rounds whose monitored run took an anomaly capture measure the capture's
# cost as well as monitoring's: the median over the rounds without one.
if len(quiet) != len(ex):
    print(f"MONITOR_OVERHEAD_NO_CAPTURE rounds={len(quiet)} of {len(ex)} " +
          (f"median_excess_pct={statistics.median(quiet):+.2f}" if quiet else "(none)"))
PY
