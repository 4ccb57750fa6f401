#!/usr/bin/env bash
# Spread metric replay vs kernel replay vs ncu on the H200 (issue 4's wall-time
# target for multi-pass sets). Run from the repository root with a Release
# build folder carried over:
#   bench/metrics/gpu_spread.sh BUILD_DIR        → $OUT/spread/, $OUT/status.txt, $OUT/spread.tgz
# Budget: under 5 minutes (each step has its own timeout).
#
# Workload: examples/metrics (9 kernel configurations per repetition, each
# launched once per repetition), REPS repetitions so every configuration is
# launched at least as often as `full` needs passes (11 on GH100). One metric
# set per configuration everywhere:
#   spread   metrics_harness --replay spread --launches 1   (in-process; also
#            the user-replay variant: SIGHTLINE_METRICS_SPREAD_REPLAY=user)
#   kernel   metrics_harness --replay kernel --launches 1
#   ncu      --launch-count 9: the first 9 launches are the 9 configurations
#            of the first repetition (ncu's --kernel-id ::regex:NAME:1 counts
#            invocations per kernel *name*, and saxpy_loop has two
#            configurations, so it would profile 8).
#   inject   sightline profile --metrics full --metrics-replay spread|kernel
#            --metrics-launches 1 (needs collector.cc to build the hook config
#            with HookConfigFromCollectorConfig; the log says which mode ran)
set -u
build="${1:-build-kernel}"; out="${OUT:-$PWD/gpu-spread-out}"; work="$out/spread"; mkdir -p "$work"
export LD_LIBRARY_PATH="$PWD/$build/deps:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
bin="$build/tests/gpu_metrics"; sl="$build/tools/sightline/sightline"; ncu=/usr/local/cuda/bin/ncu
reps="${REPS:-12}"
status() { echo "$*" | tee -a "$out/status.txt"; }
now() { date +%s.%N; }
secs() { python3 -c "print(round($2-$1,3))"; }
ratio() { python3 -c "print(round($1/$2,3) if $2 else 'n/a')"; }
export SIGHTLINE_METRICS_DEBUG=1

# 0. The program alone.
t0=$(now); timeout 30 "$bin/metrics_workload_plain" --repeat "$reps" > "$work/plain.log" 2>&1
plain_rc=$?; plain_s=$(secs $t0 $(now))
status "plain x$reps rc=$plain_rc wall=${plain_s}s"

# In-process harness runs: NAME LABEL [ENV=VALUE...] -- HARNESS ARGS; sets
# NAME_rc and NAME_s and prints a status line.
harness() {
  local name=$1 label=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local t0; t0=$(now)
  env ${envs[@]+"${envs[@]}"} timeout 60 "$bin/metrics_harness" --metrics full --repeat "$reps" --launches 1 "$@" \
    > "$work/$name.log" 2>&1
  local rc=$? s; s=$(secs $t0 $(now))
  eval "${name}_rc=$rc; ${name}_s=$s"
  status "$label rc=$rc wall=${s}s :: $(grep -hE 'spread|sequence|warning|range profiler' "$work/$name.log" | tr '\n' ' ' | cut -c1-900)"
}

# 1. Spread replay (application / user replay), sequence replay, kernel
# replay; one set per configuration; values + wall time.
harness spread "spread (application replay)" -- --replay spread --json "$work/spread.jsonl" \
  --trace "$work/spread.sltrace"
harness spread_user "spread (user replay)" SIGHTLINE_METRICS_SPREAD_REPLAY=user -- --replay spread \
  --json "$work/spread_user.jsonl"
harness sequence "sequence" -- --replay sequence --json "$work/sequence.jsonl" \
  --trace "$work/sequence.sltrace"
harness kernel "kernel replay" -- --replay kernel --json "$work/kernel.jsonl"
spreadu_s=$spread_user_s; seq_s=$sequence_s

