#!/usr/bin/env bash
# README's test command (and what .ci/run calls): installs what is missing,
# builds everything, and runs
#   1. the trace reader/writer tests under AddressSanitizer + UBSan,
#   2. the libFuzzer target of the trace reader for a bounded time,
#   3. the whole ctest suite (tests labelled `gpu` report "Skipped" without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}

bash scripts/setup-deps.sh

CUDA=OFF
if [ -x "${CUDAToolkit_ROOT:-/usr/local/cuda}/bin/nvcc" ]; then CUDA=ON; fi
echo "== sightline tests (CUDA parts: $CUDA, jobs: $JOBS)"

echo "== [1/3] sanitizer build (ASan+UBSan) of the trace library and its tests"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSIGHTLINE_SANITIZE=ON -DSIGHTLINE_WITH_CUDA=OFF -DSIGHTLINE_BUILD_BENCH=OFF >/dev/null
# Every test labelled `trace` (reader, writer, sinks, damage, kill, info CLI).
trace_targets=$(cd build/asan && ctest -N -L trace | sed -n 's/^ *Test *#[0-9]*: *//p' | tr '\n' ' ')
cmake --build build/asan -j"$JOBS" --target sightline sightline_trace_kill_helper $trace_targets
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan -L trace --output-on-failure -j"$JOBS"

echo "== [2/3] libFuzzer: trace reader, ${FUZZ_SECONDS}s"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSIGHTLINE_FUZZ=ON -DSIGHTLINE_WITH_CUDA=OFF -DSIGHTLINE_BUILD_TESTS=OFF \
  -DSIGHTLINE_BUILD_BENCH=OFF >/dev/null
bash fuzz/run_fuzz.sh build/fuzz "$FUZZ_SECONDS"

echo "== [3/3] full build and test suite"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIGHTLINE_WITH_CUDA=$CUDA >/dev/null
cmake --build build/release -j"$JOBS"
ctest --test-dir build/release --output-on-failure -j"$JOBS"
