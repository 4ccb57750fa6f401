#!/usr/bin/env bash
# The collector's fault matrix, GPU rows (docs/reliability.md). Each row runs
# tests/gpu/fault_app.cu under `sightline profile` and checks:
#   - the app's result equals an unprofiled run's (profiling changes nothing);
#   - the trace is complete and holds exactly the kernels the app launched
#     (sightline_trace_check --keys kernel), or the loss is counted;
#   - long run: bounded memory and timestamps that track the wall clock.
# FAULT_LONG_S sets the long run's length (default 60 s; the matrix's row is
# one hour: FAULT_LONG_S=3600, at 100 k launches/s). FAULT_ONLY_LONG=1 runs
# the long row alone (a long run that needs a command's whole time limit).
source "$(dirname "$0")/lib.sh"
APP=$B/tests/gpu/sightline_fault_app
LONG_S=${FAULT_LONG_S:-60}
PROFILE_ARGS=()

field() {  # field TRACE PYEXPR (on `sightline info --format json` as d)
  "$SL" info "$1" --format json | python3 -c "import json,sys; d=json.load(sys.stdin); print($2)"
}
result_of() { sed -n 's/^FAULT_APP result=//p' "$1"; }

row() {  # row NAME ALLOW_LOSS APP_ARGS...
  local name=$1 allow=$2; shift 2
  note "$name: $*"
  "$APP" "$@" > "$WORK/$name.plain.out" 2> "$WORK/$name.plain.err" || { echo "FAIL $name: plain run"; fail=1; return; }
  "$SL" profile "${PROFILE_ARGS[@]}" -o "$WORK/$name.sltrace" -- "$APP" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err"
  local rc=$?
  [ $rc -eq 0 ] || { echo "FAIL $name: profiled run exited $rc"; tail -5 "$WORK/$name.err"; fail=1; return; }
  local want got
  want=$(result_of "$WORK/$name.plain.out"); got=$(result_of "$WORK/$name.out")
  if [ -n "$want" ] && [ "$want" = "$got" ]; then echo "PASS $name: result $got as unprofiled";
  else echo "FAIL $name: result '$got' profiled, '$want' unprofiled"; fail=1; fi
  local extra=()
  [ "$allow" = loss ] && extra=(--allow-loss)
  expect_ok "$CHECK" "$WORK/$name.sltrace" --stdout "$WORK/$name.out" --keys kernel "${extra[@]}"
  echo "  $(field "$WORK/$name.sltrace" "'complete=%s lost=%s kernels=%s' % (d['complete'], d['lost_records'], d['counts'].get('kernel'))")"
}

if [ "${FAULT_ONLY_LONG:-0}" != 1 ]; then
  row threads16 exact threads 16 20000
  row graph_capture exact graph-capture 50 200
  row device_reset exact device-reset 1000
  row two_contexts exact two-contexts 1000
  # Launches the metrics hook does not see one by one (a CUDA graph's
  # kernels, a cooperative launch) under sequence metrics: no metric pass may
  # hold them (KernelLaunchHook::OnUnhookedWork). The step (8 eager launches,
  # then the graph) is realigned to begin after the graph, each pass ends at
  # it, and the eager kernels get their sets; every kernel keeps its record.
  PROFILE_ARGS=(--metrics full --metrics-replay sequence)
  for coop in 0 1; do
    name=graph_in_pass; [ $coop = 1 ] && name=coop_in_pass
    row $name exact graph-steps 300 8 3 $coop
    grep -E "graph or cooperative|sequence replay|warning" "$WORK/$name.err" | cut -c1-400 | head -6
    if grep -q "FAULT_APP cooperative=$coop" "$WORK/$name.out"; then :; else
      echo "NOTE $name: the device refused cooperative launches; the row ran without one"; fi
    sets=$(sed -n 's/.*sequence replay[^:]*: [0-9]* sequences, \([0-9]*\) kernel sets complete.*/\1/p' "$WORK/$name.err" | head -1)
    if [ "${sets:-0}" -ge 8 ]; then
      echo "PASS $name: $sets kernel sets from steps that end with a graph launch"
    else
      echo "FAIL $name: ${sets:-no} kernel sets (expected the step's 8 eager launches)"; fail=1
    fi
    echo "  $(field "$WORK/$name.sltrace" "'untraced_kernels_lost=%s' % d['losses']['untraced_kernels_lost']")"
  done
  # Eager launches on one stream while the same thread captures another
  # (thread-local mode), under sequence metrics: while a capture is in
  # progress no launch reaches the metrics hook, whose range-profiler calls
  # would invalidate it (stream_capture.h); the program's result and every
  # kernel are as without metrics.
  row graph_capture_metrics exact graph-capture 50 200
  PROFILE_ARGS=()