# The metric list (as our profiler resolved `full` on this chip).
list=$(python3 -c "
import json
for f in ('$work/kernel.jsonl', '$work/spread.jsonl'):
    try:
        for l in open(f):
            o = json.loads(l)
            if o.get('metrics'): print(','.join(o['metrics'])); raise SystemExit
    except FileNotFoundError: pass")
status "metrics ($(echo "$list" | tr ',' '\n' | grep -c .)): $list"

# 3. ncu, same list, one launch per configuration.
t0=$(now)
timeout 90 "$ncu" --clock-control none --cache-control none --launch-count 9 --metrics "$list" --csv \
  "$bin/metrics_workload_plain" --repeat "$reps" > "$work/ncu.csv" 2> "$work/ncu.stderr"
ncu_rc=$?; ncu_s=$(secs $t0 $(now))
status "ncu -c 9 rc=$ncu_rc wall=${ncu_s}s"

# 4. The injected path (sightline profile), both modes.
for mode in spread sequence kernel; do
  t0=$(now)
  timeout 90 "$sl" profile --metrics full --metrics-replay $mode --metrics-launches 1 \
    -o "$work/inject_$mode.sltrace" -- "$bin/metrics_workload_plain" --repeat "$reps" \
    > "$work/inject_$mode.log" 2>&1
  rc=$?; s=$(secs $t0 $(now)); eval "inject_${mode}_s=$s"
  status "inject $mode rc=$rc wall=${s}s :: $(grep -hE 'metrics|spread|warning' "$work/inject_$mode.log" | tr '\n' ' ' | cut -c1-700)"
done

# 5. Ratios and values.
status "RATIOS vs ncu (${ncu_s}s): sequence $(ratio $seq_s $ncu_s), inject-sequence $(ratio $inject_sequence_s $ncu_s), spread $(ratio $spread_s $ncu_s), spread-user $(ratio $spreadu_s $ncu_s), kernel $(ratio $kernel_s $ncu_s), inject-spread $(ratio $inject_spread_s $ncu_s), inject-kernel $(ratio $inject_kernel_s $ncu_s), plain $(ratio $plain_s $ncu_s)"
for f in sequence spread spread_user kernel; do
  [ -s "$work/$f.jsonl" ] || { status "values $f: no output"; continue; }
  timeout 30 python3 tests/gpu_metrics/compare_spread.py "$work/$f.jsonl" "$work/ncu.csv" --label "$f" \
    --out "$work/compare_$f.json" > "$work/compare_$f.txt" 2>&1
  status "values $f rc=$? :: $(tail -1 "$work/compare_$f.txt" | cut -c1-400)"
done
# Perturbation: kernel durations of the spread run (its kernels are not
# replayed) against a trace of the program without metrics. Median and max per
# kernel name over all launches (11 of the 12 launches per configuration ran
# with counters on).
timeout 60 "$sl" profile -o "$work/nometrics.sltrace" -- "$bin/metrics_workload_plain" --repeat "$reps" \
  > "$work/nometrics.log" 2>&1
for t in nometrics spread sequence; do
  timeout 60 "$sl" export "$work/$t.sltrace" --format chrome -o "$work/$t.chrome.json" > "$work/$t.export.log" 2>&1
done
for t in spread sequence; do
timeout 30 python3 - "$work/nometrics.chrome.json" "$work/$t.chrome.json" > "$work/durations_$t.txt" 2>&1 <<'PY'
import json, statistics, sys
def durs(path):
    try:
        ev = json.load(open(path))
    except Exception as e:
        print("cannot read", path, e); return {}
    ev = ev.get("traceEvents", ev) if isinstance(ev, dict) else ev
    out = {}
    for e in ev:
        if e.get("ph") != "X" or "dur" not in e: continue
        n = str(e.get("name", ""))
        if not any(k in n for k in ("matmul", "transpose", "register_heavy", "shared_heavy", "divergent", "saxpy")): continue
        out.setdefault(n.split("(")[0], []).append(float(e["dur"]))
    return out
a, b = durs(sys.argv[1]), durs(sys.argv[2])
for n in sorted(set(a) | set(b)):
    x, y = a.get(n, []), b.get(n, [])
    if x and y:
        print(f"{n:40} plain median {statistics.median(x):10.2f} us  spread median {statistics.median(y):10.2f} us "
              f"({100*(statistics.median(y)/statistics.median(x)-1):+.1f}%)  spread max {max(y):10.2f}  n={len(x)}/{len(y)}")
    else:
        print(f"{n:40} plain n={len(x)} spread n={len(y)}")
PY
status "durations ($t vs no metrics) :: $(tr '\n' ';' < "$work/durations_$t.txt" | cut -c1-1500)"
done
tar czf "$out/spread.tgz" -C "$out" spread
