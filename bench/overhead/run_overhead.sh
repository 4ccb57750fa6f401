#!/usr/bin/env bash
# bench/overhead/run_overhead.sh [BUILD_DIR] — the issue's overhead figures,
# side by side on one machine, as interleaved rounds (the VM's baseline moves
# by ±20 % between runs, so every round measures all modes back to back, in a
# rotating order, and the ratios are taken per round):
#   launches: empty-kernel launch loop (200k x 3 per run) plain / minimal CUPTI
#     subscriber enabling the same activity kinds (floor) / sightline;
#   after:    what the app pays once a capture is over (capture = first rep);
#   torch:    PyTorch x.add_(1) loop plain / torch.profiler (CUDA) / the floor
#             subscriber injected (libfloor_inject.so) / sightline.
# Every launch/torch run gives two numbers: wall time and the CPU time of the
# launching (Python) thread (LAUNCHCPU/TORCHCPU lines: without VM steal time;
# on the H200 VM they matched wall time, run F).
# Targets: sightline added cost <= 1.1x the floor's, <= 0.5x torch.profiler's,
# zero dropped records at 200k launches with default settings.
# Env: OVERHEAD_ROUNDS (9), OVERHEAD_TORCH_ROUNDS (5), OVERHEAD_SECONDS (no
# new launch/torch round starts after this many seconds of that part; 0 = no
# limit), OVERHEAD_AFTER_MODES ("plain sightline detach"; more: sightline-keep
# (subscriber kept), sightline-noflush, sightline-cuda, floor-disable,
# floor-late-disable, floor-armpre-disable, floor-armctx-disable,
# floor-finalize), OVERHEAD_AFTER_ROUNDS (3), OVERHEAD_PIN (e.g.
# "taskset -c 2-7"), OVERHEAD_PARTS ("launch after torch"),
# OVERHEAD_LAUNCH_MODES ("plain floor sightline"), OVERHEAD_TORCH_MODES
# ("plain torch.profiler floor sightline"); Python stacks and ops (issue 13):
# sightline-py, sightline-pygil, sightline-pytorch, sightline-pytorch-shapes,
# torch.profiler-shapes; OVERHEAD_TORCH_ARGS passes e.g. "--depth 20" or
# "--workload step" to torch_overhead.py; more modes: sightline-nobt (no
# sync-call backtraces), sightline-nolaunchapi (no cudaLaunchKernel records),
# sightline-kind (runtime records as the whole kind: the default before run H),
# floor-kernel (CUPTI kernel records only: the least any kernel tracer pays).
#   step:     a real training step (issue 17): the corpus scripts'
#             steady-state step median (CUDA events, printed by the script)
#             for OVERHEAD_STEP_SCRIPTS ("lm_train.py:eager cnn_train.py:fixed":
#             the eager transformer, whose GEMMs cuBLAS launches through the
#             driver API, and a bf16 channels_last CNN on cuDNN), modes
#             OVERHEAD_STEP_MODES ("plain floor-same sightline-records
#             sightline-default"): floor-same = a CUPTI subscriber recording
#             exactly the records sightline's default records for a Python
#             command, nothing else; sightline-records = sightline recording
#             the same (-t cuda,cuda-memory,nvtx,nccl: no call stacks);
#             sightline-default = plain `sightline profile` (sync-call
#             backtraces and Python stacks on); sightline-default-nodrv = the
#             default without the driver-launch API records and their callbacks
#             (SIGHTLINE_DRIVER_LAUNCH_RECORDS=0; sightline-nodrv: the same vs "sightline").
#             OVERHEAD_STEP_ROUNDS (5), OVERHEAD_STEP_ARGS ("--steps 300 --warmup 30").
#             Target: sightline-records' added cost <= 1.15x floor-same's.
set -uo pipefail
. "$(dirname "$0")/steal.sh"
B=${1:-${SIGHTLINE_BINARY_DIR:-build-gpu}}
SL=$B/tools/sightline/sightline
W=${SIGHTLINE_TEST_OUT:-$(mktemp -d)}
mkdir -p "$W"
export LD_LIBRARY_PATH="$B/deps:$B/injection:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
LO=$B/bench/overhead/launch_overhead
TO=$(dirname "$0")/torch_overhead.py
CHECK=$B/tests/gpu/sightline_trace_check
ROUNDS=${OVERHEAD_ROUNDS:-9}
TROUNDS=${OVERHEAD_TORCH_ROUNDS:-5}
PIN=${OVERHEAD_PIN:-}
PARTS=${OVERHEAD_PARTS:-launch after torch}
SECONDS_PER_PART=${OVERHEAD_SECONDS:-0}
AMODES=${OVERHEAD_AFTER_MODES:-plain sightline detach}
LMODES=${OVERHEAD_LAUNCH_MODES:-plain floor sightline}
TMODES=${OVERHEAD_TORCH_MODES:-plain torch.profiler floor sightline}
SMODES=${OVERHEAD_STEP_MODES:-plain floor-same sightline-records sightline-default}
SSCRIPTS=${OVERHEAD_STEP_SCRIPTS:-lm_train.py:eager cnn_train.py:fixed}
SROUNDS=${OVERHEAD_STEP_ROUNDS:-5}
EXAMPLES=$(cd "$(dirname "$0")/../../examples/pytorch" && pwd)
FLOOR=$B/bench/overhead/libfloor_inject.so
SLCLI=$SL
R=$W/overhead_rounds.txt
: >"$R"
val() { grep -o "$1=[0-9.]*" | head -1 | cut -d= -f2; }
fail=0
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
echo "rounds: $ROUNDS (launch), $TROUNDS (torch); pin: ${PIN:-none}"

