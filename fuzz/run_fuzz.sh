#!/usr/bin/env bash
# Runs the trace reader fuzzer for a bounded time (CI calls it with ~60 s).
#
#   fuzz/run_fuzz.sh BUILD_DIR SECONDS
#
# BUILD_DIR is a CMake build configured with clang and -DSIGHTLINE_FUZZ=ON, e.g.
#   cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
#         -DSIGHTLINE_FUZZ=ON -DSIGHTLINE_WITH_CUDA=OFF -DSIGHTLINE_BUILD_TESTS=OFF \
#         -DSIGHTLINE_BUILD_BENCH=OFF
# The script builds the two fuzz targets, generates the seed corpus from small
# valid traces, runs libFuzzer and exits non-zero on any crash, sanitizer
# report, timeout or out-of-memory. Crash inputs are left in BUILD_DIR/fuzz/artifacts;
# once fixed, copy one into fuzz/regressions/ (it is run first every time).
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
seconds=$2
cmake --build "$build_dir" --target trace_reader_fuzz trace_fuzz_seeds -- -j"${FUZZ_BUILD_JOBS:-2}"

work="$build_dir/fuzz"
seeds="$work/seeds"
corpus="$work/corpus"
artifacts="$work/artifacts"
large_seeds="$work/large-seeds"
large_corpus="$work/large-corpus"
mkdir -p "$seeds" "$corpus" "$artifacts" "$large_seeds" "$large_corpus"
"$build_dir/fuzz/trace_fuzz_seeds" "$seeds" "$large_seeds"

export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
# Inputs that once failed (fuzz/regressions, one file each, named for the
# bug): each is run once before fuzzing, so a fixed bug stays fixed.
regressions=$(cd "$(dirname "$0")" && pwd)/regressions
shopt -s nullglob
regression_inputs=("$regressions"/*)
shopt -u nullglob
if [[ ${#regression_inputs[@]} -gt 0 ]]; then
  if ! "$build_dir/fuzz/trace_reader_fuzz" "${regression_inputs[@]}" >"$work/regressions.log" 2>&1; then
    tail -n 40 "$work/regressions.log" >&2
    echo "run_fuzz.sh: a regression input fails again (fuzz/regressions)" >&2
    exit 1
  fi
  echo "run_fuzz.sh: ${#regression_inputs[@]} regression input(s) pass"
fi
# -rss_limit_mb: the reader must never allocate more than the input justifies.
"$build_dir/fuzz/trace_reader_fuzz" "$corpus" "$seeds" \
  -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=1024 \
  -malloc_limit_mb=512 -artifact_prefix="$artifacts/" -print_final_stats=1 2>&1 |
  tail -n 40
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]]; then
  echo "run_fuzz.sh: fuzzer failed (exit $status); reproducers in $artifacts" >&2
  exit 1
fi
# Multi-MiB inputs (resync after damage, fake frame headers): a quarter of
# the time again, with inputs up to 8 MiB.
large_seconds=$(( (seconds + 3) / 4 ))
"$build_dir/fuzz/trace_reader_fuzz" "$large_corpus" "$large_seeds" \
  -max_total_time="$large_seconds" -max_len=8388608 -timeout=30 -rss_limit_mb=2048 \
  -malloc_limit_mb=1024 -artifact_prefix="$artifacts/" -print_final_stats=1 2>&1 |
  tail -n 20
status=${PIPESTATUS[0]}
if [[ $status -ne 0 ]]; then
  echo "run_fuzz.sh: fuzzer failed on large inputs (exit $status); reproducers in $artifacts" >&2
  exit 1
fi
echo "run_fuzz.sh: no failures in ${seconds}s + ${large_seconds}s (multi-MiB inputs)"
