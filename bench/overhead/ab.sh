#!/usr/bin/env bash
# bench/overhead/ab.sh BUILD_DIR — what one part of the CUPTI state costs a
# step, measured in-process: the floor subscriber (SIGHTLINE_FLOOR_KINDS=same,
# the records sightline's default makes) with that part switched off and on
# every AB_MS while the workload runs (SIGHTLINE_FLOOR_AB), each step logged
# with its host time; ab_split.py pairs the stretches without it with their
# neighbours with it. Between processes the same step moves by ±15 % on the
# H200, more than the parts measured here; stretches a quarter of a second
# apart in one process do not.
#   AB_CASES  WORKLOAD:EXTRA:PART ... (default below): WORKLOAD lm (the eager
#             transformer step, ms a step), cnn (the bf16 channels_last CNN
#             step on cuDNN, ms a step; AB_LM_STEPS steps) or op (x.add_(1),
#             µs an op); EXTRA
#             the floor's SIGHTLINE_FLOOR_EXTRA; PART what is switched
#             (subscriber: the extra subscriber itself; stackcb: the callbacks
#             sightline's Python stacks enable; flush, with EXTRA flush: the
#             periodic cuptiActivityFlushAll; writer, with EXTRA writer: the
#             writer thread that reads and clears each completed buffer, off =
#             read where CUPTI completes it); PART sightline-stacks runs
#             `sightline profile` (default mode) instead of the floor and
#             switches its own Python-stack callbacks, sightline's code in
#             them included (SIGHTLINE_AB_STACKS_MS,
#             lib/collect/collector_stack_ab.cc; EXTRA unused, e.g. "-")
#             PART sightline-pystacks switches only what Python stacks add to
#             the default (SIGHTLINE_AB_STACKS_PART=python: the stack walk
#             and the copy/memset callbacks; the launch callbacks that
#             driver-launch records need stay on in both)
#             PART sightline-pm runs `sightline profile --gpu-metrics`
#             (AB_PM_FREQ Hz, default 1000) and stops and starts the PM
#             sampling every AB_MS (SIGHTLINE_AB_PM_MS,
#             lib/collect/pm_sampler.cc): what --gpu-metrics costs a step
#   AB_PROCS (3) processes per case; AB_MS (250); AB_LM_STEPS (800);
#   AB_OP_OPS (100000) AB_OP_REPS (4); AB_PIN ("taskset -c 2-9");
#   AB_KEEP=DIR keeps the switch and step logs (*.ab, *.steps) in DIR;
#   AB_GO_HALF=1: sightline-stacks switches only from half-way (as in runs
#             AA, AB), else from the start
#   AB_START (on): off = the part is never enabled before the first switch,
#             which comes half-way through the measured steps (the first
#             repetition of the op loop): ab_split.py's AB_FIRST line tells
#             whether switching it off takes its cost away
# Prints each process's line and the pooled one per case ("AB CASE ...").
set -u
B=$(cd "${1:?usage: ab.sh BUILD_DIR}" && pwd)
FLOOR=$B/bench/overhead/libfloor_inject.so
HERE=$(cd "$(dirname "$0")" && pwd)
EXAMPLES=$(cd "$HERE/../../examples/pytorch" && pwd)
SL=$B/tools/sightline/sightline
CASES=${AB_CASES:-lm:subscriber:subscriber lm:subnone:subscriber lm:stackcb:stackcb op:stackcb:stackcb op:subscriber:subscriber}
PROCS=${AB_PROCS:-3}
PIN=${AB_PIN:-taskset -c 2-9}
if [ -n "${AB_KEEP:-}" ]; then  # keep the switch and step logs there
  W=$AB_KEEP; mkdir -p "$W"
else
  W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