# Sightline variants: "sightline" = default settings; the others change one
# setting to show where the cost is.
sl_env() {
  case $1 in
    # Python stacks are on by default for python commands since issue 13;
    # "sightline" keeps its earlier meaning (off) so runs stay comparable.
    sightline) echo "SIGHTLINE_QUIET=1 SIGHTLINE_PYTHON_BACKTRACE=off" ;;
    sightline-py) echo "SIGHTLINE_QUIET=1 SIGHTLINE_PYTHON_BACKTRACE=on" ;;  # Python stacks
    sightline-pygil) echo "SIGHTLINE_QUIET=1 SIGHTLINE_PYTHON_BACKTRACE=gil" ;;  # GIL holders only
    sightline-pytorch | sightline-pytorch-shapes)  # --pytorch[=shapes], stacks off
      echo "SIGHTLINE_QUIET=1 SIGHTLINE_PYTHON_BACKTRACE=off PYTHONPATH=$(realpath "$B")/share/sightline/python"
      [ "$1" = sightline-pytorch ] && echo "SIGHTLINE_PYTORCH=ops" || echo "SIGHTLINE_PYTORCH=shapes" ;;
    sightline-nobt) echo "SIGHTLINE_TRACE=cuda,nvtx,nccl" ;;  # no sync-call backtraces
    # The default without native backtraces only (memory records and Python
    # stacks kept): what the native stacks of syncs and allocations cost.
    sightline-nobt-mem) echo "SIGHTLINE_QUIET=1 SIGHTLINE_TRACE=cuda,cuda-memory,nvtx,nccl,python" ;;
    sightline-nolaunchapi) echo "SIGHTLINE_API_SKIP=cudaLaunchKernel" ;;  # no launch API records
    sightline-kind) echo "SIGHTLINE_RUNTIME_PER_API=0" ;;  # the whole RUNTIME kind, skips switched off
    sightline-records)  # floor-same's records, recorded by sightline: no stacks of any kind
      echo "SIGHTLINE_QUIET=1 SIGHTLINE_TRACE=cuda,cuda-memory,nvtx,nccl SIGHTLINE_PYTHON_BACKTRACE=off" ;;
    sightline-default) echo "SIGHTLINE_QUIET=1" ;;  # what `sightline profile -- python3 ...` does
    # Without the API records of direct driver launches (cuBLAS, cuDNN,
    # Triton), i.e. without driver-API callbacks: vs sightline / sightline-default.
    sightline-nodrv) echo "SIGHTLINE_QUIET=1 SIGHTLINE_PYTHON_BACKTRACE=off SIGHTLINE_DRIVER_LAUNCH_RECORDS=0" ;;
    sightline-default-nodrv) echo "SIGHTLINE_QUIET=1 SIGHTLINE_DRIVER_LAUNCH_RECORDS=0" ;;
    *) echo "unknown mode $1" >&2; echo "SIGHTLINE_QUIET=1" ;;
  esac
}

