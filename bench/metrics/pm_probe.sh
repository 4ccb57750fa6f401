#!/usr/bin/env bash
# Runs the PM-sampling probe (bench/metrics/pm_probe.cu) on the GPU machine:
#   bench/metrics/pm_probe.sh BUILD_DIR [pm_probe options...]
# Full output → $OUT/pm_probe.txt when OUT is set (else ./pm_probe.txt); the
# key lines are repeated at the end so a short log tail shows the answer.
# Limit: 120 s (the probe's own watchdog fires at 110 s).
set -u
build="${1:?usage: pm_probe.sh BUILD_DIR [options]}"
shift
bin="$build/bench/metrics/pm_probe"
[ -x "$bin" ] || { echo "pm_probe.sh: $bin not built (ninja -C $build pm_probe)"; exit 2; }
libs="/usr/local/cuda/lib64"
[ -d /usr/local/cuda/extras/CUPTI/lib64 ] && libs="$libs:/usr/local/cuda/extras/CUPTI/lib64"
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  log="$OUT/pm_probe.txt"
else
  log="$PWD/pm_probe.txt"
fi
timeout 120 "$bin" "$@" > "$log" 2>&1
rc=$?
listed=$(grep -c '^PM_PROBE step=base_metric ' "$log")
echo "pm_probe rc=$rc ($listed base metrics listed), log: $log"
# The key lines: not the long lists (base metrics, submetrics, tests of the
# enumerated metrics, each greedy step, per-phase values); those are in $log.
grep -vE '^PM_PROBE step=(base_metric|submetrics|phase_stats|combine) |source=base' \
  "$log" | grep -E '^PM_PROBE (step=|done)' | cut -c1-240
exit $rc
