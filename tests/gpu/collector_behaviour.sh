#!/usr/bin/env bash
# Collector behaviour on a real GPU: capture ranges, signals, SIGKILL,
# LD_PRELOAD entry, exit-code forwarding, teardown after --duration.
source "$(dirname "$0")/lib.sh"

note "cudaProfilerApi capture range: 2 windows per epoch, only their work"
"$SL" profile -o "$WORK/cap_profiler.sltrace" --capture-range cudaProfilerApi -- \
  "$EX/training_loop" --profiler-range >"$WORK/cap_profiler.out" 2>"$WORK/cap_profiler.err"
expect_ok "$CHECK" "$WORK/cap_profiler.sltrace" --stdout "$WORK/cap_profiler.out"

note "nvtx:epoch capture range: one window per epoch"
"$SL" profile -o "$WORK/cap_nvtx.sltrace" --capture-range nvtx:epoch -- \
  "$EX/training_loop" --epochs=3 --steps=10 >"$WORK/cap_nvtx.out" 2>"$WORK/cap_nvtx.err"
expect_ok "$CHECK" "$WORK/cap_nvtx.sltrace" --windows 3 --allow-loss
k=$(grep -o 'kernels [0-9]*' <("$CHECK" "$WORK/cap_nvtx.sltrace") | awk '{print $2}')
[ "$k" = 90 ] || { echo "FAIL: nvtx capture kernels $k != 90"; fail=1; }

note "--duration 1: one window, recording and API callbacks off afterwards, same result"
# (SIGHTLINE_DETACH=1 would also cuptiFinalize after the window: opt-in, see
# tests/gpu/teardown_stress.sh.)
want=$("$EX/fragmented_kernels" --steps=20000 | grep -o 'x\[0\]=[^,]*')
"$SL" profile -o "$WORK/cap_duration.sltrace" --duration 1 -- \
  "$EX/fragmented_kernels" --steps=20000 >"$WORK/cap_duration.out" 2>"$WORK/cap_duration.err"
rc=$?
cat "$WORK/cap_duration.err" | tail -5
[ $rc -eq 0 ] || { echo "FAIL: duration run exited $rc"; fail=1; }
got=$(grep -o 'x\[0\]=[^,]*' "$WORK/cap_duration.out")
[ -n "$want" ] && [ "$got" = "$want" ] || { echo "FAIL: duration run printed '$got', unprofiled '$want'"; fail=1; }
grep -q 'API callbacks are off.*CUPTI subscriber removed' "$WORK/cap_duration.err" ||
  { echo "FAIL: no quiesce (callbacks off, subscriber removed) after the last window"; fail=1; }
expect_ok "$CHECK" "$WORK/cap_duration.sltrace" --windows 1 --allow-loss

note "exit code is forwarded"
"$SL" profile -q -o "$WORK/exitcode.sltrace" -- bash -c 'exit 7'
[ $? -eq 7 ] || { echo "FAIL: exit code not forwarded"; fail=1; }

note "SIGTERM: the trace is flushed and finished, the process dies of SIGTERM"
"$SL" profile -o "$WORK/sigterm.sltrace" -- "$EX/naive_matmul" --reps=100000 --n=1024 \
  >"$WORK/sigterm.out" 2>"$WORK/sigterm.err" &
cli=$!
sleep 4
child=$(pgrep -P $cli | head -1)
kill -TERM "$child"
wait $cli
rc=$?
echo "profile exit status after SIGTERM: $rc"
[ $rc -eq 143 ] || { echo "FAIL: expected 143"; fail=1; }
expect_ok "$CHECK" "$WORK/sigterm.sltrace" --allow-loss

note "SIGKILL: the chunks written so far are readable"
"$SL" profile -o "$WORK/sigkill.sltrace" -- "$EX/naive_matmul" --reps=100000 --n=1024 \
  >"$WORK/sigkill.out" 2>"$WORK/sigkill.err" &
cli=$!
sleep 4
child=$(pgrep -P $cli | head -1)
kill -KILL "$child"
wait $cli
echo "profile exit status after SIGKILL: $?"
expect_ok "$CHECK" "$WORK/sigkill.sltrace" --allow-incomplete --allow-loss

note "LD_PRELOAD entry point"
( cd "$WORK" && LD_PRELOAD="$B/injection/libsightline_inject.so" SIGHTLINE_OUTPUT="$WORK/preload.sltrace" \
  "$EX/serialized_streams" >"$WORK/preload.out" 2>"$WORK/preload.err" )
cat "$WORK/preload.err"
expect_ok "$CHECK" "$WORK/preload.sltrace" --stdout "$WORK/preload.out"

exit $fail