floor_kinds() {  # floor mode → SIGHTLINE_FLOOR_KINDS
  case $1 in
    floor-cbnvtx) echo callbacks-nvtx ;;
    floor-kernel | floor-same | floor-callbacks | floor-sub-none | floor-sub-resource | \
      floor-sub-attributes | floor-sub-nvtx) echo "${1#floor-}" ;;
    *) echo "FAIL: unknown floor mode $1" >&2; echo invalid ;;
  esac
}
monitor_env() {
  case $1 in
    monitor-noflush) echo "SIGHTLINE_QUIET=1 SIGHTLINE_FLUSH_MS=600000" ;;
    monitor-nonvml) echo "SIGHTLINE_QUIET=1 SIGHTLINE_NVML_LIB=/nonexistent" ;;
    monitor-nodefer) echo "SIGHTLINE_QUIET=1 SIGHTLINE_MONITOR_DEFER_CUPTI=0" ;;
    *) echo SIGHTLINE_QUIET=1 ;;
  esac
}

launch_one() {  # MODE ROUND: wall and launching-thread CPU µs per launch
  local o=$W/ov_l.out
  : >"$o"  # a mode that writes nothing reports nothing, not the previous mode's figure
  case $1 in
    plain) $PIN "$LO" --mode plain --reps=3 >"$o" ;;
    floor) $PIN "$LO" --mode floor --reps=3 >"$o" ;;
    # floor-kernel: kernel records only. The monitor's CUPTI state between
    # captures in parts: floor-callbacks (its one runtime callback),
    # floor-cbnvtx (the rest: resource domain, NVTX callbacks, activity
    # attributes), floor-sub-X (a subscriber with only X: none, resource,
    # attributes, nvtx). These loops make no NVTX call and NVTX is not routed
    # to CUPTI here (no NVTX_INJECTION64_PATH): floor-sub-nvtx is a control
    # (it should read as floor-sub-none) and floor-cbnvtx's NVTX part is idle;
    # monitor_overhead.sh measures NVTX on a real step.
    floor-*)
      local k
      k=$(floor_kinds "$1")
      if [ "$k" = invalid ]; then fail=1
      else SIGHTLINE_FLOOR_KINDS=$k $PIN "$LO" --mode floor --reps=3 >"$o"; fi ;;
    monitor | monitor-noflush | monitor-nonvml | monitor-nodefer)  # `sightline monitor`: no
      # capture opens in this loop (no steps, no anomaly); -noflush: without
      # the writer's periodic CUPTI flush; -nonvml: without NVML; -nodefer:
      # CUPTI subscribed from the start (the default before run M)
      env $(monitor_env "$1") $PIN "$SL" monitor -q -o "$W/ov_m.sltrace" -- "$LO" --mode plain --reps=3 >"$o" 2>"$W/ov_m.err" ||
        { echo "FAIL: round $2 monitor run"; tail -3 "$W/ov_m.err"; fail=1; }
      rm -f "$W"/ov_m*.sltrace ;;
    sightline*)
      env $(sl_env "$1") $PIN "$SL" profile -q -o "$W/ov_sl.sltrace" -- "$LO" --mode plain --reps=3 \
        >"$o" 2>"$W/ov_sl.err"
      # Zero loss at 600k launches, every round (checker: counts + losses).
      if [ "$1" != sightline-nolaunchapi ]; then
        "$CHECK" "$W/ov_sl.sltrace" --stdout "$o" >"$W/ov_sl.check" 2>&1 ||
          { echo "FAIL: round $2 $1 trace"; cat "$W/ov_sl.check"; fail=1; }
        [ "$2" = 1 ] && { cat "$W/ov_sl.check"; echo "trace size: $(du -h "$W/ov_sl.sltrace" | cut -f1)"; }
      fi
      rm -f "$W/ov_sl.sltrace" ;;
    *) echo "FAIL: unknown launch mode $1"; fail=1 ;;
  esac
  echo "launch $2 $1 $(val median_us_per_launch <"$o" || true)" | tee -a "$R"
  echo "launchcpu $2 $1 $(val median_cpu_us_per_launch <"$o" || true)" >>"$R"
}

