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

err=$("$SL" profile --delay soon -- true 2>&1); rc=$?
check "bad --delay is a usage error" "[ $rc -eq 2 ] && grep -q \"'soon' is not a number\" <<<\"\$err\""
err=$("$SL" profile --capture-range sometimes -- true 2>&1); rc=$?
check "bad --capture-range is a usage error" "[ $rc -eq 2 ] && grep -q cudaProfilerApi <<<\"\$err\""
err=$("$SL" profile --frobnicate -- true 2>&1); rc=$?
check "unknown option is a usage error" "[ $rc -eq 2 ] && grep -q frobnicate <<<\"\$err\""
err=$("$SL" profile 2>&1); rc=$?
check "missing command is a usage error" "[ $rc -eq 2 ]"
err=$("$SL" profile -- /nonexistent/program 2>&1); rc=$?
check "missing program is a usage error naming it" "[ $rc -eq 2 ] && grep -q /nonexistent/program <<<\"\$err\""
err=$(SIGHTLINE_INJECT_LIB=/nonexistent.so "$SL" profile -- true 2>&1); rc=$?
check "missing injection library is a usage error" "[ $rc -eq 2 ] && grep -q SIGHTLINE_INJECT_LIB <<<\"\$err\""
exit $fail
