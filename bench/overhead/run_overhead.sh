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
# Targets: sightline added cost <= 1.1x the floor's, <= 0.5x torch.profiler's,
# zero dropped records at 200k launches with default settings.
# Env: OVERHEAD_ROUNDS (9), OVERHEAD_TORCH_ROUNDS (5), OVERHEAD_PIN (e.g.
# "taskset -c 2-7"), OVERHEAD_PARTS ("launch after torch"),
# OVERHEAD_LAUNCH_MODES ("plain floor sightline"), OVERHEAD_TORCH_MODES
# ("plain torch.profiler floor sightline"); more modes: sightline-nobt (no
# sync-call backtraces), sightline-nolaunchapi (no cudaLaunchKernel records).
set -uo pipefail
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
LMODES=${OVERHEAD_LAUNCH_MODES:-plain floor sightline}
TMODES=${OVERHEAD_TORCH_MODES:-plain torch.profiler floor sightline}
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
    sightline) echo "SIGHTLINE_QUIET=1" ;;
    sightline-nobt) echo "SIGHTLINE_TRACE=cuda,nvtx,nccl" ;;  # no sync-call backtraces
    sightline-nolaunchapi) echo "SIGHTLINE_API_SKIP=cudaLaunchKernel" ;;  # no launch API records
    *) echo "unknown mode $1" >&2; echo "SIGHTLINE_QUIET=1" ;;
  esac
}

launch_one() {  # MODE ROUND
  local v
  case $1 in
    plain) v=$($PIN "$LO" --mode plain --reps=3 | val median_us_per_launch) ;;
    floor) v=$($PIN "$LO" --mode floor --reps=3 | val median_us_per_launch) ;;
    sightline*)
      env $(sl_env "$1") $PIN "$SL" profile -q -o "$W/ov_sl.sltrace" -- "$LO" --mode plain --reps=3 \
        >"$W/ov_sl.out" 2>"$W/ov_sl.err"
      v=$(val median_us_per_launch <"$W/ov_sl.out")
      # Zero loss at 600k launches, every round (checker: counts + losses).
      if [ "$1" != sightline-nolaunchapi ]; then
        "$CHECK" "$W/ov_sl.sltrace" --stdout "$W/ov_sl.out" >"$W/ov_sl.check" 2>&1 ||
          { echo "FAIL: round $2 $1 trace"; cat "$W/ov_sl.check"; fail=1; }
        [ "$2" = 1 ] && { cat "$W/ov_sl.check"; echo "trace size: $(du -h "$W/ov_sl.sltrace" | cut -f1)"; }
      fi
      rm -f "$W/ov_sl.sltrace" ;;
  esac
  echo "launch $2 $1 ${v:-nan}" | tee -a "$R"
}

torch_one() {  # MODE ROUND
  local v
  local args=(--ops 50000 --reps 3)
  case $1 in
    plain) v=$($PIN python3 "$TO" --mode plain "${args[@]}" 2>&1 | val median_us_per_op) ;;
    torch.profiler) v=$($PIN python3 "$TO" --mode torch-profiler "${args[@]}" 2>&1 | val median_us_per_op) ;;
    floor)
      CUDA_INJECTION64_PATH=$FLOOR $PIN python3 "$TO" --mode plain "${args[@]}" >"$W/ov_f.out" 2>&1
      grep -q 'floor subscriber: [1-9]' "$W/ov_f.out" || { echo "FAIL: floor injection did not record"; tail -3 "$W/ov_f.out"; fail=1; }
      v=$(val median_us_per_op <"$W/ov_f.out") ;;
    sightline*)
      env $(sl_env "$1") $PIN "$SL" profile -q -o "$W/ov_t.sltrace" -- python3 "$TO" --mode plain "${args[@]}" \
        >"$W/ov_t.out" 2>&1
      v=$(val median_us_per_op <"$W/ov_t.out")
      if [ "$2" = 1 ] && [ -x "$SLCLI" ]; then  # what one op records
        echo "$1 round 1 trace: $(du -h "$W/ov_t.sltrace" | cut -f1)"
        "$SL" info "$W/ov_t.sltrace" 2>&1 | head -40
      fi
      rm -f "$W/ov_t.sltrace" ;;
  esac
  echo "torch $2 $1 ${v:-nan}" | tee -a "$R"
}

rotate() {  # ROUND MODES... -> the modes in an order that rotates with the round
  local r=$1; shift
  local m=("$@") n=$# k out=()
  for k in $(seq 0 $((n - 1))); do out+=("${m[$(( (r + k) % n ))]}"); done
  echo "${out[@]}"
}

if [[ " $PARTS " == *" launch "* ]]; then
  for r in $(seq 1 "$ROUNDS"); do
    for m in $(rotate "$r" $LMODES); do launch_one "$m" "$r"; done
  done
fi

if [[ " $PARTS " == *" after "* ]]; then
  # Capture = repetition 0; repetitions 1..4 run after the capture closed.
  for r in 1 2 3; do
    v=$($PIN "$LO" --mode plain --launches=100000 --reps=5 --capture-first-rep | val after_median_us_per_launch)
    echo "after $r plain $v" | tee -a "$R"
    $PIN "$SL" profile -q -o "$W/ov_a.sltrace" --capture-range cudaProfilerApi --capture-range-end stop -- \
      "$LO" --mode plain --launches=100000 --reps=5 --capture-first-rep >"$W/ov_a.out" 2>"$W/ov_a.err"
    rc=$?
    echo "after $r sightline $(val after_median_us_per_launch <"$W/ov_a.out") rc=$rc" | tee -a "$R"
    "$CHECK" "$W/ov_a.sltrace" --stdout "$W/ov_a.out" >"$W/ov_a.check" 2>&1 ||
      { echo "FAIL: after-capture trace"; cat "$W/ov_a.check"; fail=1; }
    rm -f "$W/ov_a.sltrace"
    SIGHTLINE_DETACH=1 $PIN "$SL" profile -o "$W/ov_d.sltrace" --capture-range cudaProfilerApi \
      --capture-range-end stop -- "$LO" --mode plain --launches=100000 --reps=5 --capture-first-rep \
      >"$W/ov_d.out" 2>"$W/ov_d.err"
    rc=$?
    echo "after $r detach $(val after_median_us_per_launch <"$W/ov_d.out") rc=$rc" | tee -a "$R"
    [ $rc -eq 0 ] || { echo "detach run exited $rc"; tail -5 "$W/ov_d.err"; }
    grep -h 'sightline: ' "$W/ov_d.err" | grep -v 'profiling pid' | head -3
    rm -f "$W/ov_d.sltrace"
  done
fi

if [[ " $PARTS " == *" torch "* ]] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  for r in $(seq 1 "$TROUNDS"); do
    for m in $(rotate "$r" $TMODES); do torch_one "$m" "$r"; done
  done
fi

python3 - "$R" <<'PY'
import statistics as st, sys, collections
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 4 and f[3] != "nan":
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
              + (f" target <= {target}" if m == "sightline" else ""))
report("launch", "plain", "floor", "us/launch", 1.1)
report("torch", "plain", "torch.profiler", "us/op", 0.5)
after = [v for (p, _), v in sorted(rows.items()) if p == "after"]
if after:
    for m in ("sightline", "detach"):
        xs = [(r[m] - r["plain"]) / r["plain"] * 100 for r in after if m in r and "plain" in r]
        if xs:
            print(f"AFTER capture closed, {m}: app slower than plain by median {st.median(xs):+.1f} % "
                  f"(runs: {', '.join(f'{x:+.1f}' for x in xs)})")
PY
exit $fail