torch_one() {  # MODE ROUND: wall and Python-thread CPU µs per op
  local o=$W/ov_t.out
  : >"$o"
  local args=(--ops 50000 --reps 3 ${OVERHEAD_TORCH_ARGS:-})
  case $1 in
    plain) $PIN python3 "$TO" --mode plain "${args[@]}" >"$o" 2>&1 ;;
    torch.profiler) $PIN python3 "$TO" --mode torch-profiler "${args[@]}" >"$o" 2>&1 ;;
    torch.profiler-shapes)  # CPU + CUDA activities, record_shapes=True (vs --pytorch=shapes)
      $PIN python3 "$TO" --mode torch-profiler-shapes "${args[@]}" >"$o" 2>&1 ;;
    floor | floor-kernel)  # floor-kernel: CUPTI kernel records only
      env $([ "$1" = floor-kernel ] && echo SIGHTLINE_FLOOR_KINDS=kernel) CUDA_INJECTION64_PATH=$FLOOR \
        $PIN python3 "$TO" --mode plain "${args[@]}" >"$o" 2>&1
      grep -q 'floor subscriber: [1-9]' "$o" || { echo "FAIL: floor injection did not record"; tail -3 "$o"; fail=1; } ;;
    floor-callbacks | floor-cbnvtx | floor-sub-*)  # as in launch_one; these record nothing
      local k
      k=$(floor_kinds "$1")
      if [ "$k" = invalid ]; then fail=1
      else env SIGHTLINE_FLOOR_KINDS=$k \
        CUDA_INJECTION64_PATH=$FLOOR $PIN python3 "$TO" --mode plain "${args[@]}" >"$o" 2>&1; fi ;;
    monitor | monitor-nodefer)
      env $(monitor_env "$1") $PIN "$SL" monitor -q -o "$W/ov_tm.sltrace" -- python3 "$TO" --mode plain "${args[@]}" >"$o" 2>&1 ||
        { echo "FAIL: round $2 monitor run"; tail -3 "$o"; fail=1; }
      rm -f "$W"/ov_tm*.sltrace ;;
    sightline*)
      env $(sl_env "$1") $PIN "$SL" profile -q -o "$W/ov_t.sltrace" -- python3 "$TO" --mode plain "${args[@]}" \
        >"$o" 2>&1
      if [ "$2" = 1 ] && [ -x "$SLCLI" ]; then  # what one op records
        echo "$1 round 1 trace: $(du -h "$W/ov_t.sltrace" | cut -f1)"
        "$SL" info "$W/ov_t.sltrace" 2>&1 | head -40
      fi
      rm -f "$W/ov_t.sltrace" ;;
    *) echo "FAIL: unknown torch mode $1 (monitor-noflush and monitor-nonvml are launch modes)"; fail=1 ;;
  esac
  echo "torch $2 $1 $(val median_us_per_op <"$o" || true)" | tee -a "$R"
  echo "torchcpu $2 $1 $(val median_cpu_us_per_op <"$o" || true)" >>"$R"
}

step_one() {  # MODE ROUND SCRIPT:VARIANT: the script's steady-state step median (ms)
  local o=$W/ov_s.out script=${3%%:*} variant=${3#*:} tag snap
  snap=$(stat_snapshot)
  [[ "$3" == *:* ]] || { echo "FAIL: OVERHEAD_STEP_SCRIPTS item '$3' is not SCRIPT:VARIANT"; fail=1; return; }
  tag=${script%.py}-$variant
  local cmd=(python3 "$EXAMPLES/$script" --variant "$variant" ${OVERHEAD_STEP_ARGS:---steps 300 --warmup 30})
  case $1 in
    plain) $PIN "${cmd[@]}" >"$o" 2>&1 ;;
    floor-same)
      SIGHTLINE_FLOOR_KINDS=same CUDA_INJECTION64_PATH=$FLOOR $PIN "${cmd[@]}" >"$o" 2>&1
      grep -q 'floor subscriber: [1-9]' "$o" || { echo "FAIL: floor injection did not record"; tail -3 "$o"; fail=1; } ;;
    sightline*)
      env $(sl_env "$1") $PIN "$SL" profile -q -o "$W/ov_s.sltrace" -- "${cmd[@]}" >"$o" 2>&1
      [ "$2" = 1 ] && "$SL" info "$W/ov_s.sltrace" 2>&1 | grep -E '^(status|losses)|^  (kernel|api) '
      rm -f "$W"/ov_s*.sltrace ;;
  esac
  local ms
  ms=$(grep -o 'SIGHTLINE_STEPS .*' "$o" | val median_ms)
  [ -n "$ms" ] || { echo "FAIL: $1 $3 printed no step time"; tail -5 "$o"; fail=1; ms=nan; }
  echo "step-$tag $2 $1 $ms" | tee -a "$R"
  echo "  steal during it: $(steal_pct "$snap") % of CPU time"
}

