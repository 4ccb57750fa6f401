#!/usr/bin/env bash
# PM sampling's overhead on a real training step (issue 14 item 4: <= 1 % of
# step time).
#
# Interleaved rounds; each runs the same PyTorch training script
# (examples/pytorch, CUDA-event step times), in an order that rotates with the
# round, under
#   trace    sightline profile -- python3 SCRIPT ...
#   gm       sightline profile --gpu-metrics -- ...            (the default rate)
#   gmHZ     sightline profile --gpu-metrics --gpu-metrics-frequency HZ -- ...
# so each gm mode differs from `trace` by PM sampling alone, and reads each
# run's steady-state median step time from its SIGHTLINE_STEPS line. Prints
# one line per round (the trace median, then per gm mode the paired excess
# gm / trace - 1 in % and the sampler's own cost from its summary line: share
# of one core, samples kept and missing) and a verdict per mode.
#   PM_ROUNDS (8)  PM_STEPS (200)  PM_WARMUP (20)  PM_MODES ("gm")
#   PM_SCRIPT (examples/pytorch/lm_train.py)  PM_ARGS ("--variant eager")
#   PM_PIN (e.g. "taskset -c 2-9": every mode pinned alike)
#   SIGHTLINE_BIN (build/release/tools/sightline/sightline; or BUILD_DIR as the
#   first argument: BUILD_DIR/tools/sightline/sightline)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
. "$(dirname "$0")/../overhead/sightline_bin.sh"
SL=$(sightline_bin "$ROOT" "${1:-}") || exit 2
SCRIPT=${PM_SCRIPT:-$ROOT/examples/pytorch/lm_train.py}
ROUNDS=${PM_ROUNDS:-8}
PIN=${PM_PIN:-}
ARGS=(${PM_ARGS:---variant eager} --steps "${PM_STEPS:-200}" --warmup "${PM_WARMUP:-20}")
MODES=(trace ${PM_MODES:-gm})
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
[ -x "$SL" ] || { echo "no sightline binary at $SL" >&2; exit 2; }
one() {  # MODE ROUND → median step ms
  local o="$W/$1.$2.out" extra=()
  case $1 in
    trace) ;;
    gm) extra=(--gpu-metrics) ;;
    gm[0-9]*) extra=(--gpu-metrics --gpu-metrics-frequency "${1#gm}") ;;
    *) echo "unknown mode $1" >&2; return ;;
  esac
  (cd "$(dirname "$SCRIPT")" && $PIN "$SL" profile -o "$W/t.sltrace" "${extra[@]}" -- \
    python3 "$SCRIPT" "${ARGS[@]}") >"$o" 2>&1
  sed -n 's/.*SIGHTLINE_STEPS.* median_ms=\([0-9.]*\).*/\1/p' "$o" | tail -1
}
echo "round trace_ms ${MODES[*]:1} (excess_pct core_pct kept missing each)"
n=${#MODES[@]}
for r in $(seq 1 "$ROUNDS"); do
  declare -A ms=()
  for k in $(seq 0 $((n - 1))); do  # rotate the order with the round
    m=${MODES[$(((k + r) % n))]}
    ms[$m]=$(one "$m" "$r")
    if [ -z "${ms[$m]}" ]; then echo "round $r: $m printed no SIGHTLINE_STEPS line" >&2; tail -5 "$W/$m.$r.out" >&2; exit 1; fi
  done
  line="$r ${ms[trace]}"
  for m in "${MODES[@]:1}"; do
    core=$(sed -n 's/.*(\([0-9.]*\) % of one core).*/\1/p' "$W/$m.$r.out" | head -1)
    km=$(sed -n 's/.*GPU metrics: \([0-9]*\) samples kept, \([0-9]*\) missing.*/\1 \2/p' "$W/$m.$r.out" | head -1)
    line="$line $m $(python3 -c "import sys; print(f'{(float(sys.argv[1])/float(sys.argv[2])-1)*100:+.2f}')" "${ms[$m]}" "${ms[trace]}") ${core:-nan} ${km:-nan nan}"
  done
  echo "$line" | tee -a "$W/rounds"
  unset ms
done
python3 - "$W/rounds" "$(dirname "$0")/../overhead" "${MODES[@]:1}" <<'PY'
import statistics, sys
sys.path.insert(0, sys.argv[2])
from paired_verdict import verdict  # decided only when most rounds agree
rows = [l.split() for l in open(sys.argv[1])]
for i, mode in enumerate(sys.argv[3:]):
    base = 2 + 5 * i
    ex = [float(r[base + 1]) for r in rows]
    core = [float(r[base + 2]) for r in rows if r[base + 2] != "nan"]
    q, v = verdict(ex)
    print(f"PM_OVERHEAD mode={mode} rounds={len(ex)} median_excess_pct={statistics.median(ex):+.2f} "
          f"quartiles={q[0]:+.2f}..{q[2]:+.2f} min={min(ex):+.2f} max={max(ex):+.2f} "
          f"sampler_core_pct={statistics.median(core) if core else float('nan'):.1f} target=+1.00 {v}")
PY
