#!/usr/bin/env bash
# `sightline profile` without a GPU: option → variable mapping, injection
# variables, exit-code and signal forwarding, usage errors (exit 2).
set -u
SL=${SIGHTLINE_BIN:?}
fail=0
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fail=1; fi; }

out=$("$SL" profile -q -o /tmp/x-%p --capture-range nvtx:train -t cuda,nvtx --delay 1.5 \
      --duration 3 --capture-range-end stop --metrics basic --buffer-kb 8192 -- env 2>&1)
check "exit 0" "[ $? -eq 0 ]"
for kv in SIGHTLINE_OUTPUT=/tmp/x-%p SIGHTLINE_CAPTURE=nvtx:train SIGHTLINE_TRACE=cuda,nvtx \
          SIGHTLINE_DELAY=1.5 SIGHTLINE_DURATION=3 SIGHTLINE_CAPTURE_END=stop \
          SIGHTLINE_METRICS=basic SIGHTLINE_BUFFER_KB=8192 SIGHTLINE_QUIET=1; do
  check "maps $kv" "grep -qx '$kv' <<<\"\$out\""
done
check "CUDA_INJECTION64_PATH points at the library" \
  "grep -q '^CUDA_INJECTION64_PATH=/.*libsightline_inject.so$' <<<\"\$out\""
check "NVTX_INJECTION64_PATH points at the library" \
  "grep -q '^NVTX_INJECTION64_PATH=/.*libsightline_inject.so$' <<<\"\$out\""
out=$("$SL" profile --output=/tmp/y -- env 2>/dev/null)
check "--output=VALUE form" "grep -qx 'SIGHTLINE_OUTPUT=/tmp/y' <<<\"\$out\""

"$SL" profile -q -- sh -c 'exit 3'; rc=$?
check "exit code forwarded (3)" "[ $rc -eq 3 ]"
"$SL" profile -q -- sh -c 'kill -TERM $$'; rc=$?
check "death by SIGTERM reported as 143" "[ $rc -eq 143 ]"
# (SIGTERM: a background job of a non-interactive shell ignores SIGINT.)
"$SL" profile -q -- sleep 5 & pid=$!
sleep 0.5; kill -TERM $pid; wait $pid; rc=$?
check "SIGTERM sent to profile is forwarded to the child (143)" "[ $rc -eq 143 ]"

# Python stacks: on by default for a Python interpreter (by name, or a #!
# script whose interpreter is one); flags and the environment win.
T=$(mktemp -d)
printf '#!/bin/sh\nexec env\n' > "$T/python3.99"; chmod +x "$T/python3.99"
printf '#!%s\n' "$T/python3.99" > "$T/train"; chmod +x "$T/train"
out=$(PATH="$T:$PATH" "$SL" profile -q -- python3.99 2>&1)
check "python* command: stacks on" "grep -qx 'SIGHTLINE_PYTHON_BACKTRACE=on' <<<\"\$out\""
out=$("$SL" profile -q -- "$T/train" 2>&1)
check "#! script of a python* interpreter: stacks on" \
  "grep -qx 'SIGHTLINE_PYTHON_BACKTRACE=on' <<<\"\$out\""
out=$("$SL" profile -q -- env 2>&1)
check "other command: stacks not set" "! grep -q '^SIGHTLINE_PYTHON_BACKTRACE=' <<<\"\$out\""
out=$(PATH="$T:$PATH" "$SL" profile -q --python-backtrace=off -- python3.99 2>&1)
check "--python-backtrace=off wins" "grep -qx 'SIGHTLINE_PYTHON_BACKTRACE=off' <<<\"\$out\""
out=$("$SL" profile -q --python-backtrace -- env 2>&1)
check "bare --python-backtrace is on" "grep -qx 'SIGHTLINE_PYTHON_BACKTRACE=on' <<<\"\$out\""
err=$("$SL" profile --python-backtrace=maybe -- true 2>&1); rc=$?
check "bad --python-backtrace is a usage error" "[ $rc -eq 2 ] && grep -q maybe <<<\"\$err\""
out=$(PYTHONPATH=/opt/mine "$SL" profile -q --pytorch=shapes -- env 2>&1)
check "--pytorch=shapes sets SIGHTLINE_PYTORCH" "grep -qx 'SIGHTLINE_PYTORCH=shapes' <<<\"\$out\""
check "--pytorch prepends the hook to PYTHONPATH" \
  "grep -q '^PYTHONPATH=/.*share/sightline/python:/opt/mine$' <<<\"\$out\""
err=$("$SL" profile --pytorch=everything -- true 2>&1); rc=$?
check "bad --pytorch is a usage error" "[ $rc -eq 2 ] && grep -q everything <<<\"\$err\""
rm -rf "$T"

err=$("$SL" profile --delay soon -- true 2>&1); rc=$?
check "bad --delay is a usage error" "[ $rc -eq 2 ] && grep -q \"'soon' is not a number\" <<<\"\$err\""
# The CLI checks counts with the collector's parser and range: a skip the
# collector would refuse (and warn about, tracing anyway) is a usage error.
err=$("$SL" profile --capture-skip 200000000 -- true 2>&1); rc=$?
check "--capture-skip over the collector's range is a usage error" \
  "[ $rc -eq 2 ] && grep -q '0..100000000' <<<\"\$err\""