rotate() {  # ROUND MODES... -> the modes in an order that rotates with the round
  local r=$1; shift
  local m=("$@") n=$# k out=()
  for k in $(seq 0 $((n - 1))); do out+=("${m[$(( (r + k) % n ))]}"); done
  echo "${out[@]}"
}

in_time() {  # PART_START_EPOCH -> false once the part's time is spent
  [ "$SECONDS_PER_PART" = 0 ] || [ $(($(date +%s) - $1)) -lt "$SECONDS_PER_PART" ]
}

if [[ " $PARTS " == *" launch "* ]]; then
  t0=$(date +%s)
  for r in $(seq 1 "$ROUNDS"); do
    in_time "$t0" || { echo "launch: stopped after $((r - 1)) rounds (OVERHEAD_SECONDS)"; break; }
    for m in $(rotate "$r" $LMODES); do launch_one "$m" "$r"; done
  done
fi

after_one() {  # MODE ROUND: repetition 0 captured, 1..4 after the capture closed
  local lo=("$LO" --launches=100000 --reps=5 --capture-first-rep) v rc=0 env=()
  case $1 in
    plain) v=$($PIN "${lo[@]}" --mode plain | val after_median_us_per_launch) ;;
    monitor)  # `sightline monitor`, no capture: monitor mode does not act on cudaProfilerStart/Stop
      # (its windows are the agent's), so every rep runs as between captures
      $PIN "$SL" monitor -q -o "$W/ov_am.sltrace" -- "${lo[@]}" --mode plain >"$W/ov_a.out" 2>"$W/ov_a.err"
      rc=$?
      v=$(val after_median_us_per_launch <"$W/ov_a.out")
      [ $rc -eq 0 ] || { echo "FAIL: round $2 monitor run exited $rc"; tail -3 "$W/ov_a.err"; fail=1; }
      rm -f "$W"/ov_am*.sltrace ;;
    floor-disable | floor-finalize)  # CUPTI alone: kinds off (and cuptiFinalize) after rep 0
      v=$($PIN "${lo[@]}" --mode floor --after="${1#floor-}" | val after_median_us_per_launch) ;;
    floor-late-disable)  # the same, kinds enabled only after the context and module exist
      v=$($PIN "${lo[@]}" --mode floor --floor-late --after=disable | val after_median_us_per_launch) ;;
    floor-armpre-disable | floor-armctx-disable)  # late, but enabled and disabled once before
      # the context exists (pre) or from then until the module is loaded (ctx)
      local arm=${1#floor-arm}; arm=${arm%-disable}
      v=$($PIN "${lo[@]}" --mode floor --floor-arm="$arm" --after=disable |
          val after_median_us_per_launch) ;;
    sightline | sightline-keep | sightline-noflush | sightline-cuda | detach)
      case $1 in
        sightline-keep) env=(SIGHTLINE_DETACH=keep) ;;
        sightline-noflush) env=(SIGHTLINE_FLUSH_MS=600000) ;;  # no periodic CUPTI flush
        sightline-cuda) env=(SIGHTLINE_TRACE=cuda) ;;  # no NVTX, no backtrace callbacks
        detach) env=(SIGHTLINE_DETACH=1) ;;
      esac
      env "${env[@]}" $PIN "$SL" profile -o "$W/ov_a.sltrace" --capture-range cudaProfilerApi \
        --capture-range-end stop -- "${lo[@]}" --mode plain >"$W/ov_a.out" 2>"$W/ov_a.err"
      rc=$?
      v=$(val after_median_us_per_launch <"$W/ov_a.out")
      [ $rc -eq 0 ] || { echo "$1 run exited $rc"; tail -5 "$W/ov_a.err"; }
      [ "$2" = 1 ] && grep -h 'sightline: ' "$W/ov_a.err" | grep -v 'profiling pid' | head -3
      "$CHECK" "$W/ov_a.sltrace" --stdout "$W/ov_a.out" >"$W/ov_a.check" 2>&1 ||
        { echo "FAIL: after-capture trace ($1, round $2)"; cat "$W/ov_a.check"; fail=1; }
      rm -f "$W/ov_a.sltrace" ;;
  esac
  echo "after $2 $1 ${v:-nan} rc=$rc" | tee -a "$R"
}