fi

note "long run: $LONG_S s at 100 k launches/s"
"$SL" profile -o "$WORK/long.sltrace" -- "$APP" long "$LONG_S" 100000 > "$WORK/long.out" 2> "$WORK/long.err"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL long: exited $rc"; fail=1; }
cat "$WORK/long.out"
# Loss is allowed only if counted (CUPTI drops under a full pool are written
# into the trace); trace_check compares the rest.
"$CHECK" "$WORK/long.sltrace" --stdout "$WORK/long.out" --keys kernel --allow-loss --count-only \
  > "$WORK/long.check" || { echo "FAIL long: trace check"; fail=1; }
cat "$WORK/long.check"
read -r launches span rss10 rssend < <(sed -n 's/^FAULT_APP launches=\([0-9]*\) span_s=\([0-9.]*\) rss_kb_10pct=\([0-9-]*\) rss_kb_end=\([0-9-]*\)/\1 \2 \3 \4/p' "$WORK/long.out")
# The kernels' own span (first start to last end, CUPTI's clock) against the
# app's span of the same launches (first to last launch, CLOCK_MONOTONIC):
# the trace's whole span also holds the start-up before the timed loop.
tspan=$(sed -n 's/^KERNEL_SPAN .* span_s=\([0-9.]*\)$/\1/p' "$WORK/long.check")
tspan=${tspan:-0}
echo "long: whole trace span $(field "$WORK/long.sltrace" "d['span_ns'] / 1e9") s (start-up included)"
lost=$(field "$WORK/long.sltrace" "d['lost_records']")
kernels=$(field "$WORK/long.sltrace" "d['counts'].get('kernel', 0)")
echo "long: $launches launches over ${span} s; trace: $kernels kernels + $lost lost over ${tspan} s; app RSS ${rss10} kB at 10 %, ${rssend} kB at the end"
python3 - "$launches" "$kernels" "$lost" "$span" "$tspan" "$rss10" "$rssend" <<'EOF' || fail=1
import sys
launches, kernels, lost = (int(x) for x in sys.argv[1:4])
span, tspan = float(sys.argv[4]), float(sys.argv[5])
rss10, rssend = int(sys.argv[6]), int(sys.argv[7])
ok = True
if kernels + lost < launches:
    print(f"FAIL long: {launches - kernels - lost} kernels neither in the trace nor counted lost"); ok = False
# The kernels' span (CUPTI clock) tracks the launches' wall span: no drift
# beyond 0.1 % + 50 ms.
print(f"long: kernel span {tspan:.6f} s vs launch span {span:.6f} s: {(tspan / span - 1) * 100 if span else 0:+.4f} %")
if lost > 0:
    print(f"long: {lost} records lost: the first or last kernel may be among them, drift not judged")
elif abs(tspan - span) > 0.001 * span + 0.05:
    print(f"FAIL long: kernel span {tspan:.3f} s vs wall {span:.3f} s (drift)"); ok = False
# Memory after the first tenth stays flat (pool + one chunk; no growth per launch).
if rss10 > 0 and rssend - rss10 > 64 * 1024:
    print(f"FAIL long: RSS grew {rssend - rss10} kB after the first 10 %"); ok = False
print("PASS long: counted, no drift, bounded memory" if ok else "")
sys.exit(0 if ok else 1)
EOF

[ $fail -eq 0 ] && echo "fault matrix: all GPU rows passed"
exit $fail