fi
fail=0
for c in $CASES; do
  IFS=: read -r wl extra part <<<"$c"
  args=()
  for p in $(seq 1 "$PROCS"); do
    sw=$W/$wl-$extra-$part-$p.ab st=$W/$wl-$extra-$part-$p.steps o=$W/out
    case $wl in
      lm) cmd=(env SIGHTLINE_STEP_LOG="$st" python3 "$EXAMPLES/lm_train.py" --variant eager
               --steps "${AB_LM_STEPS:-800}" --warmup 30) ;;
      cnn) cmd=(env SIGHTLINE_STEP_LOG="$st" python3 "$EXAMPLES/cnn_train.py" --variant fixed
               --steps "${AB_LM_STEPS:-800}" --warmup 30) ;;
      op) cmd=(python3 "$B/bench/overhead/torch_overhead.py" --ops "${AB_OP_OPS:-100000}"
               --reps "${AB_OP_REPS:-4}" --chunk-log "$st" --chunk 1000) ;;
      *) echo "FAIL: unknown workload $wl"; fail=1; continue 2 ;;
    esac
    start=()
    # Subscribing from the A/B thread in a running process (subscriber, off
    # at the start) crashed 3 of 4 processes on the H200 (SIGSEGV, 2026-12-04).
    if [ "${AB_START:-on}" = off ] && [ "$part" = subscriber ]; then
      echo "SKIP: $c with AB_START=off (a first subscribe mid-run crashed the process)"; continue 2
    fi
    [ "${AB_START:-on}" = off ] && start=(SIGHTLINE_FLOOR_AB_START=off SIGHTLINE_FLOOR_AB_GO="$W/go-$p"
                                         SIGHTLINE_AB_GO="$W/go-$p")
    rm -f "$W/go-$p"
    if [ "$part" = sightline-pm ]; then
      # Sampling on from the first context; the switching starts AB_MS
      # later (the poll thread's clock), so every measured step is in a stretch.
      env SIGHTLINE_AB_PM_MS="${AB_MS:-250}" SIGHTLINE_AB_LOG="$sw" \
        $PIN "$SL" profile --gpu-metrics --gpu-metrics-frequency "${AB_PM_FREQ:-1000}" \
        -o "$W/t.sltrace" -- "${cmd[@]}" >"$o" 2>&1
      rm -f "$W"/t*.sltrace
      grep -h 'sightline: A/B\|GPU metrics' "$o" | sed "s/^/  $c $p: /"
    elif [ "$part" = sightline-stacks ] || [ "$part" = sightline-pystacks ]; then
      # Starts with the stacks on. With AB_GO_HALF=1 (runs AA, AB) the go
      # file puts the first switch half-way through the measured steps (after
      # the first repetition); without it the switching starts at once and
      # every measured step is in a stretch (about twice the pairs).
      # --python-backtrace=on: the lm command starts with `env`, which the
      # default (on for a Python interpreter) does not see through.
      go=()
      [ "${AB_GO_HALF:-0}" = 1 ] && go=(SIGHTLINE_AB_GO="$W/go-$p")
      abpart=all; [ "$part" = sightline-pystacks ] && abpart=python
      env SIGHTLINE_AB_STACKS_MS="${AB_MS:-250}" SIGHTLINE_AB_STACKS_PART=$abpart SIGHTLINE_AB_LOG="$sw" "${go[@]}" \
        $PIN "$SL" profile -q --python-backtrace=on -o "$W/t.sltrace" -- "${cmd[@]}" >"$o" 2>&1
      rm -f "$W"/t*.sltrace
      grep -h 'sightline: A/B' "$o" | sed "s/^/  $c $p: /"
    else
      env "${start[@]}" SIGHTLINE_FLOOR_KINDS=same SIGHTLINE_FLOOR_EXTRA=$extra SIGHTLINE_FLOOR_AB=$part \
        SIGHTLINE_FLOOR_AB_MS=${AB_MS:-250} SIGHTLINE_FLOOR_AB_LOG=$sw CUDA_INJECTION64_PATH=$FLOOR \
        $PIN "${cmd[@]}" >"$o" 2>&1
    fi
    if [ ! -s "$sw" ] || [ ! -s "$st" ]; then
      echo "FAIL: $c process $p left no switch or step log"; tail -5 "$o"; fail=1; continue
    fi
    grep -h 'floor subscriber: [0-9]* records\|floor subscriber: [0-9]* periodic\|SIGHTLINE_STEPS\|OVERHEAD' "$o" | sed "s/^/  $c $p: /"
    python3 "$HERE/ab_split.py" "$c#$p" "$sw" "$st"
    args+=("$sw" "$st")
  done
  [ ${#args[@]} -gt 0 ] && python3 "$HERE/ab_split.py" "$c" "${args[@]}"
done
exit $fail