if [[ " $PARTS " == *" after "* ]]; then
  for r in $(seq 1 "${OVERHEAD_AFTER_ROUNDS:-3}"); do
    for m in $(rotate "$r" $AMODES); do after_one "$m" "$r"; done
  done
fi

if [[ " $PARTS " == *" torch "* ]] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  t0=$(date +%s)
  for r in $(seq 1 "$TROUNDS"); do
    in_time "$t0" || { echo "torch: stopped after $((r - 1)) rounds (OVERHEAD_SECONDS)"; break; }
    for m in $(rotate "$r" $TMODES); do torch_one "$m" "$r"; done
  done
fi

if [[ " $PARTS " == *" step "* ]] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  t0=$(date +%s)
  for r in $(seq 1 "$SROUNDS"); do
    in_time "$t0" || { echo "step: stopped after $((r - 1)) rounds (OVERHEAD_SECONDS)"; break; }
    for sc in $SSCRIPTS; do
      for m in $(rotate "$r" $SMODES); do step_one "$m" "$r" "$sc"; done
    done
  done
fi

python3 - "$R" <<'PY'
import statistics as st, sys, collections, random
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 4 and f[3] not in ("nan", ""):
        rows[(f[0], int(f[1]))][f[2]] = float(f[3])
def q(xs, p):
    xs = sorted(xs); i = (len(xs) - 1) * p; lo = int(i); hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)
def report(part, base, ref, unit, target):
    modes = sorted({m for (p, _), v in rows.items() if p == part for m in v} - {base, ref})
    for m in modes:
        rounds = [v for (p, _), v in sorted(rows.items()) if p == part and {base, ref, m} <= v.keys()]
        if not rounds: continue
        med = {k: st.median(r[k] for r in rounds) for k in (base, ref, m)}
        ratios = [(r[m] - r[base]) / (r[ref] - r[base]) for r in rounds if r[ref] > r[base]]
        if not ratios: continue
        print(f"{part.upper()} {len(rounds)} rounds, medians: {base} {med[base]:.3f} {unit}, {ref} {med[ref]:.3f} "
              f"(+{med[ref]-med[base]:.3f}), {m} {med[m]:.3f} (+{med[m]-med[base]:.3f})")
        print(f"{part.upper()} {m} added / {ref} added: ratio of medians "
              f"{(med[m]-med[base])/(med[ref]-med[base]):.2f}x; per-round median {st.median(ratios):.2f}x "
              f"(quartiles {q(ratios,.25):.2f}..{q(ratios,.75):.2f}, n={len(ratios)})"
              + (f" target <= {target}" if m in ("sightline", "sightline-records") else ""))
        # The target, paired per round and without a division by a noisy
        # difference: excess = (m - base) - target * (ref - base); the target
        # holds where the median excess is <= 0. 95 % bootstrap interval of
        # that median over the rounds (resampled 4000 times, fixed seed).
        ex = [(r[m] - r[base]) - target * (r[ref] - r[base]) for r in rounds]
        rng = random.Random(1)
        boot = sorted(st.median(rng.choices(ex, k=len(ex))) for _ in range(4000))
        lo, hi = boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]
        verdict = "met" if hi <= 0 else "missed" if lo > 0 else "inconclusive"
        print(f"{part.upper()} {m} excess over {target}x {ref}'s added cost, per round: median "
              f"{st.median(ex):+.3f} {unit} (95% CI {lo:+.3f}..{hi:+.3f}, n={len(ex)}): {verdict}")
report("launch", "plain", "floor", "us/launch", 1.1)
report("launchcpu", "plain", "floor", "cpu-us/launch", 1.1)
report("torch", "plain", "torch.profiler", "us/op", 0.5)
report("torchcpu", "plain", "torch.profiler", "cpu-us/op", 0.5)
for part in sorted({p for (p, _) in rows if p.startswith("step-")}):
    report(part, "plain", "floor-same", "ms/step", 1.15)
after = [v for (p, _), v in sorted(rows.items()) if p == "after"]
if after:
    for m in sorted({m for r in after for m in r} - {"plain"}):
        xs = [(r[m] - r["plain"]) / r["plain"] * 100 for r in after if m in r and "plain" in r]
        if xs:
            print(f"AFTER capture closed, {m}: app slower than plain by median {st.median(xs):+.1f} % "
                  f"(runs: {', '.join(f'{x:+.1f}' for x in xs)})")
PY
exit $fail