out=$("$SL" profile -q --capture-skip 100000000 -- env 2>&1)
check "--capture-skip at the collector's bound" "grep -qx 'SIGHTLINE_CAPTURE_SKIP=100000000' <<<\"\$out\""
err=$("$SL" profile --capture-range sometimes -- true 2>&1); rc=$?
check "bad --capture-range is a usage error" "[ $rc -eq 2 ] && grep -q cudaProfilerApi <<<\"\$err\""
out=$("$SL" profile -q --metrics full --metrics-range nvtx:train_step -- env 2>&1)
check "maps --metrics-range" "grep -qx 'SIGHTLINE_METRICS_RANGE=nvtx:train_step' <<<\"\$out\""
err=$("$SL" profile --metrics full --metrics-range train_step -- true 2>&1); rc=$?
check "bad --metrics-range is a usage error" "[ $rc -eq 2 ] && grep -q 'is not nvtx:NAME or graph' <<<\"\$err\""
out=$("$SL" profile -q --metrics full --metrics-range graph -- env 2>&1)
check "maps --metrics-range graph" "grep -qx 'SIGHTLINE_METRICS_RANGE=graph' <<<\"\$out\""
err=$("$SL" profile --metrics-range nvtx:train_step -- true 2>&1); rc=$?
check "--metrics-range without --metrics is a usage error" \
  "[ $rc -eq 2 ] && grep -q 'needs --metrics SET' <<<\"\$err\""
out=$("$SL" profile -q --metrics full --metrics-replay sequence --metrics-sequences 3 -- env 2>&1)
check "maps --metrics-sequences" "grep -qx 'SIGHTLINE_METRICS_SEQUENCES=3' <<<\"\$out\""
err=$("$SL" profile --metrics full --metrics-replay sequence --metrics-sequences 9 -- true 2>&1); rc=$?
check "--metrics-sequences over the collector's range is a usage error" \
  "[ $rc -eq 2 ] && grep -q \"'9' is not a count (1..8)\" <<<\"\$err\""
err=$("$SL" profile --metrics full --metrics-sequences 2 -- true 2>&1); rc=$?
check "--metrics-sequences without sequence replay is a usage error" \
  "[ $rc -eq 2 ] && grep -q 'needs --metrics SET --metrics-replay sequence' <<<\"\$err\""
out=$("$SL" profile -q --metrics full --metrics-replay sequence --metrics-replay-top 0 -- env 2>&1)
check "maps --metrics-replay-top" "grep -qx 'SIGHTLINE_METRICS_REPLAY_TOP=0' <<<\"\$out\""
err=$("$SL" profile --metrics full --metrics-replay sequence --metrics-replay-top 65 -- true 2>&1); rc=$?
check "--metrics-replay-top over the collector's range is a usage error" \
  "[ $rc -eq 2 ] && grep -q \"'65' is not a count (0..64)\" <<<\"\$err\""
err=$("$SL" profile --metrics full --metrics-replay-top 2 -- true 2>&1); rc=$?
check "--metrics-replay-top without sequence replay is a usage error" \
  "[ $rc -eq 2 ] && grep -q 'needs --metrics SET --metrics-replay sequence' <<<\"\$err\""
out=$("$SL" profile -q --gpu-metrics -- env 2>&1)
check "maps --gpu-metrics" "grep -qx 'SIGHTLINE_GPU_METRICS=all' <<<\"\$out\""
out=$("$SL" profile -q --gpu-metrics=0,1 --gpu-metrics-frequency 10000 -- env 2>&1)
check "maps --gpu-metrics=LIST and --gpu-metrics-frequency" \
  "grep -qx 'SIGHTLINE_GPU_METRICS=0,1' <<<\"\$out\" && grep -qx 'SIGHTLINE_GPU_METRICS_FREQUENCY=10000' <<<\"\$out\""
out=$("$SL" profile -q --gpu-metrics-devices 2 -- env 2>&1)
check "maps --gpu-metrics-devices" "grep -qx 'SIGHTLINE_GPU_METRICS=2' <<<\"\$out\""
err=$("$SL" profile --gpu-metrics=fast -- true 2>&1); rc=$?
check "bad --gpu-metrics is a usage error" "[ $rc -eq 2 ] && grep -q 'fast' <<<\"\$err\""
err=$("$SL" profile --gpu-metrics --gpu-metrics-frequency 50 -- true 2>&1); rc=$?
check "--gpu-metrics-frequency out of range is a usage error" \
  "[ $rc -eq 2 ] && grep -q '100..100000' <<<\"\$err\""
err=$("$SL" profile --gpu-metrics --metrics occupancy -- true 2>&1); rc=$?
check "--gpu-metrics with --metrics is a usage error" \
  "[ $rc -eq 2 ] && grep -q 'cannot be combined with --metrics' <<<\"\$err\""
err=$("$SL" profile --frobnicate -- true 2>&1); rc=$?
check "unknown option is a usage error" "[ $rc -eq 2 ] && grep -q frobnicate <<<\"\$err\""
err=$("$SL" profile 2>&1); rc=$?
check "missing command is a usage error" "[ $rc -eq 2 ]"
err=$("$SL" profile -- /nonexistent/program 2>&1); rc=$?
check "missing program is a usage error naming it" "[ $rc -eq 2 ] && grep -q /nonexistent/program <<<\"\$err\""
err=$(SIGHTLINE_INJECT_LIB=/nonexistent.so "$SL" profile -- true 2>&1); rc=$?
check "missing injection library is a usage error" "[ $rc -eq 2 ] && grep -q SIGHTLINE_INJECT_LIB <<<\"\$err\""
exit $fail
