#!/usr/bin/env bash
# README's test command (and what .ci/run calls): installs what is missing,
# builds everything, and runs
#   1. the trace reader/writer tests under AddressSanitizer + UBSan,
#   2. the collector's threads (16 application threads, buffer pool, writer,
#      signal flush; synthetic CUPTI records) under ThreadSanitizer, and the
#      collector's CPU tests under AddressSanitizer + UBSan (needs the CUDA
#      toolkit's CUPTI headers, not a GPU),
#   3. the libFuzzer targets for a bounded time: the trace reader (with a
#      multi-MiB corpus that reaches resync after damage), then the analyzer
#      and report renderers on mutated real traces (fuzz/analyze_fuzz.cc),
#   4. the whole ctest suite (tests labelled `gpu` report "Skipped" without a GPU),
#   5. clang's thread-safety analysis (-Werror=thread-safety) over the
#      libraries whose locks are annotated (lib/trace/thread_annotations.h):
#      the collector and the injected library (with the CUDA toolkit), the
#      monitor and the trace library; compile only, no tests.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}

bash scripts/setup-deps.sh

CUDA=OFF
if [ -x "${CUDAToolkit_ROOT:-/usr/local/cuda}/bin/nvcc" ]; then CUDA=ON; fi
echo "== sightline tests (CUDA parts: $CUDA, jobs: $JOBS)"

echo "== [1/5] sanitizer build (ASan+UBSan) of the trace library and its tests"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSIGHTLINE_SANITIZE=ON -DSIGHTLINE_WITH_CUDA=OFF -DSIGHTLINE_BUILD_BENCH=OFF >/dev/null
# Every test labelled `trace` (reader, writer, sinks, damage, kill, info CLI).
trace_targets=$(cd build/asan && ctest -N -L trace | sed -n 's/^ *Test *#[0-9]*: *//p' | tr '\n' ' ')
cmake --build build/asan -j"$JOBS" --target sightline sightline_trace_kill_helper $trace_targets
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan -L trace --output-on-failure -j"$JOBS"

if [ "$CUDA" = ON ]; then
  echo "== [2/5] ThreadSanitizer and ASan+UBSan builds of the collector's CPU tests"
  collect_targets="collect_threads_test collect_buffer_pool_test collect_spread_scheduler_test collect_sequence_spread_test collect_signal_flush_test"
  cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIGHTLINE_TSAN=ON \
    -DSIGHTLINE_WITH_CUDA=ON -DSIGHTLINE_BUILD_EXAMPLES=OFF -DSIGHTLINE_BUILD_BENCH=OFF >/dev/null
  cmake --build build/tsan -j"$JOBS" --target $collect_targets
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir build/tsan -L tsan --output-on-failure -j"$JOBS"
  cmake -S . -B build/asan-collect -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSIGHTLINE_SANITIZE=ON \
    -DSIGHTLINE_WITH_CUDA=ON -DSIGHTLINE_BUILD_EXAMPLES=OFF -DSIGHTLINE_BUILD_BENCH=OFF >/dev/null
  cmake --build build/asan-collect -j"$JOBS" --target $collect_targets
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan-collect -L collect_sanitize --output-on-failure -j"$JOBS"
else
  echo "== [2/5] skipped: no CUDA toolkit (the collector needs CUPTI's headers)"
fi

echo "== [3/5] libFuzzer: trace reader, then analyzer, ${FUZZ_SECONDS}s each"
CC=clang CXX=clang++ cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSIGHTLINE_FUZZ=ON -DSIGHTLINE_WITH_CUDA=OFF -DSIGHTLINE_BUILD_TESTS=OFF \
  -DSIGHTLINE_BUILD_BENCH=OFF >/dev/null
bash fuzz/run_fuzz.sh build/fuzz "$FUZZ_SECONDS"

echo "== [4/5] full build and test suite"
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DSIGHTLINE_WITH_CUDA=$CUDA >/dev/null
cmake --build build/release -j"$JOBS"
ctest --test-dir build/release --output-on-failure -j"$JOBS"

echo "== [5/5] clang -Wthread-safety -Werror=thread-safety build of the annotated libraries"
tsa_targets="sightline_trace_writer sightline_trace sightline_monitor"
if [ "$CUDA" = ON ]; then
  tsa_targets="$tsa_targets sightline_collect_core sightline_collect sightline_inject"
fi
CC=clang CXX=clang++ cmake -S . -B build/thread-safety -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DSIGHTLINE_WITH_CUDA=$CUDA -DSIGHTLINE_BUILD_TESTS=OFF -DSIGHTLINE_BUILD_BENCH=OFF \
  -DSIGHTLINE_BUILD_EXAMPLES=OFF -DCMAKE_CXX_FLAGS="-Wthread-safety -Werror=thread-safety" >/dev/null
cmake --build build/thread-safety -j"$JOBS" --target $tsa_targets
